package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/verdict"
)

// SizeCount is the number of requests whose size is in [Bytes, 2×Bytes).
type SizeCount struct {
	Bytes uint64
	Count uint64
}

// SizeRow is one variant's request-size histogram, buckets smallest first.
type SizeRow struct {
	Label   string
	Buckets []SizeCount
}

// sizePalette colours size buckets by log2 of their size, from 512 bytes (and below) to 1 MiB
// (and above): viridis, which stays ordered in grey print and for colour-blind readers. The
// colour depends on the size only, so a bucket looks the same in every row.
var sizePalette = []string{
	"#440154", "#482173", "#433e85", "#38588c", "#2d708e", "#25858e",
	"#1e9b8a", "#2bb07f", "#51c56a", "#85d54a", "#c2df23", "#fde725",
}

func sizeColor(b uint64) (fill, ink string) {
	i := bits.Len64(b) - 1 - 9 // 512 bytes is index 0
	i = max(0, min(i, len(sizePalette)-1))
	ink = "#fff"
	if i >= 6 {
		ink = "#000"
	}
	return sizePalette[i], ink
}

// Size-chart geometry, in SVG user units, on the bar chart's grid.
const (
	legendItemW = 52
	legendLineH = 18
	legendTop   = 30
)

// WriteSizeChart writes a request-size histogram as a standalone SVG element: one 100 %
// stacked bar per row (in the given order) split into the share of requests in each size
// bucket, a legend of the buckets (a bucket holds the sizes from its label to twice it), the
// share printed in every segment wide enough for it and the request count at the right. Like
// WriteBarChart its output depends only on the arguments.
func WriteSizeChart(w io.Writer, title string, rows []SizeRow) error {
	var sizes []uint64
	for _, r := range rows {
		for _, b := range r.Buckets {
			if b.Count > 0 && !slices.Contains(sizes, b.Bytes) {
				sizes = append(sizes, b.Bytes)
			}
		}
	}
	slices.Sort(sizes)
	perLine := chartW / legendItemW
	lines := max(1, (len(sizes)+perLine-1)/perLine)
	top := legendTop + lines*legendLineH + 8
	axisY := top + rowH*len(rows)
	h := axisY + axisH
	x := func(share float64) float64 { return plotLeft + (plotRight-plotLeft)*share }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="100%%" role="img" aria-label="%s" font-family="sans-serif" font-size="13">`+"\n",
		chartW, h, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="0" y="18" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, s := range sizes {
		lx, ly := (i%perLine)*legendItemW, legendTop+(i/perLine)*legendLineH
		fill, _ := sizeColor(s)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" dominant-baseline="middle">%s</text>`+"\n",
			lx, ly, fill, lx+16, ly+7, bytesize.Label(s))
	}
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#ddd"/>`+"\n", num(x(t)), top-4, num(x(t)), axisY)
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n", num(x(t)), axisY+16, tickText(100*t))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#333">%% of write requests, by size (bucket: its size up to twice it)</text>`+"\n",
		(plotLeft+plotRight)/2, axisY+34)
	for i, r := range rows {
		y := top + rowH*i
		mid := float64(y) + rowH/2.0
		var total uint64
		for _, c := range r.Buckets {
			total += c.Count
		}
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", labelW-8, num(mid), html.EscapeString(r.Label))
		var done uint64
		for _, c := range r.Buckets {
			if c.Count == 0 || total == 0 {
				continue
			}
			// Cumulative counts, not summed widths, place the segments, so that rounding
			// cannot leave a gap or overrun the 100 % line.
			x0 := x(float64(done) / float64(total))
			done += c.Count
			x1 := x(float64(done) / float64(total))
			share := float64(c.Count) / float64(total)
			fill, ink := sizeColor(c.Bytes)
			fmt.Fprintf(&b, `<rect x="%s" y="%d" width="%s" height="%d" fill="%s"><title>%s: %d of %d write requests (%s %%) of %s to %s</title></rect>`+"\n",
				num(x0), y+barPadding, num(x1-x0), rowH-2*barPadding, fill,
				html.EscapeString(r.Label), c.Count, total, format(100*share), bytesize.Format(c.Bytes), bytesize.Format(2*c.Bytes))
			if x1-x0 >= 30 {
				fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" dominant-baseline="middle" fill="%s" font-size="11">%.0f%%</text>`+"\n",
					num((x0+x1)/2), num(mid), ink, 100*share)
			}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%s" dominant-baseline="middle">n=%d</text>`+"\n", plotRight+6, num(mid), total)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", plotLeft, axisY, plotRight, axisY)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSizes sums, over the write tests of the non-warm-up successful repetitions, the write
// requests of each size bucket of each variant's traces; variants without any are left out.
func writeSizes(r *results.Run) []SizeRow {
	var out []SizeRow
	for _, v := range verdict.RanVariants(r) {
		by := map[uint64]uint64{}
		for _, m := range r.Measurements {
			if m.Variant != v.Name || m.Warmup || m.Status != results.OK || m.Trace == nil || !slices.Contains(verdict.WriteTests, m.Test) {
				continue
			}
			for _, b := range m.Trace.Summary.Sizes {
				if b.Writes > 0 {
					by[b.Bytes] += b.Writes
				}
			}
		}
		if len(by) == 0 {
			continue
		}
		row := SizeRow{Label: v.Name}
		for size, n := range by {
			row.Buckets = append(row.Buckets, SizeCount{Bytes: size, Count: n})
		}
		sort.Slice(row.Buckets, func(i, j int) bool { return row.Buckets[i].Bytes < row.Buckets[j].Bytes })
		out = append(out, row)
	}
	return out
}

// cardRow is one variant's wear figures on every replayed card profile, for the HTML table.
type cardRow struct {
	Variant string
	Cells   []cardCell
}

type cardCell struct {
	WA, Wear, Life string
}

// cardTable evaluates in-card write amplification, wear and lifetime of every variant on every
// replayed profile: medians as text ("" when a variant has none).
func cardTable(r *results.Run, cards []string, alpha float64) []cardRow {
	type three struct{ wa, wear, life verdict.Ranking }
	ts := make([]three, len(cards))
	for i, c := range cards {
		ts[i] = three{verdict.Evaluate(r, verdict.CardWAMetric(r, c), alpha), verdict.Evaluate(r, verdict.WearMetric(r, c), alpha), verdict.Evaluate(r, verdict.LifetimeMetric(r, c), alpha)}
	}
	med := func(t verdict.Ranking, v string) string {
		if c, ok := t.Cells[v]; ok && !math.IsNaN(c.Summary.Median) {
			return format(c.Summary.Median)
		}
		return ""
	}
	var out []cardRow
	for _, v := range verdict.RanVariants(r) {
		row := cardRow{Variant: v.Name}
		any := false
		for _, t := range ts {
			c := cardCell{WA: med(t.wa, v.Name), Wear: med(t.wear, v.Name), Life: med(t.life, v.Name)}
			any = any || c.WA != "" || c.Wear != ""
			row.Cells = append(row.Cells, c)
		}
		if any {
			out = append(out, row)
		}
	}
	return out
}
