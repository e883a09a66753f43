package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/fsbench/fsbench/internal/suites"
)

// lineColors tell the groups of a line chart apart (Okabe and Ito's palette, which stays
// distinct for colour-blind readers); each group's label is in the legend as well.
var lineColors = []string{"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442", "#000000"}

// Line-chart geometry, in SVG user units, on the bar chart's width.
const (
	lineLeft   = 60
	lineRight  = chartW - 20
	lineTop    = 50
	lineHeight = 240
)

// WriteLineChart writes a suite's line chart as a standalone SVG element: both axes from 0
// with "nice" ticks, one polyline per line in its group's colour (each with its name as a
// tooltip), and a legend of the groups. Like WriteBarChart its output depends only on c.
func WriteLineChart(w io.Writer, c suites.Chart) error {
	var xMax, yMax float64
	var groups []string
	for _, l := range c.Lines {
		for i := range l.X {
			xMax, yMax = math.Max(xMax, l.X[i]), math.Max(yMax, l.Y[i])
		}
		for len(groups) <= l.Group {
			groups = append(groups, "")
		}
		groups[l.Group] = l.Label
	}
	xt, yt := niceTicks(xMax), niceTicks(yMax)
	xs, ys := xt[len(xt)-1], yt[len(yt)-1]
	px := func(v float64) float64 { return lineLeft + (lineRight-lineLeft)*v/math.Max(xs, 1e-12) }
	py := func(v float64) float64 { return lineTop + lineHeight - lineHeight*v/math.Max(ys, 1e-12) }
	bottom := lineTop + lineHeight
	h := bottom + 48
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="100%%" role="img" aria-label="%s" font-family="sans-serif" font-size="13">`+"\n",
		chartW, h, html.EscapeString(c.Title))
	fmt.Fprintf(&b, `<text x="0" y="18" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(c.Title))
	for i, g := range groups {
		x := lineLeft + 130*i
		fmt.Fprintf(&b, `<rect x="%d" y="28" width="14" height="4" fill="%s"/><text x="%d" y="34">%s</text>`+"\n", x, lineColors[i%len(lineColors)], x+18, html.EscapeString(g))
	}
	for _, t := range yt {
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#ddd"/>`+"\n", lineLeft, num(py(t)), lineRight, num(py(t)))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle" fill="#333">%s</text>`+"\n", lineLeft-6, num(py(t)), tickText(t))
	}
	for _, t := range xt {
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", num(px(t)), bottom+16, tickText(t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", (lineLeft+lineRight)/2, bottom+36, html.EscapeString(c.X))
	fmt.Fprintf(&b, `<text x="12" y="%d" text-anchor="middle" fill="#333" transform="rotate(-90 12 %d)">%s</text>`+"\n", lineTop+lineHeight/2, lineTop+lineHeight/2, html.EscapeString(c.Y))
	for _, l := range c.Lines {
		if len(l.X) == 0 {
			continue
		}
		var pts []string
		for i := range l.X {
			pts = append(pts, num(px(l.X[i]))+","+num(py(l.Y[i])))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5" stroke-opacity="0.8"><title>%s</title></polyline>`+"\n",
			strings.Join(pts, " "), lineColors[l.Group%len(lineColors)], html.EscapeString(l.Name))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", lineLeft, bottom, lineRight, bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", lineLeft, lineTop, lineLeft, bottom)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
