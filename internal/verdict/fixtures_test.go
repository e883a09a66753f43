package verdict

import (
	"path/filepath"
	"sort"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

// runOf builds a run from samples of headline values by variant and test, in seconds.
func runOf(data map[string]map[string][]float64) *results.Run {
	r := &results.Run{Schema: results.Schema, Status: results.RunComplete}
	var names []string
	for n := range data {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.Variants = append(r.Variants, results.Variant{Name: n, FS: n, Status: results.OK})
		var tests []string
		for t := range data[n] {
			tests = append(tests, t)
		}
		sort.Strings(tests)
		for _, t := range tests {
			for i, v := range data[n][t] {
				r.Measurements = append(r.Measurements, results.Measurement{
					Variant: n, Test: t, Rep: i + 1, Status: results.OK, Value: results.Float(v), Unit: "s", WallSeconds: v,
				})
			}
		}
	}
	return r
}

// loadRun is the report's frozen real run (512 MiB loop device, 4 repetitions, the default
// variants): the verdicts are drawn from the same file the report's golden files show.
func loadRun(t *testing.T) *results.Run {
	t.Helper()
	r, err := results.Load(filepath.Join("..", "report", "testdata", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
