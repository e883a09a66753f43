package suite

import (
	"slices"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/suites"
)

// TestEngineSuites checks the engine's own suites as the registry holds them: bootlin runs the
// catalog's bootlin tests after the setup tests (the report charts them in that order), and
// free-electrons the catalog's free-electrons tests on raw flash; each test has a catalog
// entry with a doc line, since the results, the report and the exporters know a test only from
// the catalog. (A figure recorded in another unit than the catalog's is refused when recorded:
// recorder.put.)
func TestEngineSuites(t *testing.T) {
	for name, want := range map[string][]string{
		catalog.SuiteBootlin:       append(catalog.Setup(), catalog.Bootlin()...),
		catalog.SuiteFreeElectrons: catalog.FreeElectrons(),
	} {
		s, ok := suites.Lookup(name)
		if !ok {
			t.Fatalf("suite %s is not registered", name)
		}
		if got := s.Order(); !slices.Equal(got, want) {
			t.Errorf("suite %s runs %v, the catalog says %v", name, got, want)
		}
		for _, test := range s.Order() {
			if c, ok := catalog.Lookup(test); !ok || c.DocIn(name) == "" {
				t.Errorf("test %s of suite %s has no catalog entry or doc line", test, name)
			}
		}
	}
}
