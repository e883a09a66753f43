package verdict

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
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
	for _, t := range WriteTests {
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
				Metric Metric
				want   []float64
			}{
				{WearMetric(r, tc.card), tc.wear}, {CardWAMetric(r, tc.card), tc.cardWA},
				{BlockAmpMetric(r), tc.blockAmp}, {LifetimeMetric(r, tc.card), tc.life},
			} {
				if got := Samples(r, "a", c.Metric); !near(got, c.want) {
					t.Errorf("%s: samples %v, want %v", c.Metric.Key, got, c.want)
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
	tb := Evaluate(r, WearMetric(r, "sd"), 0)
	if got := tb.Order; len(got) != 2 || got[0] != "gentle" {
		t.Fatalf("order %v, want gentle first", got)
	}
	if g, h := tb.Cells["gentle"].Rating, tb.Cells["harsh"].Rating; g != Best || h != Bad {
		t.Errorf("ratings gentle %v harsh %v, want excellent and bad (ratio 4.5)", g, h)
	}
	if s := Status(r, "ro", WearMetric(r, "sd")); s != "n/a (ro)" {
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
			for _, m := range MatrixFor(tc.r, tc.card, nil) {
				if m.Key == "flash_wear" {
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
