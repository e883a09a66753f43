package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/figure"
)

// File names written by WriteSustainedFiles.
const (
	SustainedJSONFile = "sustained.json"
	SustainedTxtFile  = "sustained.txt"
	SustainedSVG      = "sustained.svg"
)

// WriteSustainedFiles writes sustained.json, sustained.txt (the summary) and the chart of the
// write rate against the position into dir, each through a temporary file renamed over it, and
// returns their paths.
func WriteSustainedFiles(dir string, r *SustainedResult) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	var sum, svg bytes.Buffer
	if err := WriteSustainedSummary(&sum, r); err != nil {
		return nil, err
	}
	writeSustainedChart(&svg, r)
	var paths []string
	for _, f := range []struct {
		name string
		data []byte
	}{{SustainedJSONFile, append(js, '\n')}, {SustainedTxtFile, sum.Bytes()}, {SustainedSVG, svg.Bytes()}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p+".tmp", f.data, 0o644); err != nil {
			return paths, fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			return paths, fmt.Errorf("write %s: %w", p, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// WriteSustainedSummary prints what the sustained test found, in words.
func WriteSustainedSummary(w io.Writer, r *SustainedResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sustained write of %s (%s), %s card: %s\n", r.Device, formatSize(r.SizeBytes), r.CardState, r.Prepared)
	f := r.First
	fmt.Fprintf(&b, "first pass: %s in %s writes, %.1f s, %d rate samples\n", formatSize(f.Bytes), formatSize(r.Block), float64(f.Ns)/1e9, len(f.Samples))
	if f.Cliff {
		fmt.Fprintf(&b, "  burst:       %s MB/s\n", figure.Format(f.BurstMBps))
		fmt.Fprintf(&b, "  cache:       %s (the rate drops there)\n", formatSize(r.CacheBytes))
		fmt.Fprintf(&b, "  after it:    %s MB/s (%.0f %% of the burst)\n", figure.Format(f.AfterMBps), 100*f.AfterMBps/f.BurstMBps)
	} else {
		fmt.Fprintf(&b, "  rate:        %s MB/s, no cache cliff\n", figure.Format(f.BurstMBps))
	}
	fmt.Fprintf(&b, "  longest write: %.1f ms\n", float64(f.MaxWriteNs)/1e6)
	if rec := r.Recovery; rec != nil {
		fmt.Fprintf(&b, "after %v left alone: %s written, ", time.Duration(r.IdleNs), formatSize(rec.Bytes))
		switch {
		case !f.Cliff:
			fmt.Fprintf(&b, "%s\n", passLine(rec))
		case r.RecoveredAtLeast:
			fmt.Fprintf(&b, "at least %s came back at %s MB/s (the pass ended first)\n", formatSize(r.RecoveredBytes), figure.Format(rec.BurstMBps))
		case r.RecoveredBytes > 0:
			fmt.Fprintf(&b, "%s of the cache came back (%s MB/s, then %s MB/s)\n", formatSize(r.RecoveredBytes), figure.Format(rec.BurstMBps), figure.Format(rec.AfterMBps))
		default:
			fmt.Fprintf(&b, "nothing came back: %s\n", passLine(rec))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSustainedChart draws the write rate against the position (linear) for each pass, over
// stretches of a 128th of the first pass (windows), in the style of the probe's other charts,
// with the cache found marked.
func writeSustainedChart(w io.Writer, r *SustainedResult) {
	title := "Sustained write: rate against position"
	passes := []struct {
		name, color string
		p           *Pass
	}{{"first pass (" + r.CardState + " card)", "#3366cc", &r.First}}
	if r.Recovery != nil {
		passes = append(passes, struct {
			name, color string
			p           *Pass
		}{fmt.Sprintf("after %v idle", time.Duration(r.IdleNs)), "#dc3912", r.Recovery})
	}
	var right uint64
	for _, ps := range passes {
		for _, s := range ps.p.Samples {
			right = max(right, s.End)
		}
	}
	top := 0.0
	for _, ps := range passes {
		for _, s := range windows(ps.p.Samples, right/128) {
			top = max(top, s.MBps)
		}
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", svgW, svgH)
	fmt.Fprintf(w, `<title>%s</title><rect width="%d" height="%d" fill="#fff"/>`+"\n", html.EscapeString(title), svgW, svgH)
	fmt.Fprintf(w, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", plotL, html.EscapeString(title))
	if right == 0 || top <= 0 {
		fmt.Fprintf(w, `<text x="%d" y="%d">no data</text></svg>`+"\n", plotL, svgH/2)
		return
	}
	top *= 1.1
	mib := float64(right) / (1 << 20)
	xpos := func(x uint64) float64 { return plotL + float64(x)/(1<<20)/mib*plotWidth }
	ypos := func(y float64) float64 { return plotT + plotHgt - y/top*plotHgt }
	fmt.Fprintf(w, `<path d="M%d %d V%d H%d" stroke="#000" fill="none"/>`+"\n", plotL, plotT, plotT+plotHgt, plotL+plotWidth)
	for k := 0; k <= 4; k++ {
		x := uint64(float64(right) * float64(k) / 4)
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xpos(x), plotT+plotHgt+15, formatSize(x))
		y := top / 1.1 * float64(k) / 4
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text><path d="M%d %.1f H%d" stroke="#ddd"/>`+"\n", plotL-5, ypos(y)+4, figure.Format(y), plotL, ypos(y), plotL+plotWidth)
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle">position written (from the start of the device)</text>`+"\n", plotL+plotWidth/2, svgH-10)
	fmt.Fprintf(w, `<text x="15" y="%d" transform="rotate(-90 15 %d)" text-anchor="middle">MB/s</text>`+"\n", plotT+plotHgt/2, plotT+plotHgt/2)
	if r.CacheBytes > 0 {
		fmt.Fprintf(w, `<path d="M%.1f %d V%d" stroke="#d73027" stroke-dasharray="4 3"/><text x="%.1f" y="%d" fill="#d73027">cache %s</text>`+"\n",
			xpos(r.CacheBytes), plotT, plotT+plotHgt, xpos(r.CacheBytes)+4, plotT+12, html.EscapeString(formatSize(r.CacheBytes)))
	}
	for i, ps := range passes {
		var d strings.Builder
		prev := uint64(0)
		for j, s := range windows(ps.p.Samples, right/128) {
			// A step per sample: its rate held from where the one before ended to its end.
			if j == 0 {
				fmt.Fprintf(&d, "M%.1f %.1f ", xpos(prev), ypos(s.MBps))
			} else {
				fmt.Fprintf(&d, "L%.1f %.1f ", xpos(prev), ypos(s.MBps))
			}
			fmt.Fprintf(&d, "L%.1f %.1f ", xpos(s.End), ypos(s.MBps))
			prev = s.End
		}
		fmt.Fprintf(w, `<path d="%s" stroke="%s" stroke-width="1.5" fill="none"/>`+"\n", strings.TrimSpace(d.String()), ps.color)
		fmt.Fprintf(w, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", plotL+plotWidth-200, plotT+plotHgt-20+15*i, ps.color, html.EscapeString(ps.name))
	}
	io.WriteString(w, "</svg>\n")
}

// windows merges consecutive samples into stretches of at least n bytes, for the chart: a card
// that folds its cache stalls every few megabytes, and single samples draw a comb of burst and
// stall instead of the rate a writer gets (sustained.json keeps every sample).
func windows(s []RateSample, n uint64) []RateSample {
	var out []RateSample
	var cur RateSample
	for _, v := range s {
		cur.Bytes += v.Bytes
		cur.Ns += v.Ns
		cur.End = v.End
		cur.MaxWriteNs = max(cur.MaxWriteNs, v.MaxWriteNs)
		if cur.Bytes >= n {
			cur.MBps = float64(cur.Bytes) / (float64(cur.Ns) / 1e9) / 1e6
			out = append(out, cur)
			cur = RateSample{}
		}
	}
	if cur.Bytes > 0 {
		cur.MBps = float64(cur.Bytes) / (float64(cur.Ns) / 1e9) / 1e6
		out = append(out, cur)
	}
	return out
}
