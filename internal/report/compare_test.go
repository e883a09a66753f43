package report

import (
	"bytes"
	"html/template"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/testkit/golden"
	"github.com/fsbench/fsbench/internal/verdict"
)

// TestCIWarning checks that every "± ∞" has a reason to print beside it.
func TestCIWarning(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		want    string
	}{
		{"too few", []float64{1, 2, 3}, "need >= 6 samples for a confidence interval of the median at level 0.95"},
		{"median 0", []float64{0, 0, 0, 0, 0, 0}, "the median is 0: its confidence interval cannot be given in % of it"},
		{"enough", []float64{1, 2, 3, 4, 5, 6}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			iv := stats.MedianCI(tc.samples, stats.DefaultConfidence)
			got := ciWarning(iv)
			if got != tc.want {
				t.Errorf("ciWarning = %q, want %q", got, tc.want)
			}
			if inf := math.IsInf(iv.HalfWidth(), 0); inf != (got != "") || (ciText(iv) == "± ∞") != inf {
				t.Errorf("%q with warning %q: every \"± ∞\" needs one, and only those", ciText(iv), got)
			}
		})
	}
}

func TestCompareGolden(t *testing.T) {
	load := func(name string) *results.Run {
		r, err := results.Load(filepath.Join("testdata", "compare", name))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		a, b, golden string
		regressions  int
		check        func(t *testing.T, c verdict.RunComparison)
	}{
		{"a.json", "b.json", "compare_ab.golden", 2, func(t *testing.T, c verdict.RunComparison) {
			delta := map[string]string{}
			for _, r := range c.Rows {
				delta[r.Variant+" "+r.Test] = r.Cmp.Delta()
			}
			// ext4 write: 6 vs 6 clearly apart (100/1.005 → 100/1.20 MB/s).
			if d := delta["ext4 write"]; d != "-16.25%" {
				t.Errorf("ext4 write delta %q", d)
			}
			// ext4 read: overlapping samples.
			if d := delta["ext4 read"]; d != "~" {
				t.Errorf("ext4 read delta %q, want ~", d)
			}
			// btrfs write faster: significant, not a regression; btrfs space larger: regression.
			if d := delta["btrfs write"]; !strings.HasPrefix(d, "+") {
				t.Errorf("btrfs write delta %q", d)
			}
			if d := delta["btrfs space"]; !strings.HasPrefix(d, "+") {
				t.Errorf("btrfs space delta %q", d)
			}
		}},
		{"c.json", "d.json", "compare_cd.golden", 0, func(t *testing.T, c verdict.RunComparison) {
			if len(c.Rows) != 1 || c.Rows[0].Cmp.Delta() != "~" || c.Rows[0].Cmp.P != 0.1 {
				t.Fatalf("rows %+v", c.Rows)
			}
		}},
		// The same names, other variants: ext4 lost its -O ^has_journal and btrfs its
		// compression between A and B, xfs is the same. B has 4 repetitions: "± ∞".
		{"e.json", "f.json", "compare_ef.golden", 1, func(t *testing.T, c verdict.RunComparison) {
			var got []string
			for _, m := range c.Mismatches {
				got = append(got, m.String())
			}
			want := []string{
				"ext4: mkfs -O ^has_journal in A, none in B — not the same variant",
				"btrfs: mount compress=zstd in A, none in B — not the same variant",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("mismatches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			c := verdict.CompareRuns(load(tc.a), load(tc.b), "A/"+tc.a, "B/"+tc.b, 0, nil)
			if got := len(c.Regressions()); got != tc.regressions {
				t.Errorf("%d regressions, want %d", got, tc.regressions)
			}
			tc.check(t, c)
			var buf bytes.Buffer
			if err := CompareText(&buf, c); err != nil {
				t.Fatal(err)
			}
			if tc.regressions == 0 && !strings.Contains(buf.String(), "need >= 4 repetitions per side") {
				t.Error("3 against 3 does not say that 4 repetitions per side are needed")
			}
			golden.Check(t, tc.golden, buf.Bytes())
			var page bytes.Buffer
			if err := CompareHTML(&page, c); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(page.String(), "<script") || !strings.Contains(page.String(), "vs A") {
				t.Error("comparison page: script present or table missing")
			}
			checkCompareNotes(t, buf.String(), page.String(), c)
			golden.Check(t, strings.TrimSuffix(tc.golden, ".golden")+".html.golden", page.Bytes())
		})
	}
}

var (
	infText = regexp.MustCompile(`± ∞( \((\d+)\))?`)
	infHTML = regexp.MustCompile(`± ∞( <a href="#note-(\d+)">\(\d+\)</a>)?`)
)

// checkCompareNotes checks that the terminal and the page explain alike: every "± ∞" has a
// footnote, the same number on both, whose note both print; every variant that differs
// between the runs is listed on both.
func checkCompareNotes(t *testing.T, text, page string, c verdict.RunComparison) {
	t.Helper()
	tm, hm := infText.FindAllStringSubmatch(text, -1), infHTML.FindAllStringSubmatch(page, -1)
	if len(tm) != len(hm) {
		t.Fatalf("%d \"± ∞\" in the terminal, %d on the page", len(tm), len(hm))
	}
	for i := range tm {
		if tm[i][2] == "" || hm[i][2] != tm[i][2] {
			t.Errorf("\"± ∞\" number %d: footnote %q in the terminal, %q on the page", i+1, tm[i][2], hm[i][2])
			continue
		}
		n := tm[i][2]
		note := regexp.MustCompile(`(?m)^\(` + n + `\) (.*)$`).FindStringSubmatch(text)
		if note == nil || !strings.Contains(page, `<p id="note-`+n+`">(`+n+`) `+template.HTMLEscapeString(note[1])+`</p>`) {
			t.Errorf("footnote %s: %q in the terminal, not the same on the page", n, note)
		}
	}
	for _, m := range c.Mismatches {
		if !strings.Contains(text, "  "+m.String()+"\n") || !strings.Contains(page, "<li>"+template.HTMLEscapeString(m.String())+"</li>") {
			t.Errorf("%q is not listed in both outputs", m.String())
		}
	}
}

// TestCompareCardCalibration: runs whose card profiles carry different calibrations say so at
// the top of both outputs.
func TestCompareCardCalibration(t *testing.T) {
	a := &results.Run{CardCalibrations: map[string]int{"sd-typical": 1}}
	b := &results.Run{CardCalibrations: map[string]int{"sd-typical": 2}}
	c := verdict.CompareRuns(a, b, "a", "b", 0, nil)
	var text, page bytes.Buffer
	if err := CompareText(&text, c); err != nil {
		t.Fatal(err)
	}
	if err := CompareHTML(&page, c); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "html": page.String()} {
		if !strings.Contains(out, "card sd-typical: calibration 1 in A, 2 in B") {
			t.Errorf("%s output does not name the card whose calibration differs:\n%s", name, out)
		}
	}
	if same := verdict.CompareRuns(a, a, "a", "a", 0, nil); len(same.Cards) != 0 {
		t.Errorf("a run against itself: card mismatches %q", same.Cards)
	}
}
