package suites

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/verdict"
)

// RateTable is the table of a suite whose tests are rates (bonnie, smallfiles, randio): per
// test and variant the median, its unit, the CPU share and the latency percentiles in ms, and
// notes (a test too fast to time prints bonnie++'s "+++++"). extra, when set, adds notes of
// the suite's own under the table (randio's application classes). It returns no table when r
// has none of the tests.
func RateTable(name, title string, tests []string, extra func(r *results.Run) []string) func(r *results.Run) []Table {
	return func(r *results.Run) []Table {
		t := Table{ID: "suite-" + name, Title: name + ": " + title, Text: name + ": " + title + " (medians; latencies in ms)",
			Columns: []Column{{Head: "test"}, {Head: "variant"}, {Head: "rate", PageHead: "median ↑", Num: true}, {Head: "unit"},
				{Head: "cpu %", PageHead: "CPU %", Num: true}, {Head: "p50", PageHead: "p50 ms", Num: true}, {Head: "p99", PageHead: "p99 ms", Num: true},
				{Head: "p99.9", PageHead: "p99.9 ms", Num: true}, {Head: "max", PageHead: "max ms", Num: true}, {Head: "note", PageOnly: true}}}
		for _, test := range tests {
			for _, v := range verdict.RanVariants(r) {
				if row, note, ok := rateRow(r, test, v.Name); ok {
					t.Rows = append(t.Rows, row)
					if note != "" && strings.Contains(note, "too fast") && !slices.Contains(t.TextNotes, test+" "+v.Name+": "+note) {
						t.TextNotes = append(t.TextNotes, test+" "+v.Name+": "+note)
					}
				}
			}
		}
		if len(t.Rows) == 0 {
			return nil
		}
		if extra != nil {
			t.Notes = extra(r)
		}
		return []Table{t}
	}
}

// rateRow is one test of one variant: medians over the repetitions; ok is false when the
// variant has no measurement of the test.
func rateRow(r *results.Run, test, variant string) (row []string, note string, ok bool) {
	cell := r.Cell(variant, test)
	if len(cell) == 0 {
		return nil, "", false
	}
	value := ""
	if med, ok := verdict.Median(r.Values(variant, test)); ok {
		value = figure.Format(med)
	} else {
		value = verdict.Status(r, variant, verdict.Metric{Tests: []string{test}})
		if strings.HasPrefix(value, "too fast") {
			value = "+++++" // as bonnie++ prints it; the note says how long it took
		}
	}
	cpu := ""
	if c, ok := verdict.Median(r.ExtraValues(variant, test, "cpu_pct")); ok {
		cpu = fmt.Sprintf("%.0f", c)
	}
	ms := func(key string) string {
		if v, ok := verdict.Median(r.ExtraValues(variant, test, key)); ok {
			return figure.Format(v * 1e3)
		}
		return ""
	}
	for _, m := range cell {
		if m.Note != "" && !m.Warmup {
			note = m.Note
			break
		}
	}
	return []string{test, variant, value, cell[0].Unit, cpu, ms("latency_p50_s"), ms("latency_p99_s"), ms("latency_p999_s"), ms("latency_max_s"), note}, note, true
}
