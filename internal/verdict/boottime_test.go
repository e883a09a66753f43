package verdict

import (
	"strings"
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

// TestBootTimeLeftLoadedNote: where the kernel kept a module loaded, the boot/mount verdict
// says whose boot time counts fewer repetitions (or none), and the figure uses only the
// Repetitions that loaded the module; a run where every repetition loaded it says nothing.
func TestBootTimeLeftLoadedNote(t *testing.T) {
	const reps = 5
	build := func(leftFrom map[string]int) *results.Run {
		r := runOf(map[string]map[string][]float64{
			"ext4":  {catalog.Mount: {0.05, 0.05, 0.05, 0.05, 0.05}},
			"btrfs": {catalog.Mount: {0.03, 0.03, 0.03, 0.03, 0.03}},
			"xfs":   {catalog.Mount: {0.04, 0.04, 0.04, 0.04, 0.04}},
		})
		for _, v := range []string{"btrfs", "ext4", "xfs"} {
			for rep := 1; rep <= reps; rep++ {
				m := results.Measurement{Variant: v, Test: catalog.ModuleLoad, Rep: rep, Status: results.OK, Value: results.Float(1.0), Unit: "s"}
				if from, ok := leftFrom[v]; ok && rep >= from {
					m = results.Measurement{Variant: v, Test: catalog.ModuleLoad, Rep: rep, Status: results.NA,
						Note: "left loaded by an earlier repetition (the kernel would not unload it)", Extra: map[string]float64{"left_loaded": 1}}
				}
				r.Measurements = append(r.Measurements, m)
			}
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		leftFrom map[string]int // variant → first repetition that found its module left loaded
		want     []string       // in the note
		samples  map[string]int // boot samples per variant
	}{
		{"every repetition loaded it", nil, nil, map[string]int{"btrfs": reps, "ext4": reps, "xfs": reps}},
		{"btrfs kept after the first, xfs from the start", map[string]int{"btrfs": 2, "xfs": 1},
			[]string{"boot time counts only repetitions that loaded it", "btrfs from the 1 that loaded its module, without the 4 that found it left loaded",
				"xfs has none: its module stayed loaded in all 5"},
			map[string]int{"btrfs": 1, "ext4": reps, "xfs": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := build(tc.leftFrom)
			v := Verdicts(r, 0)[0]
			if v.Priority != "boot/mount time" {
				t.Fatalf("first verdict is %q", v.Priority)
			}
			if tc.want == nil && strings.Contains(v.Note, "unload") {
				t.Errorf("note %q, want nothing about unloading", v.Note)
			}
			for _, w := range tc.want {
				if !strings.Contains(v.Note, w) {
					t.Errorf("note %q lacks %q", v.Note, w)
				}
			}
			if tc.want != nil && !strings.Contains(v.Line(), v.Note) {
				t.Errorf("the terminal's line %q leaves out the note", v.Line())
			}
			tbl := EvaluateClean(r, MBoot, 0.05)
			for name, n := range tc.samples {
				if got := len(tbl.Cells[name].Samples); got != n {
					t.Errorf("%s: %d boot samples, want %d", name, got, n)
				}
			}
		})
	}
}
