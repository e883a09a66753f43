package verdict

import (
	"fmt"
	"math"
	"slices"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// AgedReport is a run with --age read as fresh against aged: each variant's aging, each test's
// change from fresh to aged, and whether aging changed which variant wins.
type AgedReport struct {
	Spec     string
	Agings   []AgingRow
	Rows     []AgedRow
	Verdicts []string
}

// AgingRow is the medians of one aged variant's agings.
type AgingRow struct {
	Variant                                  string
	N                                        int
	Seconds, Fullness, ExtentsPerFile, Score float64
	FsckSeconds, MountSeconds, WA            float64
	FreeExtents, FreeAvgKiB                  float64
	Fsck, Listing, EndedEarly, Trimmed       string
	SameListing                              bool // every repetition made the same tree
	WrittenMiB                               float64
}

// AgedRow is one test of one variant, fresh against aged.
type AgedRow struct {
	Test, Unit, Fresh, Aged string
	Better                  catalog.Direction
	Cmp                     stats.Comparison
	// Busy is how many repetitions (fresh and aged) were left out because the machine was busy
	// with other work while they were measured, as every verdict leaves them out.
	Busy int
}

// Slowdown is how many times worse the aged figure is (2 = twice as slow or half the rate).
func (r AgedRow) Slowdown() float64 {
	f, a := r.Cmp.Old.Median, r.Cmp.New.Median
	if f <= 0 || a <= 0 {
		return math.NaN()
	}
	if r.Better == catalog.HigherIsBetter {
		return f / a
	}
	return a / f
}

// notAged are tests an aged repetition runs before its aging, or whose figure the aged tree
// itself makes (used_space counts it): they say nothing of aging.
var notAged = []string{catalog.Mkfs, catalog.ModuleLoad, catalog.Mount, catalog.MountMem, catalog.UsedSpace}

// Aged reads a run with aged twins; nil when the run has none.
func Aged(r *results.Run, alpha float64) *AgedReport {
	if alpha <= 0 {
		alpha = stats.DefaultAlpha
	}
	var pairs [][2]string
	ar := &AgedReport{}
	for _, v := range RanVariants(r) {
		if v.Fresh != "" {
			pairs = append(pairs, [2]string{v.Fresh, v.Name})
			ar.Spec = v.Age
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	for _, p := range pairs {
		ar.Agings = append(ar.Agings, agingRow(r, p[1]))
	}
	var tests []string
	for _, m := range r.Measurements {
		if !slices.Contains(tests, m.Test) && !slices.Contains(notAged, m.Test) {
			tests = append(tests, m.Test)
		}
	}
	for _, t := range tests {
		ct, ok := catalog.Lookup(t)
		if !ok || ct.Better == catalog.NotRated {
			continue
		}
		fresh, aged := map[string][]float64{}, map[string][]float64{}
		for _, p := range pairs {
			fv, fb := r.QuietValues(p[0], t)
			av, ab := r.QuietValues(p[1], t)
			row := AgedRow{Test: t, Unit: ct.Unit, Fresh: p[0], Aged: p[1], Better: ct.Better,
				Cmp: stats.Compare(fv, av, alpha), Busy: fb + ab}
			if row.Cmp.Old.N == 0 || row.Cmp.New.N == 0 {
				continue
			}
			ar.Rows = append(ar.Rows, row)
			fresh[p[0]], aged[p[0]] = fv, av
		}
		if len(fresh) > 1 {
			ar.Verdicts = append(ar.Verdicts, rankVerdict(ct, fresh, aged, alpha, ar.Spec))
		}
	}
	return ar
}

func agingRow(r *results.Run, variant string) AgingRow {
	row := AgingRow{Variant: variant, SameListing: true}
	var secs, full, ext, score, fsck, mount, wa, mib, fe, fa []float64
	for _, a := range r.Aging {
		if a.Variant != variant || a.Warmup || a.Status != results.OK {
			continue
		}
		row.N++
		secs, full = append(secs, a.Seconds), append(full, a.Fullness)
		mib = append(mib, float64(a.FillBytes+a.ChurnBytes)/(1<<20))
		if a.Layout != nil {
			ext, score = append(ext, a.Layout.ExtentsPerFile), append(score, a.Layout.Score)
		}
		fsck, mount = append(fsck, a.FsckSeconds), append(mount, a.MountSeconds)
		if a.FreeExtents > 0 {
			fe, fa = append(fe, float64(a.FreeExtents)), append(fa, a.FreeExtentAvgBytes/1024)
		}
		if a.CardWA > 0 {
			wa = append(wa, a.CardWA)
		}
		if row.Listing != "" && row.Listing != a.ListingSHA256 {
			row.SameListing = false
		}
		row.Listing, row.Fsck = a.ListingSHA256, a.Fsck
		if a.EndedEarly != "" {
			row.EndedEarly = a.EndedEarly
		}
		if a.Trimmed != "" {
			row.Trimmed = a.Trimmed
		}
	}
	med := func(xs []float64) float64 {
		if len(xs) == 0 {
			return math.NaN()
		}
		return stats.Summarize(xs).Median
	}
	row.Seconds, row.Fullness, row.ExtentsPerFile, row.Score = med(secs), med(full), med(ext), med(score)
	row.FsckSeconds, row.MountSeconds, row.WA, row.WrittenMiB = med(fsck), med(mount), med(wa), med(mib)
	row.FreeExtents, row.FreeAvgKiB = med(fe), med(fa)
	return row
}

// winner is the variant significantly better than every other one, or "" when none is.
func winner(vals map[string][]float64, better catalog.Direction, alpha float64) string {
	var names []string
	for n := range vals {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		wins := true
		for _, o := range names {
			if o == n {
				continue
			}
			c := stats.Compare(vals[o], vals[n], alpha)
			ch := c.Change() // n against o
			if !c.Significant() || (better == catalog.LowerIsBetter) != (ch < 0) {
				wins = false
				break
			}
		}
		if wins {
			return n
		}
	}
	return ""
}

// rankVerdict says, for one test, who wins fresh and who wins aged, and whether that changed.
func rankVerdict(ct catalog.Test, fresh, aged map[string][]float64, alpha float64, spec string) string {
	wf, wa := winner(fresh, ct.Better, alpha), winner(aged, ct.Better, alpha)
	name := func(w string) string {
		if w == "" {
			return "no clear winner"
		}
		return w + " wins"
	}
	s := fmt.Sprintf("%s: fresh: %s; aged (%s): %s", ct.Name, name(wf), spec, name(wa))
	switch {
	case wf != "" && wa != "" && wf != wa:
		s += " — the ranking changed"
	case wf != "" && wf == wa:
		s += " — the same winner"
	default:
		s += " — cannot tell whether the ranking changed"
	}
	return s
}
