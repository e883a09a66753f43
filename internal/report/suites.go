package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// otherSuite is a suite whose tests are rates (every unit higher is better): bonnie,
// smallfiles, randio. Their figures are shown per test rather than in the concern matrix.
type otherSuite struct {
	Name, Title string
	Tests       []string
}

var otherSuites = []otherSuite{
	{"bonnie", "bonnie++'s tests (Pandora SD-card study)", []string{"bonnie_write", "bonnie_rewrite", "bonnie_read", "bonnie_seeks", "bonnie_seq_create", "bonnie_seq_stat", "bonnie_seq_delete", "bonnie_rand_create", "bonnie_rand_stat", "bonnie_rand_delete"}},
	{"smallfiles", "large file and small fsync'ed files (Dreamplug tuning)", []string{"smallfiles_large", "smallfiles_fsync", "smallfiles_dirsync"}},
	{"randio", "SD card application-class jobs (O_DIRECT, iodepth 1)", []string{"randio_seq_write", "randio_rand_write", "randio_rand_read"}},
}

// HigherIsBetter reports whether a headline unit is a rate (higher is better): MB/s, KiB/s,
// files/s, seeks/s, IOPS. Seconds and bytes are lower-is-better.
func HigherIsBetter(unit string) bool {
	return strings.HasSuffix(unit, "/s") || unit == "IOPS"
}

// suiteRow is one test of one variant: medians over the repetitions.
type suiteRow struct {
	Test, Variant, Value, Unit, CPU, P50, P99, P999, Max, Note string
}

type suiteTable struct {
	Name, Title string
	Rows        []suiteRow
	Classes     []string // randio: the application class of each variant
}

func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	return stats.Summarize(vs).Median, true
}

func ms(r *results.Run, variant, test, key string) string {
	if v, ok := median(r.ExtraValues(variant, test, key)); ok {
		return format(v * 1e3)
	}
	return ""
}

// suiteTables builds the tables of the other suites present in r.
func suiteTables(r *results.Run) []suiteTable {
	var out []suiteTable
	for _, s := range otherSuites {
		t := suiteTable{Name: s.Name, Title: s.Title}
		for _, test := range s.Tests {
			for _, v := range ranVariants(r) {
				cell := r.Cell(v.Name, test)
				if len(cell) == 0 {
					continue
				}
				row := suiteRow{Test: test, Variant: v.Name, Unit: cell[0].Unit}
				if med, ok := median(r.Values(v.Name, test)); ok {
					row.Value = format(med)
				} else {
					row.Value = status(r, v.Name, metric{tests: []string{test}})
					if strings.HasPrefix(row.Value, "too fast") {
						row.Value = "+++++" // as bonnie++ prints it; the note says how long it took
					}
				}
				if c, ok := median(r.ExtraValues(v.Name, test, "cpu_pct")); ok {
					row.CPU = fmt.Sprintf("%.0f", c)
				}
				row.P50, row.P99 = ms(r, v.Name, test, "latency_p50_s"), ms(r, v.Name, test, "latency_p99_s")
				row.P999, row.Max = ms(r, v.Name, test, "latency_p999_s"), ms(r, v.Name, test, "latency_max_s")
				for _, m := range cell {
					if m.Note != "" && !m.Warmup {
						row.Note = m.Note
						break
					}
				}
				t.Rows = append(t.Rows, row)
			}
		}
		if len(t.Rows) == 0 {
			continue
		}
		if s.Name == "randio" {
			t.Classes = classes(r)
		}
		out = append(out, t)
	}
	return out
}

// classes says, per variant, which SD application class the medians of the three randio tests
// meet (A2 implies A1).
func classes(r *results.Run) []string {
	mins := map[string][2]float64{"randio_seq_write": {10, 10}, "randio_rand_write": {500, 2000}, "randio_rand_read": {1500, 4000}}
	var out []string
	for _, v := range ranVariants(r) {
		pass := [2]bool{true, true}
		var missing []string
		for _, test := range []string{"randio_seq_write", "randio_rand_write", "randio_rand_read"} {
			med, ok := median(r.Values(v.Name, test))
			if !ok {
				missing = append(missing, test)
				continue
			}
			for i := range pass {
				pass[i] = pass[i] && med >= mins[test][i]
			}
		}
		switch {
		case len(missing) == 3:
			continue
		case len(missing) > 0:
			out = append(out, fmt.Sprintf("%s: no class (no figure for %s)", v.Name, strings.Join(missing, ", ")))
		case pass[1]:
			out = append(out, v.Name+": A2 pass (and A1)")
		case pass[0]:
			out = append(out, v.Name+": A1 pass, A2 fail")
		default:
			out = append(out, v.Name+": A1 fail, A2 fail")
		}
	}
	return out
}

// writeSuiteTables writes the other suites' tables to the terminal.
func writeSuiteTables(w io.Writer, r *results.Run) {
	for _, t := range suiteTables(r) {
		fmt.Fprintf(w, "\n%s: %s (medians; latencies in ms)\n", t.Name, t.Title)
		rows := [][]string{{"test", "variant", "rate", "unit", "cpu %", "p50", "p99", "p99.9", "max"}}
		var notes []string
		for _, row := range t.Rows {
			rows = append(rows, []string{row.Test, row.Variant, row.Value, row.Unit, row.CPU, row.P50, row.P99, row.P999, row.Max})
			if row.Note != "" && !slices.Contains(notes, row.Note) && strings.Contains(row.Note, "too fast") {
				notes = append(notes, row.Test+" "+row.Variant+": "+row.Note)
			}
		}
		writeTable(w, rows, func(_, _ int, s string) string { return s })
		for _, c := range t.Classes {
			fmt.Fprintln(w, "  class "+c)
		}
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
}
