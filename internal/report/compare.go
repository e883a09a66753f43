package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/verdict"
)

// mismatchNote is the footnote of every row of a mismatched variant; the lines above the
// tables say what differs.
const mismatchNote = "not the same variant in A and B (listed at the top): the difference is between two configurations, not a like-for-like change"

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

// number is the footnote number of s, 0 for no footnote ("").
func (n *notes) number(s string) int {
	if s == "" {
		return 0
	}
	for i, x := range n.list {
		if x == s {
			return i + 1
		}
	}
	n.list = append(n.list, s)
	return len(n.list)
}

// ciWarning says why ciText shows "± ∞": every one gets a footnote, in the terminal and on
// the page, so that nobody reads it as an infinite spread.
func ciWarning(iv stats.Interval) string {
	if !iv.Finite() {
		return fmt.Sprintf("need >= %d samples for a confidence interval of the median at level %g", stats.NeedForCI(stats.DefaultConfidence), stats.DefaultConfidence)
	}
	if math.IsInf(iv.HalfWidth(), 0) {
		return "the median is 0: its confidence interval cannot be given in % of it"
	}
	return ""
}

// rowNotes are the footnote numbers of one row (0: none): of its variant (a mismatch), of
// A's and B's confidence intervals, and of the comparison.
type rowNotes struct{ Variant, Old, New, Cmp int }

// annotate numbers the footnotes of every row in the order WriteText shows them (row by row,
// left to right), so that the terminal and the page give the same note the same number.
func annotate(c verdict.RunComparison) ([]rowNotes, []string) {
	var fn notes
	mismatched := map[string]bool{}
	for _, m := range c.Mismatches {
		mismatched[m.Variant] = true
	}
	out := make([]rowNotes, len(c.Rows))
	for i, r := range c.Rows {
		if mismatched[r.Variant] {
			out[i].Variant = fn.number(mismatchNote)
		}
		out[i].Old = fn.number(ciWarning(r.OldCI))
		out[i].New = fn.number(ciWarning(r.NewCI))
		out[i].Cmp = fn.number(r.Cmp.Warning)
	}
	return out, fn.list
}

// markText is a footnote mark in the terminal: " (2)", or "" for none.
func markText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d)", n)
}

// WriteText writes the comparison as benchstat does: first the variants whose definition
// differs between the runs, then one block per figure, a row per variant with both medians
// and their confidence intervals, then the change ("~" when not significant) with p and n,
// numbered notes, and the list of regressions.
func CompareText(w io.Writer, c verdict.RunComparison) error {
	var b strings.Builder
	marks, fnotes := annotate(c)
	fmt.Fprintf(&b, "A: %s\nB: %s\n", c.Old, c.New)
	if len(c.Mismatches) > 0 {
		b.WriteString("\nsame name, different variant (their rows compare two configurations, not a like-for-like change):\n")
		for _, m := range c.Mismatches {
			fmt.Fprintf(&b, "  %s\n", m)
		}
	}
	if len(c.Cards) > 0 {
		b.WriteString("\nsame card name, different calibration (card time, wear and simulated-card figures compare two card models):\n")
		for _, s := range c.Cards {
			fmt.Fprintf(&b, "  %s\n", s)
		}
	}
	for i := 0; i < len(c.Rows); {
		j := i
		for j < len(c.Rows) && c.Rows[j].Test == c.Rows[i].Test {
			j++
		}
		r0 := c.Rows[i]
		dir := r0.Better.String()
		rows := [][]string{{r0.Title, "A " + r0.Unit, "", "B " + r0.Unit, "", "vs A", ""}}
		for k, r := range c.Rows[i:j] {
			mk := marks[i+k]
			rows = append(rows, []string{
				r.Variant + markText(mk.Variant),
				format(r.Cmp.Old.Median), ciText(r.OldCI) + markText(mk.Old),
				format(r.Cmp.New.Median), ciText(r.NewCI) + markText(mk.New),
				r.Cmp.Delta(), "(" + r.Cmp.PN() + ")" + markText(mk.Cmp),
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
	if len(fnotes) > 0 {
		b.WriteString("\n")
		for i, s := range fnotes {
			fmt.Fprintf(&b, "(%d) %s\n", i+1, s)
		}
	}
	for _, s := range c.OnlyIn {
		fmt.Fprintf(&b, "%s\n", s)
	}
	if reg := c.Regressions(); len(reg) > 0 {
		fmt.Fprintf(&b, "\nsignificant regressions (p <= %g):\n", c.Alpha)
		for _, r := range reg {
			fmt.Fprintf(&b, "  %s %s: %s → %s %s (%s)%s\n", r.Variant, r.Title, format(r.Cmp.Old.Median), format(r.Cmp.New.Median), r.Unit, r.Cmp.Delta(), mismatchSuffix(c, r.Variant))
		}
	} else {
		fmt.Fprintf(&b, "\nno significant regression (p <= %g)\n", c.Alpha)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mismatchSuffix marks a regression of a variant that is not the same in A and B: it may be
// the change of configuration, not a regression of the same thing.
func mismatchSuffix(c verdict.RunComparison, variant string) string {
	for _, m := range c.Mismatches {
		if m.Variant == variant {
			return " — not the same variant in A and B"
		}
	}
	return ""
}

// dirArrows mark which way a figure is better on the comparison page; none when not rated.
var dirArrows = map[catalog.Direction]string{catalog.LowerIsBetter: "↓", catalog.HigherIsBetter: "↑"}

type cmpHTMLRow struct {
	Title, Unit, Dir, Variant, Old, New, Delta, PN string
	// Footnote numbers (0: none), the same as the terminal's.
	VariantNote, OldNote, NewNote, PNNote int
	Style                                 template.CSS
}

// WriteHTML writes the comparison as a self-contained page (same rules as HTML: no script,
// no external resource), with the terminal's footnotes under the same numbers and the
// variants that differ between the runs at the top.
func CompareHTML(w io.Writer, c verdict.RunComparison) error {
	marks, fnotes := annotate(c)
	var rows []cmpHTMLRow
	for i, r := range c.Rows {
		dir := dirArrows[r.Better]
		mk := marks[i]
		row := cmpHTMLRow{Title: r.Title, Unit: r.Unit, Dir: dir, Variant: r.Variant,
			Old: format(r.Cmp.Old.Median) + " " + ciText(r.OldCI), New: format(r.Cmp.New.Median) + " " + ciText(r.NewCI),
			Delta: r.Cmp.Delta(), PN: r.Cmp.PN(),
			VariantNote: mk.Variant, OldNote: mk.Old, NewNote: mk.New, PNNote: mk.Cmp}
		switch {
		case r.Regression():
			row.Style = cellStyle(verdict.Bad)
		case r.Cmp.Significant():
			row.Style = cellStyle(verdict.VeryGood)
		}
		rows = append(rows, row)
	}
	var mismatches []string
	for _, m := range c.Mismatches {
		mismatches = append(mismatches, m.String())
	}
	data := struct {
		Old, New   string
		Alpha      float64
		Mismatches []string
		Cards      []string
		Rows       []cmpHTMLRow
		Notes      []string
		OnlyIn     []string
		Regs       int
		Rules      string
	}{c.Old, c.New, c.Alpha, mismatches, c.Cards, rows, fnotes, c.OnlyIn, len(c.Regressions()), SignificanceRules}
	var buf bytes.Buffer
	if err := compareTmpl.Execute(&buf, data); err != nil {
		return fmt.Errorf("rendering the comparison page: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

var compareTmpl = template.Must(template.New("compare").Funcs(template.FuncMap{
	"inc": func(i int) int { return i + 1 },
}).Parse(`{{define "mark"}}{{if .}} <a href="#note-{{.}}">({{.}})</a>{{end}}{{end}}<!DOCTYPE html>
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
{{if .Mismatches}}<p><b>Same name, different variant:</b> their rows compare two configurations, not a like-for-like change.</p>
<ul>
{{range .Mismatches}}<li>{{.}}</li>
{{end}}</ul>
{{end}}{{if .Cards}}<p><b>Same card name, different calibration:</b> card time, wear and simulated-card figures compare two card models.</p>
<ul>
{{range .Cards}}<li>{{.}}</li>
{{end}}</ul>
{{end}}<p>{{if .Regs}}<b>{{.Regs}} significant regression(s)</b> (p &lt;= {{.Alpha}}), highlighted in red; significant improvements in green.{{else}}No significant regression (p &lt;= {{.Alpha}}).{{end}} "~": no significant difference.</p>
<div class="scroll">
<table>
<tr><th>figure</th><th>variant</th><th class="num">A</th><th class="num">B</th><th class="num">vs A</th><th>p, n</th></tr>
{{range .Rows}}<tr style="{{.Style}}"><td>{{.Title}} <small>{{.Unit}} {{.Dir}}</small></td><td>{{.Variant}}{{template "mark" .VariantNote}}</td><td class="num">{{.Old}}{{template "mark" .OldNote}}</td><td class="num">{{.New}}{{template "mark" .NewNote}}</td><td class="num">{{.Delta}}</td><td>{{.PN}}{{template "mark" .PNNote}}</td></tr>
{{end}}</table>
</div>
{{if .Notes}}<div class="notes">
{{range $i, $n := .Notes}}<p id="note-{{inc $i}}">({{inc $i}}) {{$n}}</p>
{{end}}</div>
{{end}}{{if .OnlyIn}}<ul>{{range .OnlyIn}}<li>{{.}}</li>{{end}}</ul>{{end}}
<footer><p>{{.Rules}}</p></footer>
</body>
</html>
`))
