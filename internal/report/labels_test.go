package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
)

// cardRun is one run of the Pandora study's method on one card: ext4 with and without a
// journal and vfat, five repetitions of the write and mount tests and of bonnie++'s block
// write and read. speed scales every rate (and divides every time), so that the cards differ.
func cardRun(kernel string, guest bool, speed float64) *results.Run {
	r := &results.Run{
		Schema: results.Schema, Status: results.RunComplete,
		Started: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		Machine: results.Machine{Hostname: "pandora", Arch: "armv7", Kernel: kernel},
		Target:  results.Target{Kind: "block", Device: "/dev/mmcblk0", SizeBytes: 16 << 30},
		Dataset: results.Dataset{Kind: "generated", Files: 1000, Bytes: 20e6, Copies: 5},
	}
	if guest {
		r.Guest = &results.Guest{KernelRelease: kernel, Accel: "tcg"}
	}
	variants := []struct {
		name, fs string
		mkfs     []string
		mbps     float64 // write throughput on the fastest card
	}{{"ext4", "ext4", nil, 9}, {"ext4-nojournal", "ext4", []string{"-O", "^has_journal"}, 11}, {"vfat", "vfat", nil, 7}}
	for _, v := range variants {
		r.Variants = append(r.Variants, results.Variant{Name: v.name, FS: v.fs, MkfsArgs: v.mkfs, MountOptions: "noatime", Status: results.OK})
		for rep := 1; rep <= 5; rep++ {
			// A spread of ±2 % around the median, the same on every card.
			jitter := 1 + 0.01*float64(rep-3)
			secs := 100 / (v.mbps * speed) * jitter
			kibps := v.mbps * speed * 1e6 / 1024 / jitter
			r.Measurements = append(r.Measurements,
				results.Measurement{Variant: v.name, Test: "write", Rep: rep, Status: results.OK, Value: results.Float(secs), Unit: "s", WallSeconds: secs, LogicalBytes: 100e6},
				results.Measurement{Variant: v.name, Test: "mount", Rep: rep, Status: results.OK, Value: results.Float(0.02 * jitter / speed), Unit: "s"},
				results.Measurement{Variant: v.name, Test: "bonnie_write", Rep: rep, Status: results.OK, Value: results.Float(kibps), Unit: "KiB/s"},
				results.Measurement{Variant: v.name, Test: "bonnie_read", Rep: rep, Status: results.OK, Value: results.Float(2 * kibps), Unit: "KiB/s"})
		}
	}
	return r
}

// TestLabelledMergeGolden merges three cards' runs as fsbench merge --label does and checks
// that the summary and the page say which card each row is: a list of the runs (the
// bonnie++ table has no run column), and a run column in the matrix. The kernel column
// appears only when the kernels differ, as before.
func TestLabelledMergeGolden(t *testing.T) {
	dirs := []string{"cards/sandisk-64G", "cards/sandisk-16G", "cards/micro-16G"}
	tests := []struct {
		name   string
		runs   []*results.Run
		labels []string
		want   []string // in the summary
	}{
		{
			name:   "cards",
			runs:   []*results.Run{cardRun("6.1.0", false, 1), cardRun("6.1.0", false, 0.6), cardRun("6.1.0", false, 0.35)},
			labels: []string{"sandisk-64G", "sandisk-16G", "micro-16G"},
			want: []string{
				"merged from 3 runs:\n  sandisk-64G  cards/sandisk-64G  6.1.0 (host)  ext4, ext4-nojournal, vfat\n",
				"variant                     run          ",
				"ext4@micro-16G              micro-16G    ",
			},
		},
		{
			// The third card was read in a guest and not labelled: "-" in the run column, and
			// a kernel column because the kernels differ.
			name:   "cards_partial",
			runs:   []*results.Run{cardRun("6.1.0", false, 1), cardRun("6.1.0", false, 0.6), cardRun("5.10.0", true, 0.35)},
			labels: []string{"sandisk-64G", "sandisk-16G", ""},
			want: []string{
				"  (no label)   cards/micro-16G    5.10.0 (qemu tcg)",
				"variant                     run          kernel",
				"ext4@5.10.0                 -            5.10.0 (qemu tcg)",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			merged, err := results.MergeLabeled(tc.runs, dirs, tc.labels)
			if err != nil {
				t.Fatal(err)
			}
			var sum bytes.Buffer
			if err := Summary(&sum, merged); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(sum.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, sum.String())
				}
			}
			golden.Check(t, "summary_"+tc.name+".golden", sum.Bytes())

			var page bytes.Buffer
			if err := HTML(&page, merged, HTMLOptions{}); err != nil {
				t.Fatal(err)
			}
			s := page.String()
			for _, w := range []string{"<th>run</th>", "Merged from 3 runs", "<b>sandisk-16G</b>: cards/sandisk-16G"} {
				if !strings.Contains(s, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			// The page from its title to the charts: the runs, verdict, matrix and bonnie++.
			i, j := strings.Index(s, "<h1>"), strings.Index(s, `<h2 id="charts"`)
			if i < 0 || j < i {
				t.Fatalf("page has no title or no charts")
			}
			golden.Check(t, tc.name+".html.golden", []byte(s[i:j]))
		})
	}
}

// TestUnlabelledMergeHasNoRunColumn keeps the reports of merges without labels as they were:
// no list of runs, no run column.
func TestUnlabelledMergeHasNoRunColumn(t *testing.T) {
	merged, err := results.Merge([]*results.Run{cardRun("6.1.0", false, 1), cardRun("6.1.0", false, 0.6)}, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	var sum, page bytes.Buffer
	if err := Summary(&sum, merged); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, merged, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"merged from", " run ", "Merged from", "<th>run</th>"} {
		if strings.Contains(sum.String(), bad) || strings.Contains(page.String(), bad) {
			t.Errorf("an unlabelled merge shows %q", bad)
		}
	}
	if labels(merged) != nil || mergedRuns(merged) != nil {
		t.Errorf("labels %v, runs %v for an unlabelled merge", labels(merged), mergedRuns(merged))
	}
}
