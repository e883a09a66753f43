// Package report turns results into what a person reads: for now the terminal summary table
// (variants × tests, medians with units) and the list of what was skipped or failed.
package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// column is how one test is shown: its header and the scale from the recorded unit.
type column struct {
	test   string
	header string
	unit   string  // shown under the header
	scale  float64 // recorded value × scale = shown value
	// extra, when set, names the Extra figure shown instead of the headline value.
	extra string
}

// columns in suite order; a test that is not in the results is left out.
var columns = []column{
	{"mkfs", "mkfs", "s", 1, ""},
	{"module_load", "modload", "ms", 1e3, ""},
	{"mount", "mount", "ms", 1e3, ""},
	{"mount_mem", "mnt-mem", "KiB", 1.0 / 1024, ""},
	// Space as a share of the data stored: read-write variants hold 5 copies of the dataset,
	// images one, so bytes alone would not compare. The bytes are in results.json.
	{"used_space", "space", "% data", 100, "used_per_logical"},
	{"write", "write", "s", 1, ""},
	{"read", "read", "s", 1, ""},
	{"read_remove_write", "rd-rm-wr", "s", 1, ""},
	{"remove", "remove", "s", 1, ""},
	{"video_write", "vid-wr", "s", 1, ""},
	{"video_read", "vid-rd", "s", 1, ""},
}

// Summary writes the table of medians and, below it, skipped variants and failed cells.
func Summary(w io.Writer, r *results.Run) error {
	var cols []column
	present := map[string]bool{}
	for _, m := range r.Measurements {
		present[m.Test] = true
	}
	for _, c := range columns {
		if present[c.test] {
			cols = append(cols, c)
		}
	}
	var ran, skipped []results.Variant
	for _, v := range r.Variants {
		if v.Status == results.Skipped {
			skipped = append(skipped, v)
		} else {
			ran = append(ran, v)
		}
	}

	rows := [][]string{{"variant"}, {""}}
	for _, c := range cols {
		rows[0] = append(rows[0], c.header)
		rows[1] = append(rows[1], c.unit)
	}
	reps := 0
	for _, v := range ran {
		row := []string{v.Name}
		for _, c := range cols {
			cell, n := cellText(r, v.Name, c)
			reps = max(reps, n)
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	if len(ran) > 0 {
		writeTable(w, rows)
		fmt.Fprintf(w, "\nmedians of up to %d repetitions; min and max in results.csv. n/a (ro): read-only filesystem.\n", reps)
	}
	if len(skipped) > 0 {
		fmt.Fprintln(w, "\nskipped variants:")
		for _, v := range skipped {
			fmt.Fprintf(w, "  %s: %s\n", v.Name, v.Reason)
		}
	}
	var failed []string
	for _, m := range r.Measurements {
		if m.Status == results.Failed {
			failed = append(failed, fmt.Sprintf("  %s rep %d %s: %s", m.Variant, m.Rep, m.Test, m.Error))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "\nfailed cells:")
		fmt.Fprintln(w, strings.Join(failed, "\n"))
	}
	return nil
}

// cellText is the text of one cell and the number of repetitions behind it.
func cellText(r *results.Run, variant string, c column) (string, int) {
	vals := r.Values(variant, c.test)
	if c.extra != "" {
		vals = r.ExtraValues(variant, c.test, c.extra)
	}
	if len(vals) > 0 {
		s := stats.Summarize(vals)
		return format(s.Median * c.scale), s.N
	}
	var failed, na, notRun bool
	var note string
	for _, m := range r.Cell(variant, c.test) {
		switch m.Status {
		case results.Failed:
			failed = true
		case results.NA:
			na, note = true, m.Note
		case results.NotRun:
			notRun = true
		}
	}
	switch {
	case failed:
		return "FAILED", 0
	case notRun:
		return "not run", 0
	case na && note == "read-only filesystem":
		return "n/a (ro)", 0
	case na && note != "":
		return note, 0
	case na:
		return "n/a", 0
	}
	return "-", 0
}

// format shows three significant digits without exponents.
func format(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

// writeTable aligns rows: the first column left, the others right.
func writeTable(w io.Writer, rows [][]string) {
	widths := map[int]int{}
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, c := range row {
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", widths[0]-len(c)))
				continue
			}
			b.WriteString("  " + strings.Repeat(" ", widths[i]-len(c)) + c)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
