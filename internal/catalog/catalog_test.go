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
				{"a suite", len(tc.Suites) > 0},
			}
			for _, c := range checks {
				if !c.ok {
					t.Errorf("%s has no %s: %+v", tc.Name, c.what, tc)
				}
			}
			for s, doc := range tc.SuiteDoc {
				if !slices.Contains(tc.Suites, s) || doc == "" {
					t.Errorf("%s has a doc line for suite %q, which does not run it, or an empty one", tc.Name, s)
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

// TestSuites checks that the suites name only declared tests, each once, and that every test
// knows the suites that run it.
func TestSuites(t *testing.T) {
	names := map[string]bool{}
	for _, s := range Suites() {
		if s.Name == "" || s.Title == "" || len(s.Tests) == 0 || names[s.Name] {
			t.Errorf("suite %+v: no name, title or tests, or declared twice", s)
		}
		names[s.Name] = true
		order := s.Order()
		for i, name := range order {
			tc, ok := Lookup(name)
			if !ok {
				t.Errorf("suite %s runs %s, which the catalog does not declare", s.Name, name)
				continue
			}
			if slices.Index(order, name) != i {
				t.Errorf("suite %s runs %s twice", s.Name, name)
			}
			if !slices.Contains(tc.Suites, s.Name) {
				t.Errorf("%s does not know that suite %s runs it (suites %v)", name, s.Name, tc.Suites)
			}
		}
		if got, ok := SuiteNamed(s.Name); !ok || got.Name != s.Name {
			t.Errorf("SuiteNamed(%q) = %v, %v", s.Name, got.Name, ok)
		}
	}
	for _, tc := range Tests() {
		for _, s := range tc.Suites {
			if !slices.Contains(MustSuite(s).Order(), tc.Name) {
				t.Errorf("%s says suite %s runs it, which it does not", tc.Name, s)
			}
		}
	}
	// A block suite begins with the setup tests; the raw-flash suite prepares its own.
	if got := MustSuite(SuiteBonnie).Order()[:len(Setup())]; !slices.Equal(got, Setup()) {
		t.Errorf("bonnie begins with %v, want the setup tests %v", got, Setup())
	}
	if got := MustSuite(SuiteFreeElectrons).Order(); got[0] != InitTime {
		t.Errorf("free-electrons begins with %s, want init_time", got[0])
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

// TestBonnieFields checks that the bonnie++ CSV fields belong to the bonnie suite's tests only,
// each field to one test.
func TestBonnieFields(t *testing.T) {
	bonnie := MustSuite(SuiteBonnie)
	fields := map[string]string{}
	for _, tc := range Tests() {
		if bonnie.Has(tc.Name) != (tc.BonnieField != "") {
			t.Errorf("%s: bonnie++ CSV field %q, in the bonnie suite: %v", tc.Name, tc.BonnieField, bonnie.Has(tc.Name))
		}
		if tc.BonnieField == "" {
			continue
		}
		if other, ok := fields[tc.BonnieField]; ok {
			t.Errorf("%s and %s share the bonnie++ CSV field %s", other, tc.Name, tc.BonnieField)
		}
		fields[tc.BonnieField] = tc.Name
	}
}

// TestAppClasses checks that each class has a minimum for exactly the randio tests, and that
// a higher class asks at least as much.
func TestAppClasses(t *testing.T) {
	randio := MustSuite(SuiteRandIO)
	classes := AppClasses()
	for i, c := range classes {
		if len(c.Min) != len(randio.Tests) {
			t.Errorf("%s has minimums for %d tests, want the %d randio tests", c.Name, len(c.Min), len(randio.Tests))
		}
		for _, test := range randio.Tests {
			v, ok := c.Min[test]
			if !ok || v <= 0 {
				t.Errorf("%s has no minimum for %s", c.Name, test)
			}
			if i > 0 && v < classes[i-1].Min[test] {
				t.Errorf("%s asks less of %s than %s", c.Name, test, classes[i-1].Name)
			}
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
