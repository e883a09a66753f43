package report

import (
	"github.com/fsbench/fsbench/internal/verdict"

	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// ratingColors are the fill of a rated cell or bar, best to worst: ColorBrewer's RdYlGn
// scale. Colour alone does not carry the rating (it is lost in grey print and for colour-blind
// readers), so every cell also says its rating in words.
var ratingColors = map[verdict.Rating]string{
	verdict.Best: "#1a9850", verdict.VeryGood: "#66bd63", verdict.Good: "#a6d96a", verdict.Fair: "#fee08b",
	verdict.Average: "#fdae61", verdict.Bad: "#f46d43", verdict.Worst: "#d73027",
}

// ratingInk is the text colour readable on each fill.
func ratingInk(r verdict.Rating) string {
	if r == verdict.Best || r == verdict.Worst {
		return "#fff"
	}
	return "#000"
}

// Bar is one variant in a chart.
type Bar struct {
	Label            string
	Median, Min, Max float64
	N                int
	Rating           verdict.Rating
}

// Chart geometry, in SVG user units (the SVG scales to the page width).
const (
	chartW     = 640
	labelW     = 150 // left column for variant names
	valueW     = 70  // right margin for the median's text
	rowH       = 26
	chartTop   = 34
	axisH      = 42
	plotLeft   = labelW
	plotRight  = chartW - valueW
	barPadding = 5
)

// WriteBarChart writes a horizontal bar chart as a standalone SVG element: one row per bar in
// the given order, the bar to the median, a whisker from min to max, the axis from 0 with
// "nice" ticks and the unit under it. The output depends only on the arguments (numbers are
// printed with fixed precision), so it can be golden-tested.
func WriteBarChart(w io.Writer, title, unit string, higherBetter bool, bars []Bar) error {
	h := chartTop + rowH*len(bars) + axisH
	top := 0.0
	for _, b := range bars {
		top = math.Max(top, math.Max(b.Max, b.Median))
	}
	ticks := niceTicks(top)
	scaleMax := ticks[len(ticks)-1]
	x := func(v float64) float64 {
		if scaleMax <= 0 {
			return plotLeft
		}
		return plotLeft + (plotRight-plotLeft)*math.Max(0, v)/scaleMax
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="100%%" role="img" aria-label="%s" font-family="sans-serif" font-size="13">`+"\n",
		chartW, h, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="0" y="18" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	axisY := chartTop + rowH*len(bars)
	// Grid lines and tick labels.
	for _, t := range ticks {
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#ddd"/>`+"\n", num(x(t)), chartTop-4, num(x(t)), axisY)
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", num(x(t)), axisY+16, tickText(t))
	}
	better := "lower is better"
	if higherBetter {
		better = "higher is better"
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">%s (%s)</text>`+"\n",
		(plotLeft+plotRight)/2, axisY+34, html.EscapeString(unit), better)
	for i, bar := range bars {
		y := chartTop + rowH*i
		mid := float64(y) + rowH/2.0
		fill := ratingColors[bar.Rating]
		if fill == "" {
			fill = "#999"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", labelW-8, num(mid), html.EscapeString(bar.Label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%s" height="%d" fill="%s"><title>%s: median %s %s, min %s, max %s, n=%d, %s</title></rect>`+"\n",
			plotLeft, y+barPadding, num(x(bar.Median)-plotLeft), rowH-2*barPadding, fill,
			html.EscapeString(bar.Label), format(bar.Median), html.EscapeString(unit), format(bar.Min), format(bar.Max), bar.N, bar.Rating)
		if bar.N > 1 && bar.Max > bar.Min {
			fmt.Fprintf(&b, `<path d="M%s %sH%s M%s %sV%s M%s %sV%s" stroke="#222" stroke-width="1.5" fill="none"/>`+"\n",
				num(x(bar.Min)), num(mid), num(x(bar.Max)),
				num(x(bar.Min)), num(mid-5), num(mid+5),
				num(x(bar.Max)), num(mid-5), num(mid+5))
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" dominant-baseline="middle">%s</text>`+"\n", num(math.Max(x(bar.Max), x(bar.Median))+6), num(mid), format(bar.Median))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", plotLeft, axisY, plotRight, axisY)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceTicks returns 0 and evenly spaced ticks of 1, 2 or 5 × 10^k reaching at least top.
func niceTicks(top float64) []float64 {
	if top <= 0 || math.IsNaN(top) || math.IsInf(top, 0) {
		return []float64{0, 1}
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []float64
	for i := 0; ; i++ {
		t := step * float64(i)
		ts = append(ts, t)
		if t >= top*(1-1e-12) {
			break
		}
	}
	return ts
}

// tickText prints a tick without spurious digits (0.30000000000000004 → 0.3).
func tickText(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// num prints a coordinate with one decimal, which keeps the SVG small and deterministic.
func num(v float64) string {
	return strconv.FormatFloat(v, 'f', 1, 64)
}
