package report

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// powerRun is a run of the powercut suite with one repetition per variant: safe is the share
// of cuts survived whole, lost the cuts (of 20) that broke a promise.
func powerRun(figures map[string][2]int) *results.Run {
	r := &results.Run{}
	for _, name := range []string{"ext4", "ext2"} {
		f, ok := figures[name]
		if !ok {
			continue
		}
		r.Variants = append(r.Variants, results.Variant{Name: name, FS: name})
		safe := float64(f[0])
		r.Measurements = append(r.Measurements, results.Measurement{Variant: name, Test: catalog.PowerCut, Rep: 1, Status: results.OK,
			Value: &safe, Unit: catalog.Percent, PowerCut: &results.PowerCut{Cuts: 20, AckLossCuts: results.Proportion{Count: f[1], Of: 20, Pct: float64(f[1]) * 5}, AckedLost: f[1]}})
	}
	return r
}

func TestPowerLossVerdict(t *testing.T) {
	tests := []struct {
		name    string
		figures map[string][2]int
		winner  string
		note    string
	}{
		{"one loses data", map[string][2]int{"ext4": {95, 0}, "ext2": {10, 6}}, "ext4", "ext2 lost acknowledged data in 6 of 20 cuts (30.0 %, 95 % CI 14.5-51.9 %"},
		{"none loses data", map[string][2]int{"ext4": {100, 0}, "ext2": {40, 0}}, "ext4", "no variant lost acknowledged data"},
		// At the same share of whole cuts the one that broke fewer promises wins, not the
		// first name.
		{"a tie broken by lost data", map[string][2]int{"ext4": {90, 1}, "ext2": {90, 3}}, "ext4", "ext2 lost acknowledged data in 3 of 20 cuts"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v Verdict
			for _, x := range Verdicts(powerRun(tc.figures), 0) {
				if x.Priority == "power-loss safety" {
					v = x
				}
			}
			if v.Winner != tc.winner || !strings.Contains(v.Note, tc.note) {
				t.Errorf("verdict %+v, want winner %s and a note with %q", v, tc.winner, tc.note)
			}
		})
	}
}

// TestCompareAckLossIsRegression: more cuts losing acknowledged data is a regression even
// with one repetition per side, where no significance test can tell.
func TestCompareAckLossIsRegression(t *testing.T) {
	tests := []struct {
		name     string
		a, b     [2]int
		regressd bool
	}{
		{"new loss", [2]int{100, 0}, [2]int{90, 2}, true},
		{"same loss", [2]int{90, 2}, [2]int{90, 2}, false},
		{"less loss", [2]int{90, 2}, [2]int{100, 0}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := CompareRuns(powerRun(map[string][2]int{"ext4": tc.a}), powerRun(map[string][2]int{"ext4": tc.b}), "A", "B", 0)
			got := false
			for _, r := range c.Regressions() {
				got = got || r.Test == mAckLoss.key
			}
			if got != tc.regressd {
				t.Errorf("acknowledged-loss regression %v, want %v (rows %+v)", got, tc.regressd, c.Rows)
			}
		})
	}
}

func TestPowerCutDetail(t *testing.T) {
	if powerCutDetail(&results.Run{}) != nil {
		t.Error("a run without power cuts has a power-cut table")
	}
	tb := powerCutDetail(powerRun(map[string][2]int{"ext4": {95, 0}, "ext2": {10, 6}}))
	if tb == nil || len(tb.Rows) != 2 {
		t.Fatalf("table %+v, want two rows", tb)
	}
	for _, row := range tb.Rows {
		if len(row) != len(tb.Header) {
			t.Errorf("row %v has %d cells, the header %d", row, len(row), len(tb.Header))
		}
	}
	if got := strings.Join(tb.Rows[1], "|"); !strings.Contains(got, "ext2|20|") || !strings.Contains(got, "6 of 20") {
		t.Errorf("ext2 row %q", got)
	}
	var b strings.Builder
	writePowerCutTable(&b, powerRun(map[string][2]int{"ext4": {95, 0}}))
	if !strings.Contains(b.String(), "power cuts (card model") {
		t.Errorf("terminal table:\n%s", b.String())
	}
}
