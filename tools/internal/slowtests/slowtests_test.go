package slowtests

import (
	"path/filepath"
	"reflect"
	"testing"
)

// A module in testdata: slow tests called directly, through a helper chain, in a subtest and
// under an import alias are found; a method named Need of another type and a package without
// slow tests are not.
func TestFind(t *testing.T) {
	got, err := Find(filepath.Join("testdata", "mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Package{{Dir: "./a", Tests: []string{"TestAliased", "TestDirect", "TestReducedUnlessSlow", "TestSubtest", "TestThroughHelper"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Find = %+v, want %+v", got, want)
	}
	if p := Pattern(got); p != "^(TestAliased|TestDirect|TestReducedUnlessSlow|TestSubtest|TestThroughHelper)$" {
		t.Errorf("Pattern = %q", p)
	}
}
