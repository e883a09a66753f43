package plan

import (
	"reflect"
	"testing"
)

func TestSetFault(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mergeLoss bool
		wantErr   bool
	}{
		{"", false, false},
		{"merge-loss", true, false},
		{"merge-los", false, true},
	} {
		c := Default()
		err := c.SetFault(tc.name)
		if (err != nil) != tc.wantErr || c.Params.PowerCut.MergeLoss != tc.mergeLoss {
			t.Errorf("SetFault(%q): err %v, MergeLoss %v; want error %v, MergeLoss %v", tc.name, err, c.Params.PowerCut.MergeLoss, tc.wantErr, tc.mergeLoss)
		}
	}
}

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
