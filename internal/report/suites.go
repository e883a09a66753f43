package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/verdict"
)

// otherSuites are the suites whose tests are rates, shown per test rather than in the concern
// matrix, in the order the report shows them; the catalog gives their titles and tests.
var otherSuites = []string{catalog.SuiteBonnie, catalog.SuiteSmallFiles, catalog.SuiteRandIO}

// suiteRow is one test of one variant: medians over the repetitions.
type suiteRow struct {
	Test, Variant, Value, Unit, CPU, P50, P99, P999, Max, Note string
}

type suiteTable struct {
	Name, Title string
	Rows        []suiteRow
	Classes     []string // randio: the application class of each variant
}

func ms(r *results.Run, variant, test, key string) string {
	if v, ok := verdict.Median(r.ExtraValues(variant, test, key)); ok {
		return format(v * 1e3)
	}
	return ""
}

// suiteTables builds the tables of the other suites present in r.
func suiteTables(r *results.Run) []suiteTable {
	var out []suiteTable
	for _, name := range otherSuites {
		s := catalog.MustSuite(name)
		t := suiteTable{Name: s.Name, Title: s.Title}
		for _, test := range s.Tests {
			for _, v := range verdict.RanVariants(r) {
				cell := r.Cell(v.Name, test)
				if len(cell) == 0 {
					continue
				}
				row := suiteRow{Test: test, Variant: v.Name, Unit: cell[0].Unit}
				if med, ok := verdict.Median(r.Values(v.Name, test)); ok {
					row.Value = format(med)
				} else {
					row.Value = verdict.Status(r, v.Name, verdict.Metric{Tests: []string{test}})
					if strings.HasPrefix(row.Value, "too fast") {
						row.Value = "+++++" // as bonnie++ prints it; the note says how long it took
					}
				}
				if c, ok := verdict.Median(r.ExtraValues(v.Name, test, "cpu_pct")); ok {
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
		if s.Name == catalog.SuiteRandIO {
			t.Classes = classes(r)
		}
		out = append(out, t)
	}
	return out
}

// classes says, per variant, which SD application class (catalog.AppClasses: A1, A2) the
// medians of the randio tests meet (A2 implies A1).
func classes(r *results.Run) []string {
	tests := catalog.MustSuite(catalog.SuiteRandIO).Tests
	cls := catalog.AppClasses()
	var out []string
	for _, v := range verdict.RanVariants(r) {
		pass := make([]bool, len(cls))
		for i := range pass {
			pass[i] = true
		}
		var missing []string
		for _, test := range tests {
			med, ok := verdict.Median(r.Values(v.Name, test))
			if !ok {
				missing = append(missing, test)
				continue
			}
			for i, c := range cls {
				pass[i] = pass[i] && med >= c.Min[test]
			}
		}
		if len(missing) == len(tests) {
			continue
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("%s: no class (no figure for %s)", v.Name, strings.Join(missing, ", ")))
			continue
		}
		out = append(out, v.Name+": "+classVerdict(cls, pass))
	}
	return out
}

// classVerdict says which classes passed: "A2 pass (and A1)" when the highest did (it implies
// the lower ones), else each class's pass or fail, lowest first ("A1 pass, A2 fail").
func classVerdict(cls []catalog.AppClass, pass []bool) string {
	last := len(cls) - 1
	if pass[last] {
		var lower []string
		for _, c := range cls[:last] {
			lower = append(lower, c.Name)
		}
		return fmt.Sprintf("%s pass (and %s)", cls[last].Name, strings.Join(lower, ", "))
	}
	var parts []string
	for i, c := range cls {
		word := "fail"
		if pass[i] {
			word = "pass"
		}
		parts = append(parts, c.Name+" "+word)
	}
	return strings.Join(parts, ", ")
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

// writePowerCutTable prints the power-cut detail in the terminal summary.
func writePowerCutTable(w io.Writer, r *results.Run) {
	t := verdict.PowerCutDetail(r)
	if t == nil {
		return
	}
	fmt.Fprintf(w, "\npower cuts (card model %s): %s:\n", t.Model, t.Caption)
	writeTableLeft(w, append([][]string{t.Header}, t.Rows...), 1, func(_, _ int, s string) string { return s })
}
