package powercut

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// rec is one recording of 20 cuts: whole cuts, cuts where the filesystem broke a promise,
// cuts the card damaged (the filesystem came through them silently wrong in silent).
type rec struct{ whole, broken, damaged, silent int }

// powerRun is a run of the powercut suite: each variant's recordings, one per repetition.
func powerRun(figures map[string][]rec) *results.Run {
	r := &results.Run{}
	for _, name := range []string{"ext4", "ext3", "ext2"} {
		recs, ok := figures[name]
		if !ok {
			continue
		}
		r.Variants = append(r.Variants, results.Variant{Name: name, FS: name})
		for i, f := range recs {
			safe := 100 * float64(f.whole) / 20
			p := &results.PowerCut{Profile: "sd-typical", WriteBufferBytes: 32 << 10, TornPage: true, Cuts: 20,
				Safe: results.Proportion{Count: f.whole, Of: 20, Pct: safe}, AckLossCuts: results.Proportion{Count: f.broken, Of: 20},
				FSBrokenCuts: results.Proportion{Count: f.broken, Of: 20}, CardDamageCuts: results.Proportion{Count: f.damaged, Of: 20},
				CardSilent: f.silent, CardUnharmed: f.damaged - f.silent, FileCounts: results.FileCounts{AckedLost: f.broken}, FSAckLossCuts: f.broken}
			r.Measurements = append(r.Measurements, results.Measurement{Variant: name, Test: Test, Rep: i + 1, Status: results.OK,
				Value: &safe, Unit: catalog.Percent, PowerCut: p})
		}
	}
	return r
}

// times repeats a recording n times with the whole count varied by the steps given in turn.
func times(n int, base rec, steps ...int) []rec {
	out := make([]rec, n)
	for i := range out {
		out[i] = base
		if len(steps) > 0 {
			out[i].whole += steps[i%len(steps)]
		}
	}
	return out
}

func TestPowerLossVerdict(t *testing.T) {
	tests := []struct {
		name    string
		figures map[string][]rec
		winner  string
		notes   []string
	}{
		{"one breaks promises, five recordings each", map[string][]rec{"ext4": times(5, rec{whole: 18}, 0, 1, 2), "ext2": times(5, rec{whole: 2, broken: 6}, 0, 1)}, "ext4",
			[]string{"the filesystem's fault): ext2 in 30 of 100 cuts", "acknowledged data lost in 30", "no filesystem can keep a promise made within the last 32 KiB"}},
		{"within noise: no clear winner", map[string][]rec{"ext4": times(5, rec{whole: 18}, 0, 1, -1), "ext3": times(5, rec{whole: 18}, 1, -1, 0)}, "",
			[]string{"no clear winner: ext", "ext4", "ext3", "within noise"}},
		{"three recordings cannot tell", map[string][]rec{"ext4": times(3, rec{whole: 20}), "ext2": times(3, rec{whole: 1, broken: 4})}, "",
			[]string{"no clear winner: ext4, ext2 within noise (cannot tell: need >= 4"}},
		{"card damage and how each came through it", map[string][]rec{"ext4": times(5, rec{whole: 19, damaged: 3}), "ext2": times(5, rec{whole: 4, damaged: 3, silent: 2})}, "ext4",
			[]string{"no filesystem broke a promise on a cut the card did not damage", "ext4 15 of 100 (15 unharmed)", "ext2 15 of 100 (5 unharmed, 10 silently wrong)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v verdict.Verdict
			for _, x := range verdict.VerdictsFor(powerRun(tc.figures), 0, "", suites.Verdicts()) {
				if x.Priority == powerLossPriority {
					v = x
				}
			}
			if v.Priority == "" || v.Winner != tc.winner {
				t.Fatalf("verdict %+v, want winner %q", v, tc.winner)
			}
			line := v.Line()
			for _, n := range tc.notes {
				if !strings.Contains(line, n) {
					t.Errorf("verdict line %q lacks %q", line, n)
				}
			}
			if tc.winner == "" && strings.Contains(line, "use ") {
				t.Errorf("a tie reads as advice: %q", line)
			}
		})
	}
}

// TestRecordingShare: one recording gets Wilson's interval over its cuts; recordings that
// disagree get a wider one than Wilson's, which would treat their cuts as independent; and
// recordings that agree never get a narrower one.
func TestRecordingShare(t *testing.T) {
	wlo, whi := stats.Wilson(30, 60)
	tests := []struct {
		name   string
		ks, ns []int
		wider  bool
	}{
		{"one recording", []int{30}, []int{60}, false},
		{"three that agree", []int{10, 10, 10}, []int{20, 20, 20}, false},
		{"three that disagree", []int{2, 10, 18}, []int{20, 20, 20}, true},
	}
	for _, tc := range tests {
		s := recordingShare(tc.ks, tc.ns)
		if s.k != 30 || s.n != 60 || s.pct != 50 {
			t.Errorf("%s: %d of %d = %v %%", tc.name, s.k, s.n, s.pct)
		}
		wider := s.lo < 100*wlo-1e-9 || s.hi > 100*whi+1e-9
		if wider != tc.wider || s.lo > 100*wlo+1e-9 || s.hi < 100*whi-1e-9 {
			t.Errorf("%s: interval %.1f-%.1f against Wilson's %.1f-%.1f: want wider %v, never narrower", tc.name, s.lo, s.hi, 100*wlo, 100*whi, tc.wider)
		}
	}
}

// TestCompareAckLossIsRegression: more cuts losing acknowledged data is a regression even
// with one repetition per side, where no significance test can tell.
func TestCompareAckLossIsRegression(t *testing.T) {
	tests := []struct {
		name     string
		a, b     rec
		regressd bool
	}{
		{"new loss", rec{whole: 20}, rec{whole: 18, broken: 2}, true},
		{"same loss", rec{whole: 18, broken: 2}, rec{whole: 18, broken: 2}, false},
		{"less loss", rec{whole: 18, broken: 2}, rec{whole: 20}, false},
		// Damage the card did is not the filesystem's regression.
		{"card damage", rec{whole: 20}, rec{whole: 17, damaged: 3, silent: 3}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := verdict.CompareRuns(powerRun(map[string][]rec{"ext4": {tc.a}}), powerRun(map[string][]rec{"ext4": {tc.b}}), "A", "B", 0, suites.Verdicts())
			got := false
			for _, r := range c.Regressions() {
				got = got || r.Test == mAckLoss.Key
			}
			if got != tc.regressd {
				t.Errorf("acknowledged-loss regression %v, want %v (rows %+v)", got, tc.regressd, c.Rows)
			}
		})
	}
}

func TestPowerCutDetail(t *testing.T) {
	if PowerCutDetail(&results.Run{}) != nil {
		t.Error("a run without power cuts has a power-cut table")
	}
	tb := PowerCutDetail(powerRun(map[string][]rec{"ext4": times(3, rec{whole: 19}), "ext2": times(3, rec{whole: 2, broken: 6, damaged: 4, silent: 1})}))
	if tb == nil || len(tb.Rows) != 2 {
		t.Fatalf("table %+v, want two rows", tb)
	}
	for _, row := range tb.Rows {
		if len(row) != len(tb.Header) {
			t.Errorf("row %v has %d cells, the header %d", row, len(row), len(tb.Header))
		}
	}
	if got := strings.Join(tb.Rows[1], "|"); !strings.Contains(got, "ext2|3|60|10.0 (") || !strings.Contains(got, "|18 of 60|") || !strings.Contains(got, "|12 of 60|9 / 0 / 0 / 3|") {
		t.Errorf("ext2 row %q", got)
	}
	if !strings.Contains(tb.Caption, "over 3 recordings") || !strings.Contains(tb.Model, "32 KiB write buffer no flush empties, torn page") {
		t.Errorf("caption %q, model %q", tb.Caption, tb.Model)
	}
	if one := PowerCutDetail(powerRun(map[string][]rec{"ext4": {{whole: 19}}})); !strings.Contains(one.Caption, "Wilson interval over the cuts of one recording") {
		t.Errorf("one recording's caption %q", one.Caption)
	}
	// A filesystem without a checker (nilfs2) says so in the fsck column, not 0 % clean.
	nc := powerRun(map[string][]rec{"ext4": {{whole: 19}}})
	nc.Measurements[0].PowerCut.NoChecker = 20
	if got := strings.Join(PowerCutDetail(nc).Rows[0], "|"); !strings.Contains(got, "|no checker|") {
		t.Errorf("row without a checker %q", got)
	}
}
