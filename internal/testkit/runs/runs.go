// Package runs holds the results runs the verdict, report and export tests share: a run built
// from headline samples, a bonnie run with every field bonnie++'s CSV has, and the frozen real
// run the report's golden files show. It is for tests only; it lives outside a _test.go file
// because tests of several packages share it.
package runs

import (
	"path/filepath"
	"runtime"
	"sort"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

// Of builds a run from samples of headline values by variant and test, in seconds.
func Of(data map[string]map[string][]float64) *results.Run {
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

// Frozen is a real run (512 MiB loop device, 4 repetitions, the default variants), frozen so
// that reports of it are reproducible: the report's golden files show it, the verdicts are drawn
// from it, the exports translate it.
func Frozen(t testing.TB) *results.Run {
	t.Helper()
	r, err := results.Load(FrozenPath())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// FrozenPath is the frozen run's file.
func FrozenPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "run.json")
}

// Bonnie is one bonnie run of every bonnie++ test (one too fast to time), with the sizes its
// CSV records.
func Bonnie() *results.Run {
	params := map[string]float64{"file_bytes": 2 << 30, "chunk_bytes": 8192, "seeks": 8192, "seekers": 3, "files": 102400, "dirs": 100, "seed": 1}
	ms := []struct {
		test     string
		value    float64
		cpu, lat float64
		tooFast  bool
	}{
		{"bonnie_write", 20480.7, 12.9, 0.35, false},
		{"bonnie_rewrite", 10240, 8, 1.5, false},
		{"bonnie_read", 30000, 5, 0.02, false},
		{"bonnie_seeks", 345.67, 3, 120.5, false},
		{"bonnie_seq_create", 0, 0, 0.0004, true},
		{"bonnie_seq_stat", 50000, 99, 0.00002, false},
		{"bonnie_seq_delete", 1234, 40, 0.5, false},
		{"bonnie_rand_create", 1500, 30, 0.25, false},
		{"bonnie_rand_stat", 40000, 98, 0.0001, false},
		{"bonnie_rand_delete", 1100, 35, 0.6, false},
	}
	r := &results.Run{Schema: results.Schema, Variants: []results.Variant{{Name: "ext4/noatime,dirsync", FS: "ext4", Status: results.OK}}}
	for _, m := range ms {
		x := results.Measurement{Variant: "ext4/noatime,dirsync", Test: m.test, Rep: 1, Status: results.OK, Unit: "files/s", Extra: map[string]float64{"cpu_pct": m.cpu, "latency_max_s": m.lat}}
		for k, v := range params {
			x.Extra[k] = v
		}
		if m.tooFast {
			x.Status, x.Note = results.NA, "too fast to measure: took 0.21 s"
		} else {
			x.Value = results.Float(m.value)
		}
		r.Measurements = append(r.Measurements, x)
	}
	r.Measurements = append(r.Measurements, results.Measurement{Variant: "ext4/noatime,dirsync", Test: "mount", Rep: 1, Status: results.OK, Value: results.Float(0.01), Unit: "s"})
	return r
}
