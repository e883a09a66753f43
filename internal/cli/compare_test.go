package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
)

// saveCompareRun writes a run of one variant, ext4 with mkfs arguments mkfs, to a new results
// directory: reps repetitions of the write test at about mbps MB/s.
func saveCompareRun(t *testing.T, mkfs []string, reps int, mbps float64) string {
	t.Helper()
	r := &results.Run{
		Schema: results.Schema, Status: results.RunComplete,
		Started:  time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		Machine:  results.Machine{Hostname: "bench", Arch: "amd64", Kernel: "6.18.44"},
		Target:   results.Target{Kind: "image", Device: "/dev/loop3", SizeBytes: 512 << 20},
		Variants: []results.Variant{{Name: "ext4", FS: "ext4", MkfsArgs: mkfs, Status: results.OK}},
	}
	for rep := 1; rep <= reps; rep++ {
		secs := 100 / mbps * (1 + 0.01*float64(rep))
		r.Measurements = append(r.Measurements, results.Measurement{Variant: "ext4", Test: "write", Rep: rep, Status: results.OK,
			Value: results.Float(secs), Unit: "s", WallSeconds: secs, LogicalBytes: 100e6})
	}
	dir := t.TempDir()
	if err := results.Save(dir, r); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCompareCmdNotes(t *testing.T) {
	journal := []string{"-O", "^has_journal"}
	tests := []struct {
		name   string
		a, b   string
		want   []string // in the terminal's output and on the page
		absent []string
	}{
		{
			name: "same variant, 3 repetitions: every ± ∞ has its footnote",
			a:    saveCompareRun(t, journal, 3, 100), b: saveCompareRun(t, journal, 3, 90),
			want:   []string{"need &gt;= 6 samples for a confidence interval", "± ∞"},
			absent: []string{"not the same variant"},
		},
		{
			name: "mkfs arguments differ: said first, rows marked",
			a:    saveCompareRun(t, journal, 6, 100), b: saveCompareRun(t, nil, 6, 80),
			want: []string{"ext4: mkfs -O ^has_journal in A, none in B — not the same variant", "not the same variant in A and B (listed at the top)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page := filepath.Join(t.TempDir(), "compare.html")
			var stdout, stderr bytes.Buffer
			cmd := newCompareCmd(IO{Out: &stdout, Err: &stderr})
			cmd.SetArgs([]string{tc.a, tc.b, "--html", page})
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			if err := cmd.Execute(); err != nil {
				t.Fatalf("compare: %v\n%s", err, stderr.String())
			}
			html, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.NewReplacer("&gt;", ">").Replace
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), text(w)) {
					t.Errorf("terminal lacks %q:\n%s", text(w), stdout.String())
				}
				if !strings.Contains(string(html), w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(stdout.String(), a) || strings.Contains(string(html), a) {
					t.Errorf("output has %q", a)
				}
			}
			// No "± ∞" without its footnote mark, in either output.
			if strings.Count(stdout.String(), "± ∞") != strings.Count(stdout.String(), "± ∞ (") {
				t.Errorf("a \"± ∞\" without a footnote in the terminal:\n%s", stdout.String())
			}
			if strings.Count(string(html), "± ∞") != strings.Count(string(html), `± ∞ <a href="#note-`) {
				t.Error("a \"± ∞\" without a footnote on the page")
			}
		})
	}
}
