package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/figure"
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
	for _, v := range ranVariants(r) {
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

// agedTables are the aged section's tables as text cells, for the terminal and the HTML page
// alike: the agings (two header rows, then a row per aged variant), notes on them, and each
// test fresh against aged (one header row).
type agedTables struct {
	Agings [][]string
	Notes  []string
	Tests  [][]string
}

// agedLegend explains the tests table's "~" and what is left out of it.
const agedLegend = "~: no significant difference (Mann-Whitney U, alpha 0.05); mkfs, mount and used_space are left out (an aged repetition takes them before aging, or its tree fills them)."

func (ar *AgedReport) tables() agedTables {
	var t agedTables
	t.Agings = [][]string{{"variant", "aging", "written", "full", "extents", "layout", "free", "free avg", "fsck", "mount", "card"},
		{"", "s", "MiB", "%", "/file", "score", "extents", "KiB", "s", "s", "WA"}}
	for _, a := range ar.Agings {
		t.Agings = append(t.Agings, []string{a.Variant, agedNum(a.Seconds, 1), agedNum(a.WrittenMiB, 0), agedNum(100*a.Fullness, 0),
			agedNum(a.ExtentsPerFile, 2), agedNum(a.Score, 3), agedNum(a.FreeExtents, 0), agedNum(a.FreeAvgKiB, 0), agedNum(a.FsckSeconds, 2), agedNum(a.MountSeconds, 3), agedNum(a.WA, 2)})
	}
	for _, a := range ar.Agings {
		if !a.SameListing {
			t.Notes = append(t.Notes, fmt.Sprintf("WARNING: %s: the repetitions' aged trees differ (listing digests): the aging is not deterministic here", a.Variant))
		}
		if a.EndedEarly != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: the churn ended early: %s", a.Variant, a.EndedEarly))
		}
		if a.Trimmed != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: %s", a.Variant, a.Trimmed))
		}
	}
	t.Tests = [][]string{{"test", "variant", "fresh", "aged", "aged/fresh", "p"}}
	for _, x := range ar.Rows {
		d := "~"
		if x.Cmp.Significant() {
			d = figure.Ratio(x.Slowdown()) + " worse"
			if x.Slowdown() < 1 {
				d = figure.Ratio(1/x.Slowdown()) + " better"
			}
		}
		pn := x.Cmp.PN()
		if x.Busy > 0 {
			pn += fmt.Sprintf(" (%d busy left out)", x.Busy)
		}
		t.Tests = append(t.Tests, []string{x.Test, x.Fresh, format(x.Cmp.Old.Median) + " " + x.Unit, format(x.Cmp.New.Median) + " " + x.Unit, d, pn})
	}
	return t
}

// WriteAged writes the aged-against-fresh section of the terminal summary; nothing for a run
// without --age.
func WriteAged(w io.Writer, r *results.Run) {
	ar := Aged(r, stats.DefaultAlpha)
	if ar == nil {
		return
	}
	t := ar.tables()
	fmt.Fprintf(w, "\naged (%s) against fresh:\n", ar.Spec)
	writeTableLeft(w, t.Agings, 1, plain)
	for _, n := range t.Notes {
		fmt.Fprintln(w, n)
	}
	if len(ar.Rows) > 0 {
		fmt.Fprintln(w)
		writeTableLeft(w, t.Tests, 2, plain)
		fmt.Fprintln(w, agedLegend)
	}
	if len(ar.Verdicts) > 0 {
		fmt.Fprintln(w, "ranking, fresh against aged:")
		for _, v := range ar.Verdicts {
			fmt.Fprintln(w, "  "+v)
		}
	}
}

// htmlAged is the aged section of the HTML page.
type htmlAged struct {
	Spec     string
	Tables   agedTables
	Legend   string
	Verdicts []string
}

// agedSection is the HTML page's aged section; nil for a run without --age.
func agedSection(r *results.Run, alpha float64) *htmlAged {
	ar := Aged(r, alpha)
	if ar == nil {
		return nil
	}
	return &htmlAged{Spec: ar.Spec, Tables: ar.tables(), Legend: agedLegend, Verdicts: ar.Verdicts}
}

func agedNum(x float64, prec int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strings.TrimSpace(fmt.Sprintf("%.*f", prec, x))
}

func plain(_, _ int, s string) string { return s }
