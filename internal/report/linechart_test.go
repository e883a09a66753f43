package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/testkit/golden"
)

// TestWriteLineChart: a suite's line chart is a well-formed SVG with a polyline per line, in its
// group's colour, the groups in the legend, and the same bytes every time (golden file).
func TestWriteLineChart(t *testing.T) {
	c := suites.Chart{Title: "write speed <round by round>", X: "round", Y: "MB/s", Lines: []suites.Line{
		{Label: "ext4", Name: "ext4 #1", Group: 0, X: []float64{1, 2, 3}, Y: []float64{52.5, 48, 47.25}},
		{Label: "ext4", Name: "ext4 #2", Group: 0, X: []float64{1, 2}, Y: []float64{50, 49}},
		{Label: "btrfs", Name: "btrfs #1", Group: 1, X: []float64{1, 2, 3, 4}, Y: []float64{40, 41, 39, 12}},
	}}
	var b bytes.Buffer
	if err := WriteLineChart(&b, c); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b.Bytes(), new(struct{})); err != nil {
		t.Fatalf("not well-formed XML: %v", err)
	}
	s := b.String()
	if strings.Count(s, "<polyline") != 3 || strings.Count(s, lineColors[0]) != 3 || !strings.Contains(s, ">btrfs<") || !strings.Contains(s, "&lt;round by round&gt;") {
		t.Errorf("chart lacks its lines, colours, legend or escaping:\n%s", s)
	}
	golden.Check(t, "linechart.svg", b.Bytes())
}
