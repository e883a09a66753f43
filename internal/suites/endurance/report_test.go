package endurance

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// synthetic is a run of two variants whose cards took the given rounds to their first error,
// ext4's predicted at predicted rounds, f2fs's at 18.
func synthetic(rounds map[string][]float64, predicted float64) *results.Run {
	r := &results.Run{}
	for _, v := range []string{"ext4", "f2fs"} {
		r.Variants = append(r.Variants, results.Variant{Name: v, FS: v, Status: results.OK})
		pred := predicted
		if v == "f2fs" {
			pred = 18
		}
		for i, n := range rounds[v] {
			e := &results.Endurance{Workload: "bootlin", Card: "sd-typical", Behaviour: "read-only", Scale: 0.01, Rounds: int(n) + 1,
				FirstError: results.Milestone{Round: n, Bytes: uint64(n * 4e8)}, ReadOnly: results.Milestone{Round: n},
				End: results.Milestone{Round: float64(int(n) + 1), What: "the card turned read-only"}, PredictedRounds: pred,
				SpareBlocks: 4, FSErrors: -1, Corruption: -1,
				Series: []results.EndurancePoint{{Round: 1, MBps: 50, BadBlocks: 0}, {Round: 2, MBps: 45, BadBlocks: 2}}}
			r.Measurements = append(r.Measurements, results.Measurement{Variant: v, Test: Test, Rep: i + 1, Status: results.OK,
				Unit: "rounds", Value: results.Float(n), Endurance: e})
		}
	}
	return r
}

// TestVerdict: the variant whose cards lived longest wins when the U test tells the cards
// apart (4 a side), in the suite's words; with 3 a side nothing can be significant, and the
// line says no clear winner.
func TestVerdict(t *testing.T) {
	clear := verdicts(synthetic(map[string][]float64{"ext4": {10.1, 10.6, 11, 9.8}, "f2fs": {18.2, 19, 18.7, 20.1}}, 15), stats.DefaultAlpha)
	if len(clear) != 1 || clear[0].Winner != "f2fs" || !clear[0].Clear() {
		t.Fatalf("verdict %+v: want f2fs, clear", clear)
	}
	line := clear[0].Line()
	t.Log(line)
	if !strings.Contains(line, "kept the card alive 1.82× longer than ext4") || !strings.Contains(line, "p=") {
		t.Errorf("line %q: want the margin in the suite's words and the p-value", line)
	}
	tied := verdicts(synthetic(map[string][]float64{"ext4": {10.1, 10.6, 11}, "f2fs": {18.2, 19, 18.7}}, 15), stats.DefaultAlpha)
	if len(tied) != 1 || tied[0].Clear() || !strings.Contains(tied[0].Line(), "no clear winner") {
		t.Errorf("3 cards a side: %q, want no clear winner", tied[0].Line())
	}
}

// TestTables: the milestone table has a row per variant with the medians and the prediction's
// ratio, the note says whether the prediction met the cards within 20 %, and every card has
// its row and its lines in the charts.
func TestTables(t *testing.T) {
	ts := tables(synthetic(map[string][]float64{"ext4": {10.1, 10.6, 11}, "f2fs": {18.2, 19, 18.7}}, 15))
	if len(ts) != 2 {
		t.Fatalf("%d tables, want 2", len(ts))
	}
	mil, all := ts[0], ts[1]
	if len(mil.Rows) != 2 || mil.Rows[0][0] != "ext4" || mil.Rows[0][2] != "10.6 (10.1-11.0)" || mil.Rows[0][4] != "0.707 (0.673-0.733)" {
		t.Errorf("milestone rows %q", mil.Rows)
	}
	if note := strings.Join(mil.Notes, " "); !strings.Contains(note, "misses by more than 20 % for ext4") || !strings.Contains(note, "within it: f2fs") {
		t.Errorf("prediction note %q", note)
	}
	if len(all.Rows) != 6 || len(all.Charts) != 2 || len(all.Charts[0].Lines) != 6 {
		t.Errorf("%d card rows, %d charts: want 6 rows, speed and bad blocks with a line per card", len(all.Rows), len(all.Charts))
	}
}

// TestSummarySaysTheVerdict: a run of the endurance suite alone has no matrix of timed
// figures, and its terminal summary still says which filesystem kept the card alive longest,
// as the page does.
func TestSummarySaysTheVerdict(t *testing.T) {
	r := synthetic(map[string][]float64{"ext4": {10.1, 10.6, 11, 9.8}, "f2fs": {18.2, 19, 18.7, 20.1}}, 12)
	var b strings.Builder
	if err := report.Summary(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "card lifetime: f2fs; kept the card alive 1.82× longer than ext4") {
		t.Errorf("the summary lacks the verdict:\n%s", out)
	}
}

// TestMergedKernels: a merge of a host run and a guest run (btrfs on this machine's kernel,
// f2fs in the QEMU guest's) says where each filesystem ran, in the milestone table and in the
// verdict, which compares the two kernels' filesystems; a run on one kernel says neither.
func TestMergedKernels(t *testing.T) {
	rounds := map[string][]float64{"ext4": {10.1, 10.6, 11, 9.8}, "f2fs": {18.2, 19, 18.7, 20.1}}
	for _, tt := range []struct {
		name    string
		sources map[string]*results.Source
		want    string // in the verdict's note and the table; "" for neither
	}{
		{"one kernel", nil, ""},
		{"merged from the host and a guest", map[string]*results.Source{
			"ext4": {Dir: "host", Kernel: "6.18.44"},
			"f2fs": {Dir: "guest", Kernel: "6.1.0-56-amd64", Guest: "qemu tcg"}},
			"f2fs ran on 6.1.0-56-amd64 (qemu tcg), ext4 on 6.18.44 (host): the kernels differ"},
		{"merged from two runs on one kernel", map[string]*results.Source{
			"ext4": {Dir: "a", Kernel: "6.18.44"}, "f2fs": {Dir: "b", Kernel: "6.18.44"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := synthetic(rounds, 12)
			for i := range r.Variants {
				r.Variants[i].Source = tt.sources[r.Variants[i].Name]
			}
			r.Machine.Kernel = "6.18.44"
			v := verdicts(r, stats.DefaultAlpha)
			if len(v) != 1 || v[0].Winner != "f2fs" {
				t.Fatalf("verdict %+v: want f2fs", v)
			}
			if got := strings.Contains(v[0].Note, "ran on"); got != (tt.want != "") || tt.want != "" && !strings.Contains(v[0].Note, tt.want) {
				t.Errorf("verdict note %q: want %q", v[0].Note, tt.want)
			}
			mil := tables(r)[0]
			hasCol := mil.Columns[1].Head == "ran on"
			if hasCol != (tt.want != "") || hasCol && (mil.Rows[1][0] != "f2fs" || mil.Rows[1][1] != "6.1.0-56-amd64 (qemu tcg)" || len(mil.Rows[1]) != len(mil.Columns)) {
				t.Errorf("columns %v, rows %q: want a ran-on column only for the merge across kernels", mil.Columns[:2], mil.Rows)
			}
		})
	}
}
