package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/verdict"
)

// noLabel stands in the run column for a row whose run was given no label in a merge where
// others were: an empty cell would read as a missing figure.
const noLabel = "-"

// labels maps each variant name to the label of the run it came from (fsbench merge
// --label), noLabel for a run given none; nil when no variant has a label. Unlike sources,
// a label never splits the rating: three cards measured on one kernel and machine are what
// the user wants rated against each other.
func labels(r *results.Run) map[string]string {
	out := map[string]string{}
	found := false
	for _, v := range r.Variants {
		out[v.Name] = noLabel
		if v.Source != nil && v.Source.Label != "" {
			out[v.Name], found = v.Source.Label, true
		}
	}
	if !found {
		return nil
	}
	return out
}

// mergedRun is one run of a labelled merge, for the legend that says which rows each run
// (each card) contributed: the bonnie++ and other suites' tables have no run column.
type mergedRun struct {
	Label, Dir, Where string
	Variants          []string // the variants that ran, in the merged order
}

// mergedRuns lists the runs of a labelled merge in the order their first variant appears;
// nil when no run has a label, so that unlabelled reports stay as they were.
func mergedRuns(r *results.Run) []mergedRun {
	if labels(r) == nil {
		return nil
	}
	var out []mergedRun
	index := map[results.Source]int{}
	for _, v := range verdict.RanVariants(r) {
		var src results.Source
		if v.Source != nil {
			src = *v.Source
		}
		i, ok := index[src]
		if !ok {
			label := src.Label
			if label == "" {
				label = "(no label)"
			}
			i = len(out)
			index[src] = i
			out = append(out, mergedRun{Label: label, Dir: src.Dir, Where: verdict.RanOn(r, v)})
		}
		out[i].Variants = append(out[i].Variants, v.Name)
	}
	return out
}

// writeMergedRuns writes the legend of a labelled merge to the terminal: per run, its label,
// directory, where it ran and its rows. Nothing for other runs.
func writeMergedRuns(w io.Writer, r *results.Run) {
	runs := mergedRuns(r)
	if runs == nil {
		return
	}
	fmt.Fprintf(w, "merged from %d runs:\n", len(runs))
	rows := make([][]string, 0, len(runs))
	for _, m := range runs {
		rows = append(rows, []string{"  " + m.Label, m.Dir, m.Where, strings.Join(m.Variants, ", ")})
	}
	writeTableLeft(w, rows, 4, func(_, _ int, s string) string { return s })
	fmt.Fprintln(w)
}
