package report

import (
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// TestBootTime: a repetition whose module an earlier one left loaded is no cold boot and is left
// out; built in or loaded before the run counts the load as 0.
func TestBootTime(t *testing.T) {
	mount := results.Measurement{Test: catalog.Mount, Value: results.Float(0.05)}
	for _, tc := range []struct {
		name string
		ml   *results.Measurement
		want float64
		ok   bool
	}{
		{"loaded", &results.Measurement{Test: catalog.ModuleLoad, Value: results.Float(1.0)}, 1050, true},
		{"built in", &results.Measurement{Test: catalog.ModuleLoad, Status: results.NA, Note: "built-in"}, 50, true},
		{"left loaded", &results.Measurement{Test: catalog.ModuleLoad, Status: results.NA, Extra: map[string]float64{"left_loaded": 1}}, 0, false},
		{"not recorded", nil, 50, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			by := map[string]results.Measurement{catalog.Mount: mount}
			if tc.ml != nil {
				by[catalog.ModuleLoad] = *tc.ml
			}
			got, ok := bootTime(by)
			if ok != tc.ok || (ok && (got < tc.want-1e-9 || got > tc.want+1e-9)) {
				t.Errorf("bootTime = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
