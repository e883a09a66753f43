package catalog

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var units = []string{Seconds, Bytes, KiBps, SeeksPerSec, FilesPerSec, MBps, IOPS, Percent}

// TestEntries checks that every test is declared once and completely.
func TestEntries(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range Tests() {
		t.Run(tc.Name, func(t *testing.T) {
			if tc.Name == "" {
				t.Fatal("a test has no name")
			}
			if seen[tc.Name] {
				t.Errorf("%s is declared twice", tc.Name)
			}
			seen[tc.Name] = true
			checks := []struct {
				what string
				ok   bool
			}{
				{"a known unit", slices.Contains(units, tc.Unit)},
				{"a direction", tc.Better == LowerIsBetter || tc.Better == HigherIsBetter || tc.Better == NotRated},
				{"a quantity", tc.Quantity == Time || tc.Quantity == Rate || tc.Quantity == Amount},
				{"a title", tc.Title != ""},
				{"a doc line", tc.Doc != ""},
			}
			for _, c := range checks {
				if !c.ok {
					t.Errorf("%s has no %s: %+v", tc.Name, c.what, tc)
				}
			}
			for s, doc := range tc.SuiteDoc {
				if doc == "" {
					t.Errorf("%s has an empty doc line for suite %q", tc.Name, s)
				}
			}
			if got, ok := Lookup(tc.Name); !ok || got.Name != tc.Name {
				t.Errorf("Lookup(%q) = %v, %v", tc.Name, got.Name, ok)
			}
		})
	}
	if _, ok := Lookup("no_such_test"); ok {
		t.Error("Lookup found a test that does not exist")
	}
}

// TestFigures checks that every figure the report shows says where it comes from and how to
// read it, and that no two figures share a key (the HTML page's ids).
func TestFigures(t *testing.T) {
	keys := map[string]string{}
	for _, tc := range Tests() {
		f := tc.Figure
		if f == nil {
			continue
		}
		if other, ok := keys[f.Key]; ok {
			t.Errorf("%s and %s share the figure key %q", other, tc.Name, f.Key)
		}
		keys[f.Key] = tc.Name
		checks := []struct {
			what string
			ok   bool
		}{
			{"a key", f.Key != ""},
			{"a title", f.Title != ""},
			{"a column header", f.Short != ""},
			{"a unit", f.Unit != ""},
			{"a direction", f.Better == LowerIsBetter || f.Better == HigherIsBetter || f.Better == NotRated},
			{"a quantity", f.Quantity == Time || f.Quantity == Rate || f.Quantity == Amount},
			{"a source", f.From == FromValue || f.From == FromThroughput || f.From == FromExtra},
			{"a scale", f.From == FromThroughput || f.Scale != 0},
			{"an extra figure to read", f.From != FromExtra || f.Extra != ""},
			// A throughput is a rate, higher is better, whatever the headline figure is.
			{"the direction and quantity of a throughput", f.From != FromThroughput || f.Better == HigherIsBetter && f.Quantity == Rate && f.Unit == MBps},
			// A scaled headline figure keeps its kind and direction.
			{"the direction and quantity of its test", f.From != FromValue || f.Better == tc.Better && f.Quantity == tc.Quantity},
		}
		for _, c := range checks {
			if !c.ok {
				t.Errorf("%s's figure has no %s: %+v", tc.Name, c.what, *f)
			}
		}
	}
}

// TestAdd checks that a suite's entries join the catalog, that the same entry may come twice
// (a test two suites share) and that an incomplete or conflicting one is refused.
func TestAdd(t *testing.T) {
	e := Test{Name: "catalog_test_rate", Unit: FilesPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "a rate", Doc: "a test of the catalog"}
	if err := Add(e); err != nil {
		t.Fatal(err)
	}
	if got, ok := Lookup(e.Name); !ok || got.Unit != FilesPerSec {
		t.Errorf("Lookup after Add = %+v, %v", got, ok)
	}
	if err := Add(e); err != nil {
		t.Errorf("the same entry again: %v", err)
	}
	other := e
	other.Unit = IOPS
	if err := Add(other); err == nil {
		t.Error("a conflicting entry was accepted")
	}
	if err := Add(Test{Name: "catalog_test_bare"}); err == nil {
		t.Error("an entry without a unit was accepted")
	}
}

func TestDocIn(t *testing.T) {
	tests := []struct {
		test, suite, want string
	}{
		{UsedSpace, SuiteBootlin, Get(UsedSpace).Doc},
		{UsedSpace, SuiteFreeElectrons, "used bytes as df shows (statfs) with the dataset stored; logical_bytes beside it"},
		{MountMem, SuiteFreeElectrons, Get(MountMem).Doc},
	}
	for _, tc := range tests {
		if got := Get(tc.test).DocIn(tc.suite); got != tc.want {
			t.Errorf("%s in %s: doc %q, want %q", tc.test, tc.suite, got, tc.want)
		}
	}
}

func TestDirectionString(t *testing.T) {
	tests := []struct {
		d    Direction
		want string
	}{
		{LowerIsBetter, "lower is better"},
		{HigherIsBetter, "higher is better"},
		{NotRated, "not rated"},
		{0, "no direction"},
	}
	for _, tc := range tests {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("Direction(%d).String() = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestMachineBound(t *testing.T) {
	tests := []struct {
		q    Quantity
		want bool
	}{{Time, true}, {Rate, true}, {Amount, false}, {0, false}}
	for _, tc := range tests {
		if got := tc.q.MachineBound(); got != tc.want {
			t.Errorf("Quantity(%d).MachineBound() = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// TestLeaf keeps the catalog a leaf: every package of fsbench may import it, so it may import
// none of them.
func TestLeaf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("listing the package's files: %v", err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(path, "github.com/fsbench/fsbench/") {
				t.Errorf("%s imports %s: the catalog must not import any package of fsbench", name, path)
			}
		}
	}
}
