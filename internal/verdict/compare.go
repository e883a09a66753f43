package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// RunComparison is two runs compared figure by figure, old (A) against new (B).
type RunComparison struct {
	Old, New string // labels, usually the paths given
	Alpha    float64
	Rows     []CompareRow
	// OnlyIn lists "variant: only in A/B" lines for variants present in one run only.
	OnlyIn []string
	// Mismatches are the variants compared whose definition differs between the runs: the
	// same name, another filesystem, mkfs arguments or mount options. Their rows compare two
	// configurations, not one before and after a change, and both outputs say so.
	Mismatches []Mismatch
	// Cards lists the card profiles the two runs used with different calibrations
	// (results.CalibrationMismatches): their card figures are of two card models.
	Cards []string
}

// Mismatch is a variant name that both runs ran with different definitions.
type Mismatch struct {
	Variant string
	// Diffs says what differs, one phrase per field: "mkfs -O ^has_journal in A, none in B".
	Diffs []string
}

// String is the line both outputs show: "ext4: mkfs -O ^has_journal in A, none in B — not
// the same variant".
func (m Mismatch) String() string {
	return m.Variant + ": " + strings.Join(m.Diffs, "; ") + " — not the same variant"
}

// mismatch compares the definitions of variant a (in A) and b (in B) as the report shows them
// (mkfs arguments joined by spaces); ok is false when they are the same variant. Mount
// options are compared as written: "noatime,dirsync" and "dirsync,noatime" are reported as
// different, since a later option can override an earlier one, and a difference named that
// is not one costs less than a change presented as like for like that is not.
func mismatch(a, b results.Variant) (Mismatch, bool) {
	m := Mismatch{Variant: a.Name}
	differs := func(what, x, y string) {
		if x == y {
			return
		}
		none := func(s string) string {
			if s == "" {
				return "none"
			}
			return s
		}
		m.Diffs = append(m.Diffs, fmt.Sprintf("%s %s in A, %s in B", what, none(x), none(y)))
	}
	differs("filesystem", a.FS, b.FS)
	differs("mkfs", strings.Join(a.MkfsArgs, " "), strings.Join(b.MkfsArgs, " "))
	differs("mount", a.MountOptions, b.MountOptions)
	return m, len(m.Diffs) > 0
}

// CompareRow is one figure of one variant in both runs.
type CompareRow struct {
	Test, Title, Unit string
	// Better says which way the figure is better, as the catalog or the report's concern
	// declares it.
	Better       catalog.Direction
	Variant      string
	Cmp          stats.Comparison
	OldCI, NewCI stats.Interval
	// Broke: the figure's own rule (Metric.Regressed) found B worse than A in a way that is a
	// regression however few samples there are: B lost acknowledged data after power cuts in a
	// larger share of its cuts than A.
	Broke bool
}

// Regression reports whether the row is a significant change for the worse: slower, less
// throughput, more space or memory. A figure that is not rated is never a regression.
func (r CompareRow) Regression() bool {
	if r.Broke {
		return true
	}
	if !r.Cmp.Significant() {
		return false
	}
	switch ch := r.Cmp.Change(); r.Better {
	case catalog.HigherIsBetter:
		return ch < 0
	case catalog.LowerIsBetter:
		return ch > 0
	}
	return false
}

// Regressions returns the rows that are significant changes for the worse.
func (c RunComparison) Regressions() []CompareRow {
	var out []CompareRow
	for _, r := range c.Rows {
		if r.Regression() {
			out = append(out, r)
		}
	}
	return out
}

// CompareRuns compares every figure charted per test, and those suites add, (the same figures and units as the HTML
// report) for every variant that ran in both, with the Mann-Whitney U test at alpha (0:
// stats.DefaultAlpha). Cells without samples on either side are left out.
func CompareRuns(a, b *results.Run, oldLabel, newLabel string, alpha float64, suites []Suite) RunComparison {
	if alpha <= 0 {
		alpha = stats.DefaultAlpha
	}
	c := RunComparison{Old: oldLabel, New: newLabel, Alpha: alpha, Cards: results.CalibrationMismatches(a, b, "A", "B")}
	inB := map[string]bool{}
	for _, v := range RanVariants(b) {
		inB[v.Name] = true
	}
	var both []string
	inA := map[string]bool{}
	defB := map[string]results.Variant{}
	for _, v := range RanVariants(b) {
		defB[v.Name] = v
	}
	for _, v := range RanVariants(a) {
		inA[v.Name] = true
		if inB[v.Name] {
			both = append(both, v.Name)
			if m, ok := mismatch(v, defB[v.Name]); ok {
				c.Mismatches = append(c.Mismatches, m)
			}
		} else {
			c.OnlyIn = append(c.OnlyIn, v.Name+": only in "+oldLabel)
		}
	}
	for _, v := range RanVariants(b) {
		if !inA[v.Name] {
			c.OnlyIn = append(c.OnlyIn, v.Name+": only in "+newLabel)
		}
	}
	compared := slices.Clone(ChartMetrics)
	for _, s := range suites {
		for _, m := range append(slices.Clone(s.Matrix), s.Compared...) {
			if Present(a, m) || Present(b, m) {
				compared = append(compared, m)
			}
		}
	}
	for _, m := range compared {
		for _, name := range both {
			sa, sb := Samples(a, name, m), Samples(b, name, m)
			if len(sa) == 0 || len(sb) == 0 {
				continue
			}
			c.Rows = append(c.Rows, CompareRow{
				Test: m.Key, Title: m.Title, Unit: m.Unit, Better: m.Better, Variant: name,
				Cmp:   stats.Compare(sa, sb, alpha),
				OldCI: stats.MedianCI(sa, stats.DefaultConfidence), NewCI: stats.MedianCI(sb, stats.DefaultConfidence),
				Broke: m.Regressed != nil && m.Regressed(a, b, name),
			})
		}
	}
	return c
}
