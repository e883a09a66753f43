package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// registered is what the registered suites add to the verdicts, the matrix and the charts.
func registered() []verdict.Suite { return suites.Verdicts() }

// suiteTables are the tables of every registered suite that r has, in the suites' order.
func suiteTables(r *results.Run) []suites.Table {
	var out []suites.Table
	for _, s := range suites.All() {
		if s.Tables != nil {
			out = append(out, s.Tables(r)...)
		}
	}
	return out
}

// writeSuiteTables draws the suites' tables in the terminal: the heading line, the columns
// that fit a line, then the notes.
func writeSuiteTables(w io.Writer, r *results.Run) {
	for _, t := range suiteTables(r) {
		fmt.Fprintf(w, "\n%s\n", t.Text)
		var head []string
		for _, c := range t.Columns {
			if !c.PageOnly {
				head = append(head, c.Head)
			}
		}
		rows := [][]string{head}
		for _, row := range t.Rows {
			var cells []string
			for i, c := range t.Columns {
				if !c.PageOnly && i < len(row) {
					cells = append(cells, row[i])
				}
			}
			rows = append(rows, cells)
		}
		writeTable(w, rows, plain)
		for _, n := range append(append([]string{}, t.Notes...), t.TextNotes...) {
			fmt.Fprintln(w, "  "+n)
		}
	}
}

// htmlSuite is a suite's table as the page draws it.
type htmlSuite struct {
	ID, Title, Caption string
	Columns            []htmlSuiteCell
	Rows               [][]htmlSuiteCell
	Notes              []string
	// Charts are the table's charts, drawn by WriteLineChart (which escapes every text).
	Charts []template.HTML
}

type htmlSuiteCell struct {
	Text string
	Num  bool
}

// htmlSuites are the suites' tables for the page: every column, the page's headers.
func htmlSuites(r *results.Run) ([]htmlSuite, error) {
	var out []htmlSuite
	for _, t := range suiteTables(r) {
		h := htmlSuite{ID: t.ID, Title: t.Title, Caption: t.Caption, Notes: t.Notes}
		for _, c := range t.Columns {
			head := c.PageHead
			if head == "" {
				head = c.Head
			}
			h.Columns = append(h.Columns, htmlSuiteCell{Text: head, Num: c.Num})
		}
		for _, row := range t.Rows {
			var cells []htmlSuiteCell
			for i, s := range row {
				cells = append(cells, htmlSuiteCell{Text: s, Num: i < len(t.Columns) && t.Columns[i].Num})
			}
			h.Rows = append(h.Rows, cells)
		}
		for _, c := range t.Charts {
			var svg bytes.Buffer
			if err := WriteLineChart(&svg, c); err != nil {
				return nil, err
			}
			h.Charts = append(h.Charts, template.HTML(svg.String()))
		}
		out = append(out, h)
	}
	return out, nil
}
