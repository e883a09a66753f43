package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
)

// wm is one write-test measurement for the wear tests: logical bytes, device bytes, and per
// card the flash bytes programmed, the host bytes the card received and the lifetime.
type wm struct {
	variant, test   string
	rep             int
	status          string
	logical, device uint64
	replay          map[string][3]float64 // card → {flash bytes, host bytes, lifetime years}
}

func wearRun(ms ...wm) *results.Run {
	r := &results.Run{Schema: results.Schema, Status: results.RunComplete, Methods: map[string]string{}}
	seen := map[string]bool{}
	for _, m := range ms {
		if !seen[m.variant] {
			seen[m.variant] = true
			r.Variants = append(r.Variants, results.Variant{Name: m.variant, FS: m.variant, Status: results.OK})
		}
		x := results.Measurement{Variant: m.variant, Test: m.test, Rep: m.rep, Status: m.status, LogicalBytes: m.logical}
		if m.status == "" {
			x.Status = results.OK
		}
		if x.Status == results.OK {
			x.Value, x.Unit, x.WallSeconds = results.Float(1), "s", 1
			x.Device = &results.DeviceIO{WriteBytes: m.device}
		}
		if m.replay != nil {
			x.Trace = &results.TraceInfo{Replay: map[string]results.Replay{}}
			for card, f := range m.replay {
				x.Trace.Replay[card] = results.Replay{
					Flash:         &results.FlashIO{FlashBytesWritten: uint64(f[0]), HostBytesWritten: uint64(f[1])},
					LifetimeYears: f[2],
				}
			}
		}
		r.Measurements = append(r.Measurements, x)
	}
	return r
}

// rep3 is the three write tests of one repetition, each with the same figures.
func rep3(variant string, rep int, logical, device uint64, card string, flash, life float64) []wm {
	var out []wm
	for _, t := range writeTests {
		out = append(out, wm{variant: variant, test: t, rep: rep, logical: logical, device: device,
			replay: map[string][3]float64{card: {flash, float64(device), life}}})
	}
	return out
}

func cat(parts ...[]wm) []wm {
	var out []wm
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestWearRule(t *testing.T) {
	tests := []struct {
		name string
		ms   []wm
		card string
		// want: samples of wear, card WA, block amplification and lifetime of variant "a".
		wear, cardWA, blockAmp, life []float64
	}{
		{
			name: "sums over the write tests, one sample per repetition",
			ms:   cat(rep3("a", 1, 100, 150, "sd", 300, 30), rep3("a", 2, 100, 200, "sd", 500, 15)),
			card: "sd",
			wear: []float64{3, 5}, cardWA: []float64{2, 2.5}, blockAmp: []float64{1.5, 2},
			// Three tests of 30 years each wear like one of 10.
			life: []float64{10, 5},
		},
		{
			name: "tests weigh by their bytes, not as a mean of ratios",
			ms: []wm{
				{variant: "a", test: "write", rep: 1, logical: 900, device: 900, replay: map[string][3]float64{"sd": {900, 900, 40}}},
				{variant: "a", test: "read_remove_write", rep: 1, logical: 50, device: 100, replay: map[string][3]float64{"sd": {400, 100, 40}}},
				{variant: "a", test: "video_write", rep: 1, logical: 50, device: 100, replay: map[string][3]float64{"sd": {700, 100, 0}}},
			},
			card: "sd",
			wear: []float64{2}, cardWA: []float64{2000.0 / 1100}, blockAmp: []float64{1.1},
			// video_write's lifetime 0 (wrote nothing by the card's count) adds no wear.
			life: []float64{20},
		},
		{
			name: "a repetition with a failed write test gives no sample",
			ms: cat(rep3("a", 1, 100, 100, "sd", 200, 9),
				[]wm{{variant: "a", test: "write", rep: 2, logical: 100, device: 100, replay: map[string][3]float64{"sd": {200, 100, 9}}},
					{variant: "a", test: "read_remove_write", rep: 2, status: results.Failed},
					{variant: "a", test: "video_write", rep: 2, logical: 100, device: 100, replay: map[string][3]float64{"sd": {200, 100, 9}}}}),
			card: "sd",
			wear: []float64{2}, cardWA: []float64{1 * 2}, blockAmp: []float64{1}, life: []float64{3},
		},
		{
			name: "another card's replay does not count",
			ms:   rep3("a", 1, 100, 100, "emmc", 120, 9),
			card: "sd",
			// Block amplification needs no replay.
			blockAmp: []float64{1},
		},
		{
			name: "only the write tests the run has are needed",
			ms:   []wm{{variant: "a", test: "video_write", rep: 1, logical: 100, device: 110, replay: map[string][3]float64{"sd": {440, 110, 8}}}},
			card: "sd",
			wear: []float64{4.4}, cardWA: []float64{4}, blockAmp: []float64{1.1}, life: []float64{8},
		},
	}
	near := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-9*math.Max(1, math.Abs(b[i])) {
				return false
			}
		}
		return true
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := wearRun(tc.ms...)
			for _, c := range []struct {
				m    metric
				want []float64
			}{
				{wearMetric(r, tc.card), tc.wear}, {cardWAMetric(r, tc.card), tc.cardWA},
				{blockAmpMetric(r), tc.blockAmp}, {lifetimeMetric(r, tc.card), tc.life},
			} {
				if got := samples(r, "a", c.m); !near(got, c.want) {
					t.Errorf("%s: samples %v, want %v", c.m.key, got, c.want)
				}
			}
		})
	}
}

func TestWearRatedLowerIsBetter(t *testing.T) {
	var ms []wm
	for rep := 1; rep <= 4; rep++ {
		ms = append(ms, rep3("gentle", rep, 100, 110, "sd", 200+float64(rep), 12)...)
		ms = append(ms, rep3("harsh", rep, 100, 300, "sd", 900+float64(rep), 3)...)
	}
	ms = append(ms, wm{variant: "ro", test: "write", rep: 1, status: results.NA})
	r := wearRun(ms...)
	r.Variants[2].ReadOnly = true
	r.Measurements[len(r.Measurements)-1].Note = "read-only filesystem"
	tb := evaluate(r, wearMetric(r, "sd"), 0)
	if got := tb.order; len(got) != 2 || got[0] != "gentle" {
		t.Fatalf("order %v, want gentle first", got)
	}
	if g, h := tb.cells["gentle"].Rating, tb.cells["harsh"].Rating; g != Best || h != Bad {
		t.Errorf("ratings gentle %v harsh %v, want excellent and bad (ratio 4.5)", g, h)
	}
	if s := status(r, "ro", wearMetric(r, "sd")); s != "n/a (ro)" {
		t.Errorf("read-only status %q", s)
	}
	v := wearVerdict(r, "sd", 0)
	if v.Winner != "gentle" || v.RunnerUp != "harsh" || !v.Significant {
		t.Errorf("verdict %+v", v)
	}
	// Three tests of 12 years each: 4 years with all three once a day.
	if !strings.Contains(v.Note, "sd would last 4.00 years") || !strings.Contains(v.Detail, "methods.lifetime") {
		t.Errorf("verdict note %q, detail %q", v.Note, v.Detail)
	}
	r.Methods["lifetime"] = "perfect wear levelling assumed"
	if v := wearVerdict(r, "sd", 0); v.Detail != "Assumptions: perfect wear levelling assumed" {
		t.Errorf("detail %q", v.Detail)
	}
}

func TestWearVerdictWithoutData(t *testing.T) {
	traced := wearRun(rep3("a", 1, 100, 100, "sd-typical", 200, 9)...)
	notRecorded := wearRun(wm{variant: "a", test: "write", rep: 1, logical: 100, device: 100})
	notRecorded.Methods["trace"] = "not recorded: tracefs is not mounted"
	tests := []struct {
		name string
		r    *results.Run
		card string
		want string
	}{
		{"trace not recorded", notRecorded, "sd-typical", "not measured in this run: trace not recorded: tracefs is not mounted"},
		{"an older run without traces", wearRun(wm{variant: "a", test: "write", rep: 1, logical: 100, device: 100}), "sd-typical", "not measured in this run"},
		{"card not replayed", traced, "emmc", "not measured for card emmc: this run's traces were replayed through sd-typical"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := wearVerdict(tc.r, tc.card, 0)
			if v.Winner != "" || v.Note != tc.want {
				t.Errorf("verdict %+v, want note %q", v, tc.want)
			}
			for _, m := range matrixFor(tc.r, tc.card) {
				if m.key == "flash_wear" {
					t.Error("matrix has a flash wear column without data for the card")
				}
			}
		})
	}
}

func TestCardFor(t *testing.T) {
	tests := []struct {
		target     string // results.json's "target"
		card, want string
	}{
		{`{"kind": "image", "card_profile": "sd-typical"}`, "", "sd-typical"},
		{`{"kind": "image", "card_profile": "sd-typical"}`, "emmc", "emmc"},
		{`{"kind": "simcard", "profile": "cards/mine.toml", "card_profile": "mine"}`, "", "mine"},
		{`{"kind": "simcard", "card_via": "guest-sd", "profile": "emmc", "card_profile": "emmc"}`, "", "emmc"},
		// Files written before the card was recorded: the simulated card's profile, however it
		// was reached, else the default card.
		{`{"kind": "image"}`, "", DefaultCard},
		{`{"kind": "simcard", "profile": "sd-cheap-old"}`, "", "sd-cheap-old"},
		{`{"kind": "simcard", "profile": "sd-cheap-old"}`, "emmc", "emmc"},
		{`{"kind": "simcard (guest /dev/mmcblk0)", "profile": "emmc"}`, "", "emmc"},
		{`{"kind": "simcard (served in the guest)", "profile": "sd-a1-modern"}`, "", "sd-a1-modern"},
		{`{"kind": "simcard"}`, "", DefaultCard},
	}
	for _, tc := range tests {
		var r results.Run
		if err := json.Unmarshal([]byte(`{"target": `+tc.target+`}`), &r); err != nil {
			t.Fatal(err)
		}
		if got := CardFor(&r, tc.card); got != tc.want {
			t.Errorf("CardFor(%s, %q) = %q, want %q", tc.target, tc.card, got, tc.want)
		}
	}
}

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
	got := map[string]Verdict{}
	for _, v := range Verdicts(r, 0) {
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
	for _, test := range writeTests {
		if !strings.Contains(WearRules, test) {
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
			if got := CardFor(r, ""); got != "emmc" {
				t.Errorf("CardFor = %q, want emmc", got)
			}
			var wear Verdict
			for _, v := range Verdicts(r, 0) {
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
