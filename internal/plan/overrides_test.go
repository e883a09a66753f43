package plan

import (
	"reflect"
	"testing"
)

func TestApplySuiteDefaults(t *testing.T) {
	c := Default()
	c.Suite = Suites{FlashSuite}
	c.ApplySuiteDefaults()
	if !reflect.DeepEqual(c.Variants, FlashVariants()) {
		t.Errorf("flash suite with the default variants: got %v, want the flash variants", c.Variants)
	}
	c = Default()
	c.Suite = Suites{FlashSuite}
	c.Variants = c.Variants[:1]
	chosen := c.Variants
	c.ApplySuiteDefaults()
	if !reflect.DeepEqual(c.Variants, chosen) {
		t.Errorf("flash suite with chosen variants: got %v, want them left alone", c.Variants)
	}
}

func TestSelectVariants(t *testing.T) {
	c := Config{Variants: []Variant{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	c.SelectVariants([]string{"c", "a"})
	var got []string
	for _, v := range c.Variants {
		got = append(got, v.Name)
	}
	if want := []string{"c", "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SelectVariants(c, a) kept %v, want %v in that order", got, want)
	}
}
