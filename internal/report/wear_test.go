package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
	"github.com/fsbench/fsbench/internal/verdict"
)

func TestSizeChartGolden(t *testing.T) {
	rows := []SizeRow{
		{Label: "ext4", Buckets: []SizeCount{{4096, 600}, {8192, 100}, {524288, 300}}},
		{Label: "a <b> & \"c\"", Buckets: []SizeCount{{512, 1}, {1 << 20, 3}}},
		{Label: "empty"},
	}
	var buf bytes.Buffer
	if err := WriteSizeChart(&buf, "request sizes", rows); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{
		"a &lt;b&gt; &amp; &#34;c&#34;",           // labels escaped
		">4K<", ">8K<", ">512K<", ">1M<", ">512<", // legend: every bucket, once
		">60%<", ">30%<", // shares printed in wide segments
		"n=1000", "n=4", "n=0",
		"600 of 1000 write requests (60.0 %) of 4 KiB to 8 KiB",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if n := strings.Count(s, ">4K<"); n != 1 {
		t.Errorf("legend has 4K %d times", n)
	}
	// 4K is the same colour wherever it appears (legend and bar).
	fill, _ := sizeColor(4096)
	if n := strings.Count(s, fill); n != 2 {
		t.Errorf("colour of 4K appears %d times, want 2", n)
	}
	// ext4's segments fill the bar exactly: the last one ends at the plot's right edge.
	if !strings.Contains(s, `<rect x="444.0" y=`) || !strings.Contains(s, `width="126.0"`) {
		t.Error("ext4's 512K segment does not span 70 % to 100 %")
	}
	golden.Check(t, "sizes.svg.golden", buf.Bytes())
}

func loadWearRun(t *testing.T) *results.Run {
	t.Helper()
	// A real run with block-request traces (512 MiB loop device, 4 repetitions), trimmed to a
	// few variants (ext4, ext4-nojournal, ext3, btrfs, squashfs-lzo; f2fs skipped) and to the traces
	// of the write tests, with their latencies and alignment left out (the report does not use them).
	r, err := results.Load(filepath.Join("testdata", "wear.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWearRunGolden(t *testing.T) {
	r := loadWearRun(t)
	var sum bytes.Buffer
	if err := Summary(&sum, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary_wear.golden", sum.Bytes())
	var page bytes.Buffer
	if err := HTML(&page, r, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "report_wear.html.golden", page.Bytes())
	s := page.String()
	for _, want := range []string{
		`id="flash"`, `id="chart-block_amplification"`, `id="chart-card_wa_sd-typical"`, `id="chart-write-sizes"`,
		"flash wear<br>", "sd-typical would last", "Assumptions: lifetime_years",
		"<th colspan=\"3\">emmc</th>", "<th colspan=\"3\">sd-typical</th>",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(s, "not measured in this run") {
		t.Error("report says flash wear is not measured, but the run has traces")
	}
	got := map[string]verdict.Verdict{}
	for _, v := range verdict.Verdicts(r, 0) {
		got[v.Priority] = v
	}
	// wear.json predates card times in replays: its card-time verdict is TestCardTimeVerdict's.
	for _, p := range []string{"flash wear"} {
		if v := got[p]; v.Winner == "" || v.RunnerUp == "" || v.Significance == "" {
			t.Errorf("%s verdict %+v", p, v)
		}
	}
}

// TestWearCardOption: --card rates on another profile: the matrix, the verdict and the charts
// follow it.
func TestWearCardOption(t *testing.T) {
	r := loadWearRun(t)
	var def, emmc bytes.Buffer
	if err := SummaryWith(&def, r, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := SummaryWith(&emmc, r, SummaryOptions{Card: "emmc"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def.String(), "on sd-typical per byte") || !strings.Contains(emmc.String(), "on emmc per byte") {
		t.Error("summary does not name the card it rates wear on")
	}
	if def.String() == emmc.String() {
		t.Error("--card emmc changes nothing in the summary")
	}
	var page bytes.Buffer
	if err := HTML(&page, r, HTMLOptions{Card: "emmc"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `id="chart-card_wa_emmc"`) || !strings.Contains(page.String(), "emmc would last") {
		t.Error("HTML with Card emmc lacks the emmc chart or lifetime")
	}
	// The card rated on leads the per-profile table.
	if i, j := strings.Index(page.String(), `<th colspan="3">emmc</th>`), strings.Index(page.String(), `<th colspan="3">sd-typical</th>`); i < 0 || j < i {
		t.Error("the table of profiles does not start with the card rated on")
	}
	page.Reset()
	if err := HTML(&page, r, HTMLOptions{Card: "my-card.toml"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page.String(), "my-card.toml</th>") || !strings.Contains(page.String(), `<th colspan="3">sd-typical</th>`) {
		t.Error("a card without replay has a column in the table, or the replayed ones are missing")
	}
	var none bytes.Buffer
	if err := SummaryWith(&none, r, SummaryOptions{Card: "my-card.toml"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(none.String(), "not measured for card my-card.toml: this run's traces were replayed through emmc, sd-a1-modern, sd-cheap-old, sd-typical") {
		t.Errorf("unknown card: summary says\n%s", none.String())
	}
}

// TestWearRulesNameWriteTests keeps the rule in words in step with the tests it is computed
// from.
func TestWearRulesNameWriteTests(t *testing.T) {
	for _, test := range verdict.WriteTests {
		if !strings.Contains(verdict.WearRules, test) {
			t.Errorf("WearRules does not name %s, which the wear figures add up", test)
		}
	}
}

// TestGuestSimcardRatedOnItsCard: a run on --target vm:simcard:emmc (the guest's SD card backed
// by the simulated emmc card) rates flash wear and card time on emmc, not on the default card:
// as written before the kind was typed (an English phrase for a kind) and as written now.
func TestGuestSimcardRatedOnItsCard(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join("testdata", "wear.json"))
	if err != nil {
		t.Fatal(err)
	}
	image := `"target": {
  "kind": "image",`
	guest := `"guest": {"kernel": "/boot/vmlinuz-6.1.0-56-amd64", "kernel_release": "6.1.0-56-amd64", "accel": "tcg", "boot_seconds": 9, "console_log": "console.log"},
 `
	for name, target := range map[string]string{
		"legacy": `"target": {
  "kind": "simcard (guest /dev/mmcblk0)", "profile": "emmc", "time_scale": 1,`,
		"typed": `"target": {
  "kind": "simcard", "card_via": "guest-sd", "profile": "emmc", "card_profile": "emmc", "time_scale": 1,`,
	} {
		t.Run(name, func(t *testing.T) {
			if !bytes.Contains(orig, []byte(image)) {
				t.Fatal("wear.json's target changed: update this test")
			}
			path := filepath.Join(t.TempDir(), "results.json")
			if err := os.WriteFile(path, bytes.Replace(orig, []byte(image), []byte(guest+target), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := results.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			// The guest identified its /dev/mmcblk0: QEMU's SD card model, as a real run records it.
			r.Device.Path, r.Device.Device = "/dev/mmcblk0", map[string]string{"name": "QEMU!", "manfid": "0x0000aa"}
			if got := verdict.CardFor(r, ""); got != "emmc" {
				t.Errorf("CardFor = %q, want emmc", got)
			}
			var wear verdict.Verdict
			for _, v := range verdict.Verdicts(r, 0) {
				if v.Priority == "flash wear" {
					wear = v
				}
			}
			if !strings.Contains(wear.Basis, "on emmc") || !strings.HasPrefix(wear.Note, "emmc would last") {
				t.Errorf("flash wear not rated on emmc: %+v", wear)
			}
			var sum bytes.Buffer
			if err := Summary(&sum, r); err != nil {
				t.Fatal(err)
			}
			// (The fixture's traces predate card times: the card-time tests are in cardtime_test.go.)
			for _, want := range []string{"a simulated card, profile emmc, behind the guest's emulated SD card (/dev/mmcblk0)",
				"wear: flash bytes programmed on emmc per byte"} {
				if !strings.Contains(sum.String(), want) {
					t.Errorf("summary lacks %q:\n%s", want, sum.String())
				}
			}
			if strings.Contains(sum.String(), "sd-typical") {
				t.Errorf("summary names sd-typical:\n%s", sum.String())
			}
			var page bytes.Buffer
			if err := HTML(&page, r, HTMLOptions{}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(page.String(), "<h1>fsbench: which filesystem for a simulated emmc card?</h1>") {
				t.Error("the page's title does not name the emmc card")
			}
		})
	}
}
