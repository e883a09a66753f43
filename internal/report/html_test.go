package report

import (
	"bytes"
	"github.com/fsbench/fsbench/internal/testkit/runs"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
	"github.com/fsbench/fsbench/internal/verdict"
)

func TestBarChartGolden(t *testing.T) {
	bars := []Bar{
		{Label: "erofs-lz4hc", Median: 210.4, Min: 180, Max: 230.2, N: 4, Rating: verdict.Best},
		{Label: "ext4", Median: 116, Min: 110, Max: 130, N: 4, Rating: verdict.Fair},
		{Label: "a <b> & \"c\"", Median: 12.5, Min: 12.5, Max: 12.5, N: 1, Rating: verdict.Worst},
	}
	var buf bytes.Buffer
	if err := WriteBarChart(&buf, "read (rootfs tree)", "MB/s", true, bars); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	// Labels are escaped, units on the axis, order kept, no whisker for a single sample.
	for _, want := range []string{"a &lt;b&gt; &amp; &#34;c&#34;", "MB/s (higher is better)", ">250<"} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Index(s, "erofs-lz4hc") > strings.Index(s, ">ext4<") {
		t.Error("bars not in the given order")
	}
	if n := strings.Count(s, "<path"); n != 2 {
		t.Errorf("%d whiskers, want 2", n)
	}
	golden.Check(t, "chart.svg.golden", buf.Bytes())
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		top  float64
		want []float64
	}{
		{230.2, []float64{0, 50, 100, 150, 200, 250}},
		{1, []float64{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}},
		{0, []float64{0, 1}},
		{7, []float64{0, 2, 4, 6, 8}},
	}
	for _, tc := range tests {
		got := niceTicks(tc.top)
		if len(got) != len(tc.want) {
			t.Errorf("niceTicks(%v) = %v, want %v", tc.top, got, tc.want)
			continue
		}
		for i := range got {
			if d := got[i] - tc.want[i]; d > 1e-9 || d < -1e-9 {
				t.Errorf("niceTicks(%v) = %v, want %v", tc.top, got, tc.want)
				break
			}
		}
	}
}

// TestVariantDetail: the small text under a variant's name adds what the name does not say,
// and nothing when the name is the filesystem's and there are no options (it once read
// "ext4 / ext4").
func TestVariantDetail(t *testing.T) {
	tests := []struct {
		v    results.Variant
		want string
	}{
		{results.Variant{Name: "ext4", FS: "ext4"}, ""},
		{results.Variant{Name: "ext4", FS: "ext4", MountOptions: "noatime"}, "ext4, -o noatime"},
		{results.Variant{Name: "ext4-nojournal", FS: "ext4", MkfsArgs: []string{"-O", "^has_journal"}}, "ext4 -O ^has_journal"},
		{results.Variant{Name: "fast", FS: "xfs"}, "xfs"},
		{results.Variant{Name: "squashfs", FS: "squashfs", ReadOnly: true}, "squashfs (read-only)"},
	}
	for _, tc := range tests {
		if got := variantDetail(tc.v); got != tc.want {
			t.Errorf("variantDetail(%+v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestHTMLGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, loadRun(t), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "report.html.golden", buf.Bytes())
}

// sections of the report, in the order the page must show them.
var sections = []string{
	"Verdict", "Observations", "Charts", "Skipped variants and failed cells",
	"All measurements", "How ratings and verdicts are made",
}

func TestHTMLStructure(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, fixture(), HTMLOptions{JSONLink: "../r/results.json"}); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	last := -1
	for _, h := range sections {
		i := strings.Index(s, ">"+h+"</h2>")
		if i < 0 || i < last {
			t.Errorf("section %q missing or out of order", h)
		}
		last = i
	}
	for _, want := range []string{
		"input/output error",                // the failed cell's reason
		"this kernel (6.18.44) has no f2fs", // the skipped variant's reason
		"n/a (ro)",                          // read-only write cells
		`href="../r/results.json"`, `href="results.csv"`,
		"not measured in this run", // flash wear
		"@media print", "overflow-x: auto", `name="viewport"`,
		"Ratio &lt;= 1.05: excellent", // the rules in the footer
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Self-contained and offline: no script, no external resource.
	for _, bad := range []string{"<script", "src=", "<link", "@import", "url(", `href="http`} {
		if strings.Contains(s, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
}

func TestHTMLDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	HTML(&a, loadRun(t), HTMLOptions{})
	HTML(&b, loadRun(t), HTMLOptions{})
	if a.String() != b.String() {
		t.Error("two renderings of the same run differ")
	}
}

func TestMain(m *testing.M) {
	// Tests write .got files only on mismatch; nothing else is left behind.
	os.Exit(m.Run())
}

// No figure on the page is written with an exponent: raw cells like "1.15557e+08 bytes" are
// unreadable.
func TestHTMLNoExponents(t *testing.T) {
	var buf bytes.Buffer
	if err := HTML(&buf, loadWearRun(t), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`[0-9]e[+-][0-9]`).FindString(buf.String()); m != "" {
		i := strings.Index(buf.String(), m)
		t.Errorf("a figure with an exponent: %q", buf.String()[max(0, i-60):i+20])
	}
}

// runOf is the shared fixture (internal/testkit/runs).
var runOf = runs.Of
