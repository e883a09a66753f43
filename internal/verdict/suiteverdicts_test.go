package verdict_test

import (
	"github.com/fsbench/fsbench/internal/suites"
	_ "github.com/fsbench/fsbench/internal/suites/all"
	"github.com/fsbench/fsbench/internal/suites/bonnie"
	"github.com/fsbench/fsbench/internal/suites/randio"
	"github.com/fsbench/fsbench/internal/suites/smallfiles"
	"github.com/fsbench/fsbench/internal/verdict"

	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// suiteRun is a run of one of the other suites: every test of it with the figures given per
// variant (4 repetitions each; nil: bonnie++'s "+++++", too fast to time), and the mount every
// suite's setup times.
func suiteRun(figures map[string]map[string][]float64) *results.Run {
	r := &results.Run{}
	for _, v := range []string{"ext4", "ext2", "xfs"} {
		tests, ok := figures[v]
		if !ok {
			continue
		}
		r.Variants = append(r.Variants, results.Variant{Name: v, FS: v, Status: results.OK})
		for rep := 1; rep <= 4; rep++ {
			r.Measurements = append(r.Measurements, results.Measurement{Variant: v, Test: catalog.Mount, Rep: rep, Status: results.OK,
				Value: results.Float(0.002), Unit: "s", WallSeconds: 0.002})
			for _, s := range suites.All() {
				for _, test := range s.TestNames() {
					xs, ok := tests[test]
					if !ok {
						continue
					}
					m := results.Measurement{Variant: v, Test: test, Rep: rep, Status: results.NA, Note: "too fast to time (0.2 s)"}
					if xs != nil {
						m = results.Measurement{Variant: v, Test: test, Rep: rep, Status: results.OK, Value: results.Float(xs[rep-1]), Unit: catalog.Get(test).Unit}
					}
					r.Measurements = append(r.Measurements, m)
				}
			}
		}
	}
	return r
}

func TestSuiteVerdicts(t *testing.T) {
	fast, slow, same := []float64{200, 210, 205, 215}, []float64{100, 110, 105, 115}, []float64{201, 209, 204, 214}
	tests := []struct {
		name  string
		run   *results.Run
		suite string
		want  map[string]string // priority -> line
	}{
		{"bonnie", suiteRun(map[string]map[string][]float64{
			"ext4": {bonnie.Write: fast, bonnie.Read: fast, bonnie.SeqCreate: slow, bonnie.SeqStat: nil},
			"ext2": {bonnie.Write: slow, bonnie.Read: same, bonnie.SeqCreate: fast, bonnie.SeqStat: nil},
		}), "bonnie", map[string]string{
			"block write":       "ext4; 1.93× faster than ext2 (208 vs 108 KiB/s); significant (p=0.029 n=4)",
			"block read":        "no clear winner: ext4, ext2 within noise; medians from 208 (ext4) to 206 KiB/s (ext2); not significant (p=0.886 n=4)",
			"sequential create": "ext2; 1.93× faster than ext4 (208 vs 108 files/s); significant (p=0.029 n=4)",
		}},
		{"smallfiles", suiteRun(map[string]map[string][]float64{
			"ext4": {smallfiles.Large: fast, smallfiles.Fsync: slow, smallfiles.Dirsync: slow},
			"xfs":  {smallfiles.Large: slow, smallfiles.Fsync: fast, smallfiles.Dirsync: same},
		}), "smallfiles", map[string]string{
			"large file write":                 "ext4; 1.93× faster than xfs (208 vs 108 MB/s); significant (p=0.029 n=4)",
			"fsync'ed small files":             "xfs; 1.93× faster than ext4 (208 vs 108 files/s); significant (p=0.029 n=4)",
			"small files with directory fsync": "xfs; 1.92× faster than ext4 (206 vs 108 files/s); significant (p=0.029 n=4)",
		}},
		{"randio", suiteRun(map[string]map[string][]float64{
			"ext4": {randio.SeqWrite: fast, randio.RandWrite: fast, randio.RandRead: same},
			"ext2": {randio.SeqWrite: same, randio.RandWrite: slow, randio.RandRead: fast},
		}), "randio", map[string]string{
			"512 KiB sequential write": "no clear winner: ext4, ext2 within noise; medians from 208 (ext4) to 206 MB/s (ext2); not significant (p=0.886 n=4)",
			"4 KiB random write":       "ext4; 1.93× faster than ext2 (208 vs 108 IOPS); significant (p=0.029 n=4)",
			"4 KiB random read":        "no clear winner: ext2, ext4 within noise; medians from 208 (ext2) to 206 IOPS (ext4); not significant (p=0.886 n=4)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, v := range verdict.VerdictsFor(tc.run, 0, "", suites.Verdicts()) {
				switch v.Suite {
				case "":
					// Only the mount, which every suite's setup times: none of Bootlin's
					// priorities, which this run has no data for.
					if v.Priority != "boot/mount time" {
						t.Errorf("a %s run has the verdict %q: %s", tc.suite, v.Priority, v.Line())
					}
				case tc.suite:
					got[v.Priority] = v.Line()
				default:
					t.Errorf("verdict %q of suite %s in a %s run", v.Priority, v.Suite, tc.suite)
				}
			}
			for p, want := range tc.want {
				if got[p] != want {
					t.Errorf("%s:\n got %q\nwant %q", p, got[p], want)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("verdicts %q, want those of %q (a test too fast to time has none)", got, tc.want)
			}
		})
	}
}
