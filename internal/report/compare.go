package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
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
}

// Regression reports whether the row is a significant change for the worse: slower, less
// throughput, more space or memory. A figure that is not rated is never a regression.
func (r CompareRow) Regression() bool {
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

// CompareRuns compares every figure charted per test (the same figures and units as the HTML
// report) for every variant that ran in both, with the Mann-Whitney U test at alpha (0:
// stats.DefaultAlpha). Cells without samples on either side are left out.
func CompareRuns(a, b *results.Run, oldLabel, newLabel string, alpha float64) RunComparison {
	if alpha <= 0 {
		alpha = stats.DefaultAlpha
	}
	c := RunComparison{Old: oldLabel, New: newLabel, Alpha: alpha}
	inB := map[string]bool{}
	for _, v := range ranVariants(b) {
		inB[v.Name] = true
	}
	var both []string
	inA := map[string]bool{}
	for _, v := range ranVariants(a) {
		inA[v.Name] = true
		if inB[v.Name] {
			both = append(both, v.Name)
		} else {
			c.OnlyIn = append(c.OnlyIn, v.Name+": only in "+oldLabel)
		}
	}
	for _, v := range ranVariants(b) {
		if !inA[v.Name] {
			c.OnlyIn = append(c.OnlyIn, v.Name+": only in "+newLabel)
		}
	}
	for _, m := range chartMetrics {
		for _, name := range both {
			sa, sb := samples(a, name, m), samples(b, name, m)
			if len(sa) == 0 || len(sb) == 0 {
				continue
			}
			c.Rows = append(c.Rows, CompareRow{
				Test: m.key, Title: m.title, Unit: m.unit, Better: m.better, Variant: name,
				Cmp:   stats.Compare(sa, sb, alpha),
				OldCI: stats.MedianCI(sa, stats.DefaultConfidence), NewCI: stats.MedianCI(sb, stats.DefaultConfidence),
			})
		}
	}
	return c
}

// ciText is benchstat's "± 3%" (the larger distance from the median to a bound of its 95 %
// confidence interval), "± ∞" when there are too few samples for one.
func ciText(iv stats.Interval) string {
	hw := iv.HalfWidth()
	if math.IsInf(hw, 0) {
		return "± ∞"
	}
	return fmt.Sprintf("± %.0f%%", 100*hw)
}

// notes collects footnotes: each distinct warning gets a number, in order of appearance.
type notes struct{ list []string }

func (n *notes) mark(s string) string {
	if s == "" {
		return ""
	}
	for i, x := range n.list {
		if x == s {
			return fmt.Sprintf(" (%d)", i+1)
		}
	}
	n.list = append(n.list, s)
	return fmt.Sprintf(" (%d)", len(n.list))
}

func ciWarning(iv stats.Interval) string {
	if iv.Finite() {
		return ""
	}
	return fmt.Sprintf("need >= %d samples for a confidence interval of the median at level %g", stats.NeedForCI(stats.DefaultConfidence), stats.DefaultConfidence)
}

// WriteText writes the comparison as benchstat does: one block per figure, a row per variant
// with both medians and their confidence intervals, then the change ("~" when not
// significant) with p and n, numbered notes, and the list of regressions.
func (c RunComparison) WriteText(w io.Writer) error {
	var b strings.Builder
	var fn notes
	fmt.Fprintf(&b, "A: %s\nB: %s\n", c.Old, c.New)
	for i := 0; i < len(c.Rows); {
		j := i
		for j < len(c.Rows) && c.Rows[j].Test == c.Rows[i].Test {
			j++
		}
		r0 := c.Rows[i]
		dir := r0.Better.String()
		rows := [][]string{{r0.Title, "A " + r0.Unit, "", "B " + r0.Unit, "", "vs A", ""}}
		for _, r := range c.Rows[i:j] {
			rows = append(rows, []string{
				r.Variant,
				format(r.Cmp.Old.Median), ciText(r.OldCI) + fn.mark(ciWarning(r.OldCI)),
				format(r.Cmp.New.Median), ciText(r.NewCI) + fn.mark(ciWarning(r.NewCI)),
				r.Cmp.Delta(), "(" + r.Cmp.PN() + ")" + fn.mark(r.Cmp.Warning),
			})
		}
		b.WriteString("\n")
		writeTable(&b, rows, func(_, _ int, s string) string { return s })
		fmt.Fprintf(&b, "%s\n", "("+dir+")")
		i = j
	}
	if len(c.Rows) == 0 {
		b.WriteString("\nno figure has samples in both runs for the same variant\n")
	}
	if len(fn.list) > 0 {
		b.WriteString("\n")
		for i, s := range fn.list {
			fmt.Fprintf(&b, "(%d) %s\n", i+1, s)
		}
	}
	for _, s := range c.OnlyIn {
		fmt.Fprintf(&b, "%s\n", s)
	}
	if reg := c.Regressions(); len(reg) > 0 {
		fmt.Fprintf(&b, "\nsignificant regressions (p <= %g):\n", c.Alpha)
		for _, r := range reg {
			fmt.Fprintf(&b, "  %s %s: %s → %s %s (%s)\n", r.Variant, r.Title, format(r.Cmp.Old.Median), format(r.Cmp.New.Median), r.Unit, r.Cmp.Delta())
		}
	} else {
		fmt.Fprintf(&b, "\nno significant regression (p <= %g)\n", c.Alpha)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// dirArrows mark which way a figure is better on the comparison page; none when not rated.
var dirArrows = map[catalog.Direction]string{catalog.LowerIsBetter: "↓", catalog.HigherIsBetter: "↑"}

type cmpHTMLRow struct {
	Title, Unit, Dir, Variant, Old, New, Delta, PN, Warn string
	Style                                                template.CSS
}

// WriteHTML writes the comparison as a self-contained page (same rules as HTML: no script,
// no external resource).
func (c RunComparison) WriteHTML(w io.Writer) error {
	var rows []cmpHTMLRow
	for _, r := range c.Rows {
		dir := dirArrows[r.Better]
		row := cmpHTMLRow{Title: r.Title, Unit: r.Unit, Dir: dir, Variant: r.Variant,
			Old: format(r.Cmp.Old.Median) + " " + ciText(r.OldCI), New: format(r.Cmp.New.Median) + " " + ciText(r.NewCI),
			Delta: r.Cmp.Delta(), PN: r.Cmp.PN(), Warn: r.Cmp.Warning}
		switch {
		case r.Regression():
			row.Style = cellStyle(Bad)
		case r.Cmp.Significant():
			row.Style = cellStyle(VeryGood)
		}
		rows = append(rows, row)
	}
	data := struct {
		Old, New string
		Alpha    float64
		Rows     []cmpHTMLRow
		OnlyIn   []string
		Regs     int
		Rules    string
	}{c.Old, c.New, c.Alpha, rows, c.OnlyIn, len(c.Regressions()), SignificanceRules}
	var buf bytes.Buffer
	if err := compareTmpl.Execute(&buf, data); err != nil {
		return fmt.Errorf("rendering the comparison page: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

var compareTmpl = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fsbench compare</title>
<style>
body { font: 16px/1.45 system-ui, sans-serif; color: #111; background: #fff; margin: 0 auto; max-width: 72rem; padding: 0.75rem 1rem 2rem; }
h1 { font-size: 1.5rem; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.92rem; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.5rem; text-align: left; }
th { background: #f3f3f3; }
td.num { text-align: right; white-space: nowrap; }
@media print { * { -webkit-print-color-adjust: exact; print-color-adjust: exact; } .scroll { overflow: visible; } }
</style>
</head>
<body>
<h1>fsbench: B compared with A</h1>
<p>A: {{.Old}}<br>B: {{.New}}</p>
<p>{{if .Regs}}<b>{{.Regs}} significant regression(s)</b> (p &lt;= {{.Alpha}}), highlighted in red; significant improvements in green.{{else}}No significant regression (p &lt;= {{.Alpha}}).{{end}} "~": no significant difference.</p>
<div class="scroll">
<table>
<tr><th>figure</th><th>variant</th><th class="num">A</th><th class="num">B</th><th class="num">vs A</th><th>p, n</th><th>note</th></tr>
{{range .Rows}}<tr style="{{.Style}}"><td>{{.Title}} <small>{{.Unit}} {{.Dir}}</small></td><td>{{.Variant}}</td><td class="num">{{.Old}}</td><td class="num">{{.New}}</td><td class="num">{{.Delta}}</td><td>{{.PN}}</td><td>{{.Warn}}</td></tr>
{{end}}</table>
</div>
{{if .OnlyIn}}<ul>{{range .OnlyIn}}<li>{{.}}</li>{{end}}</ul>{{end}}
<footer><p>{{.Rules}}</p></footer>
</body>
</html>
`))
