package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/figure"
)

// File names written by WriteFiles.
const (
	JSONFile       = "probe.json"
	ReadSweepSVG   = "read-sweep.svg"
	AlignSVG       = "align.svg"
	WriteSweepSVG  = "write-sweep.svg"
	SummaryTxtFile = "probe.txt"
)

// Load reads a probe.json.
func Load(path string) (*Result, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "probe.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read probe result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s has schema %q; this fsbench reads %q: probe again", path, r.Schema, Schema)
	}
	return &r, nil
}

// WriteFiles writes probe.json, probe.txt (the summary) and the SVG charts into dir and
// returns their paths.
func WriteFiles(dir string, r *Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	var sum bytes.Buffer
	if err := WriteSummary(&sum, r); err != nil {
		return nil, err
	}
	files := map[string][]byte{JSONFile: append(js, '\n'), SummaryTxtFile: sum.Bytes()}
	var b bytes.Buffer
	writeSweepChart(&b, "Read time per request vs block size", r.ReadSweep, nil)
	files[ReadSweepSVG] = bytes.Clone(b.Bytes())
	b.Reset()
	writeAlignChart(&b, r.Align, r.Estimates.AU.Value)
	files[AlignSVG] = bytes.Clone(b.Bytes())
	if len(r.WriteSweep) > 0 {
		b.Reset()
		writeSweepChart(&b, "Write throughput vs block size (sequential, gapped)", r.WriteSweep, r.GappedSweep)
		files[WriteSweepSVG] = bytes.Clone(b.Bytes())
	}
	var paths []string
	for _, name := range []string{JSONFile, SummaryTxtFile, ReadSweepSVG, AlignSVG, WriteSweepSVG} {
		data, ok := files[name]
		if !ok {
			continue
		}
		p := filepath.Join(dir, name)
		tmp := p + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return paths, fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.Rename(tmp, p); err != nil {
			return paths, fmt.Errorf("write %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// WriteSummary prints the human summary: each estimate with its evidence, then the tables.
func WriteSummary(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "probe of %s (%s, %s, logical block %d B, O_DIRECT %v), %.1f s\n", r.Device, r.Kind, formatSize(r.SizeBytes), r.BlockSize, r.DirectIO, float64(r.DurationNs)/1e9)
	if id := r.Identity; id != nil {
		var parts []string
		for _, k := range []string{"name", "model", "vendor", "manfid", "oemid", "date", "type", "preferred_erase_size"} {
			if v := id.Device[k]; v != "" {
				parts = append(parts, k+"="+v)
			}
		}
		for _, k := range []string{"rotational", "scheduler", "discard_max_bytes"} {
			if v := id.Queue[k]; v != "" {
				parts = append(parts, k+"="+v)
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, "identity: %s\n", strings.Join(parts, " "))
		}
		if id.Loop != nil {
			fmt.Fprintf(&b, "loop device over %s (direct I/O %v)\n", id.Loop.BackingFile, id.Loop.DirectIO)
		}
	}
	fmt.Fprintf(&b, "USB: %v\n", yesNo(r.USB.Through))
	switch {
	case r.EMMC.Skipped != "":
		fmt.Fprintf(&b, "eMMC health: skipped: %s\n", r.EMMC.Skipped)
	case r.EMMC.Summary == "":
		b.WriteString("eMMC health: not checked\n")
	default:
		fmt.Fprintf(&b, "eMMC health: %s\n", r.EMMC.Summary)
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	b.WriteString("\nestimates:\n")
	est := []struct {
		name  string
		e     Estimate
		count bool
		write bool
	}{
		{"AU / erase block", r.Estimates.AU, false, false},
		{"page (read)", r.Estimates.ReadPage, false, false},
		{"page (write)", r.Estimates.Page, false, true},
		{"open AUs", r.Estimates.OpenAUs, true, true},
		{"FAT area", r.Estimates.FATArea, false, true},
	}
	for _, x := range est {
		if x.write && !r.Write {
			fmt.Fprintf(&b, "  %-17s not measured (needs --write --destroy DEVICE)\n", x.name)
			continue
		}
		fmt.Fprintf(&b, "  %-17s %s\n", x.name, EstimateText(x.e, x.count))
		if x.e.Evidence != "" {
			fmt.Fprintf(&b, "  %-17s   %s: %s\n", "", x.e.Method, x.e.Evidence)
		}
	}
	b.WriteString("\nread sweep:\n  block        reads    median ms     MB/s\n")
	for _, p := range r.ReadSweep {
		fmt.Fprintf(&b, "  %-10s %7d %12.3f %8.2f\n", formatSize(p.BlockSize), p.Count, float64(p.MedianNs)/1e6, p.MBps)
	}
	fmt.Fprintf(&b, "\nalignment test (reads of %s, fastest of %d; threshold %.1f µs, noise σ %.1f µs):\n  align        pre µs    on µs  post µs  diff µs\n",
		formatSize(r.Align.ReadSize), r.Align.Tries, r.Align.ThresholdNs/1e3, r.Align.NoiseNs/1e3)
	for i := len(r.Align.Points) - 1; i >= 0; i-- {
		p := r.Align.Points[i]
		mark := ""
		for _, s := range r.Align.Steps {
			if s == p.Align {
				mark = "  <- step"
			}
		}
		if slices.Contains(r.Align.Rechecked, p.Align) {
			mark += "  (read again)"
		}
		fmt.Fprintf(&b, "  %-10s %8.1f %8.1f %8.1f %8.1f%s\n", formatSize(p.Align), p.PreNs/1e3, p.OnNs/1e3, p.PostNs/1e3, p.DiffNs/1e3, mark)
	}
	if r.Write {
		b.WriteString("\nwrite sweep:\n  block      sequential MB/s  gapped MB/s\n")
		for i, p := range r.WriteSweep {
			g := 0.0
			if i < len(r.GappedSweep) {
				g = r.GappedSweep[i].MBps
			}
			fmt.Fprintf(&b, "  %-10s %15.2f %12.2f\n", formatSize(p.BlockSize), p.MBps, g)
		}
		b.WriteString("\nopen-AU test:\n")
		for _, p := range r.OpenAU {
			fmt.Fprintf(&b, "  %d AU(s) in turn, %s chunks: %.2f MB/s\n", p.AUs, formatSize(p.Chunk), p.MBps)
		}
		b.WriteString("\nFAT-area test (random 4 KiB writes):\n")
		for _, p := range r.FATArea {
			fmt.Fprintf(&b, "  AU at %-10s %.3f MB/s\n", formatSize(p.Offset), p.MBps)
		}
		fmt.Fprintf(&b, "discard: %s\n", orDash(r.DiscardWorks))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// EstimateText is an estimate in a few words: "4 MiB (high confidence)".
func EstimateText(e Estimate, count bool) string {
	if e.Confidence == None || e.Value == 0 && !count {
		return "not found"
	}
	v := formatSize(e.Value)
	if count {
		v = fmt.Sprint(e.Value)
	}
	if e.AtLeast {
		v = "at least " + v
	}
	return fmt.Sprintf("%s (%s confidence)", v, e.Confidence)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Chart geometry.
const (
	svgW, svgH         = 640, 360
	plotL, plotR       = 70, 20
	plotT, plotB       = 40, 50
	plotWidth, plotHgt = svgW - plotL - plotR, svgH - plotT - plotB
)

type series struct {
	name  string
	color string
	xs    []uint64
	ys    []float64
}

// writeLineChart draws series over a log2 x axis (sizes) and a linear y axis from 0.
func writeLineChart(w io.Writer, title, yLabel string, ss []series, markX uint64, markLabel string) {
	var lo, hi uint64
	top := 0.0
	for _, s := range ss {
		for i, x := range s.xs {
			if lo == 0 || x < lo {
				lo = x
			}
			hi = max(hi, x)
			top = max(top, s.ys[i])
		}
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", svgW, svgH)
	fmt.Fprintf(w, `<title>%s</title><rect width="%d" height="%d" fill="#fff"/>`+"\n", html.EscapeString(title), svgW, svgH)
	fmt.Fprintf(w, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", plotL, html.EscapeString(title))
	if lo == 0 || top <= 0 {
		fmt.Fprintf(w, `<text x="%d" y="%d">no data</text></svg>`+"\n", plotL, svgH/2)
		return
	}
	top *= 1.1
	span := math.Max(math.Log2(float64(hi))-math.Log2(float64(lo)), 1)
	xpos := func(x uint64) float64 {
		return plotL + (math.Log2(float64(x))-math.Log2(float64(lo)))/span*plotWidth
	}
	ypos := func(y float64) float64 { return plotT + plotHgt - y/top*plotHgt }
	// axes and ticks
	fmt.Fprintf(w, `<path d="M%d %d V%d H%d" stroke="#000" fill="none"/>`+"\n", plotL, plotT, plotT+plotHgt, plotL+plotWidth)
	every := max(1, int(span)/10)
	i := 0
	for x := lo; ; x *= 2 {
		if i%every == 0 {
			fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xpos(x), plotT+plotHgt+15, bytesize.Label(x))
		}
		i++
		// Stop before the tick past hi. Not "x <= hi" in the loop condition: with hi of 2^63
		// or more (a probe.json says what it likes) x*2 wraps to 0 and the loop never ended.
		if x > hi/2 {
			break
		}
	}
	for k := 0; k <= 4; k++ {
		y := top / 1.1 * float64(k) / 4
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text><path d="M%d %.1f H%d" stroke="#ddd"/>`+"\n", plotL-5, ypos(y)+4, figure.Format(y), plotL, ypos(y), plotL+plotWidth)
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle">block size / alignment (log2 scale)</text>`+"\n", plotL+plotWidth/2, svgH-10)
	fmt.Fprintf(w, `<text x="15" y="%d" transform="rotate(-90 15 %d)" text-anchor="middle">%s</text>`+"\n", plotT+plotHgt/2, plotT+plotHgt/2, html.EscapeString(yLabel))
	if markX > 0 && markX >= lo && markX <= hi {
		fmt.Fprintf(w, `<path d="M%.1f %d V%d" stroke="#d73027" stroke-dasharray="4 3"/><text x="%.1f" y="%d" fill="#d73027">%s</text>`+"\n",
			xpos(markX), plotT, plotT+plotHgt, xpos(markX)+4, plotT+12, html.EscapeString(markLabel))
	}
	for si, s := range ss {
		var d strings.Builder
		for i, x := range s.xs {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, xpos(x), ypos(s.ys[i]))
		}
		fmt.Fprintf(w, `<path d="%s" stroke="%s" stroke-width="2" fill="none"/>`+"\n", strings.TrimSpace(d.String()), s.color)
		for i, x := range s.xs {
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s: %s</title></circle>`+"\n", xpos(x), ypos(s.ys[i]), s.color, formatSize(x), figure.Format(s.ys[i]))
		}
		if s.name != "" {
			fmt.Fprintf(w, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", plotL+plotWidth-150, plotT+15+15*si, s.color, html.EscapeString(s.name))
		}
	}
	io.WriteString(w, "</svg>\n")
}

func writeSweepChart(w io.Writer, title string, seq, gapped []SweepPoint) {
	if gapped == nil {
		// Reads: time per request in ms against block size.
		s := series{color: "#3366cc"}
		for _, p := range seq {
			s.xs = append(s.xs, p.BlockSize)
			s.ys = append(s.ys, float64(p.MedianNs)/float64(time.Millisecond))
		}
		writeLineChart(w, title, "median time per read (ms)", []series{s}, 0, "")
		return
	}
	a := series{name: "sequential", color: "#3366cc"}
	for _, p := range seq {
		a.xs, a.ys = append(a.xs, p.BlockSize), append(a.ys, p.MBps)
	}
	b := series{name: "gapped (write one, skip one)", color: "#dc3912"}
	for _, p := range gapped {
		b.xs, b.ys = append(b.xs, p.BlockSize), append(b.ys, p.MBps)
	}
	writeLineChart(w, title, "MB/s", []series{a, b}, 0, "")
}

func writeAlignChart(w io.Writer, t AlignTest, au uint64) {
	s := series{color: "#3366cc"}
	for _, p := range t.Points {
		s.xs = append(s.xs, p.Align)
		s.ys = append(s.ys, math.Max(p.DiffNs/1e3, 0))
	}
	label := ""
	if au > 0 {
		label = "AU estimate " + formatSize(au)
	}
	writeLineChart(w, "Alignment test: extra read time across boundaries", "diff = on − (pre+post)/2 (µs)", []series{s}, au, label)
}
