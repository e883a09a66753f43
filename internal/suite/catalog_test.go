package suite

import (
	"slices"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
)

// TestCatalog checks that the catalog describes the tests as this package runs them: the
// results, the report and the exporters know a test only from the catalog, so a test added
// here without an entry there would be shown wrongly or not at all. (A figure recorded in
// another unit than the catalog's is refused when recorded: recorder.put.)
func TestCatalog(t *testing.T) {
	for _, name := range SuiteNames() {
		t.Run(name, func(t *testing.T) {
			cs, ok := catalog.SuiteNamed(name)
			if !ok {
				t.Fatalf("suite %s has no catalog entry", name)
			}
			var order []string
			for _, test := range Suites[name] {
				order = append(order, test.Name)
				c, ok := catalog.Lookup(test.Name)
				if !ok {
					t.Errorf("test %s of suite %s has no catalog entry", test.Name, name)
					continue
				}
				if !slices.Contains(c.Suites, name) {
					t.Errorf("test %s runs in suite %s, the catalog says in %v", test.Name, name, c.Suites)
				}
				if c.DocIn(name) == "" {
					t.Errorf("test %s in suite %s has no doc line in the catalog", test.Name, name)
				}
			}
			// The report charts the tests in the order they run, from the catalog's order.
			if want := cs.Order(); !slices.Equal(order, want) {
				t.Errorf("suite %s runs %v, the catalog says %v", name, order, want)
			}
		})
	}
	for _, cs := range catalog.Suites() {
		if _, ok := Suites[cs.Name]; !ok {
			t.Errorf("the catalog has suite %s, which this package does not run", cs.Name)
		}
	}
}

// TestCatalogAppClasses checks that the randio suite's class verdicts (in each measurement's
// note) and the report's (from the catalog) use the same minimums.
func TestCatalogAppClasses(t *testing.T) {
	cat := catalog.AppClasses()
	if len(cat) != len(AppClasses) {
		t.Fatalf("%d application classes here, %d in the catalog", len(AppClasses), len(cat))
	}
	for i, c := range AppClasses {
		if c.Name != cat[i].Name {
			t.Errorf("class %d is %s here, %s in the catalog", i, c.Name, cat[i].Name)
		}
		for _, test := range catalog.MustSuite(catalog.SuiteRandIO).Tests {
			if got, want := ClassMinimum(c, test), cat[i].Min[test]; got != want {
				t.Errorf("%s needs %g for %s here, %g in the catalog", c.Name, got, test, want)
			}
		}
	}
}
