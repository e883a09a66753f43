package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/verdict"
)

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

func agedTablesOf(ar *verdict.AgedReport) agedTables {
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
	ar := verdict.Aged(r, stats.DefaultAlpha)
	if ar == nil {
		return
	}
	t := agedTablesOf(ar)
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
	ar := verdict.Aged(r, alpha)
	if ar == nil {
		return nil
	}
	return &htmlAged{Spec: ar.Spec, Tables: agedTablesOf(ar), Legend: agedLegend, Verdicts: ar.Verdicts}
}

func agedNum(x float64, prec int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strings.TrimSpace(fmt.Sprintf("%.*f", prec, x))
}

func plain(_, _ int, s string) string { return s }
