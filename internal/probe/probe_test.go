package probe

import (
	"bytes"
	"context"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/measure"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// runModel probes a model of profile (no real time passes) and returns the result.
func runModel(t testing.TB, profile string, write bool) *Result {
	t.Helper()
	d := newModelDevice(t, profile, 256<<20)
	r, err := Run(context.Background(), d, Options{Write: write, MaxReadBlock: 16 << 20})
	if err != nil {
		t.Fatalf("probe %s: %v", profile, err)
	}
	return r
}

// checkAgainstProfile asserts what the probe must find on each profile: the AU and the
// read page exactly, the write page within a factor of 2, the open-AU count of AU-mapped
// cards exactly (page-mapped ones never collapse: a lower bound).
func checkAgainstProfile(t *testing.T, profile string, r *Result) {
	t.Helper()
	p, err := flash.Lookup(profile)
	if err != nil {
		t.Fatal(err)
	}
	est := r.Estimates
	if est.AU.Value != uint64(p.AUSize) || est.AU.Confidence == Low || est.AU.Confidence == None {
		t.Errorf("%s: AU %s (%s: %s), want %s with medium or high confidence", profile, formatSize(est.AU.Value), est.AU.Confidence, est.AU.Evidence, formatSize(uint64(p.AUSize)))
	}
	if est.ReadPage.Value != uint64(p.PageSize) {
		t.Errorf("%s: read page %s (%s), want %s", profile, formatSize(est.ReadPage.Value), est.ReadPage.Evidence, formatSize(uint64(p.PageSize)))
	}
	if !r.Write {
		return
	}
	if v, want := est.Page.Value, uint64(p.PageSize); v < want/2 || v > want*2 {
		t.Errorf("%s: write page %s (%s), want %s within a factor of 2", profile, formatSize(v), est.Page.Evidence, formatSize(want))
	}
	if p.FTL == flash.FTLPage {
		if !est.OpenAUs.AtLeast {
			t.Errorf("%s: page-mapped card: open AUs %d (%s), want no collapse (a lower bound)", profile, est.OpenAUs.Value, est.OpenAUs.Evidence)
		}
	} else if est.OpenAUs.Value != uint64(p.OpenAUs) || est.OpenAUs.AtLeast {
		t.Errorf("%s: open AUs %d (at least %v; %s), want %d", profile, est.OpenAUs.Value, est.OpenAUs.AtLeast, est.OpenAUs.Evidence, p.OpenAUs)
	}
	wantFAT := uint64(p.PageMappedArea)
	if p.FTL == flash.FTLPage {
		wantFAT = 0 // the whole card is page-mapped: no area is faster than the rest
	}
	if est.FATArea.Value != wantFAT && est.FATArea.Confidence == Low {
		// Honest, if not found: a busy host compresses the ratio (see analyzeFAT).
		t.Logf("%s: FAT area %s with low confidence (%s), want %s", profile, formatSize(est.FATArea.Value), est.FATArea.Evidence, formatSize(wantFAT))
	} else if est.FATArea.Value != wantFAT {
		t.Errorf("%s: FAT area %s (%s), want %s", profile, formatSize(est.FATArea.Value), est.FATArea.Evidence, formatSize(wantFAT))
	}
}

func TestProbeModel(t *testing.T) {
	for _, profile := range flash.Builtins() {
		t.Run(profile, func(t *testing.T) {
			checkAgainstProfile(t, profile, runModel(t, profile, true))
		})
	}
}

func TestAnalyzeAlign(t *testing.T) {
	// level builds an alignment point of n identical diffs with a little alternating noise.
	level := func(align uint64, diff float64, n int) AlignPoint {
		p := AlignPoint{Align: align, PreNs: 700e3, PostNs: 700e3, OnNs: 700e3 + diff, DiffNs: diff}
		for i := 0; i < n; i++ {
			p.Diffs = append(p.Diffs, diff+float64(i%3-1)*2e3)
		}
		return p
	}
	steps := func(levels map[uint64]float64) []AlignPoint {
		var out []AlignPoint
		for a := uint64(1024); a <= 64<<20; a *= 2 {
			d := 0.0
			for lim, v := range levels {
				if a >= lim && v > d {
					d = v
				}
			}
			n := 64
			if a >= 32<<20 {
				n = 2 // few boundaries of a large alignment fit in the device
			}
			out = append(out, level(a, d, n))
		}
		return out
	}
	// withDiff sets one alignment's diffs to d: a point the host's noise moved.
	withDiff := func(pts []AlignPoint, align uint64, d float64) []AlignPoint {
		for i, p := range pts {
			if p.Align == align {
				pts[i] = level(align, d, len(p.Diffs))
			}
		}
		return pts
	}
	cases := []struct {
		name     string
		pts      []AlignPoint
		au, page uint64
		auConf   string
		atLeast  bool
	}{
		{"sd-typical levels", steps(map[uint64]float64{16 << 10: 650e3, 64 << 10: 750e3, 4 << 20: 900e3}), 4 << 20, 16 << 10, High, false},
		{"no structure", steps(map[uint64]float64{}), 0, 0, None, false},
		{"every boundary alike", steps(map[uint64]float64{1024: 300e3}), 0, 1024, None, false},
		{"AU at the largest alignment", steps(map[uint64]float64{16 << 10: 300e3, 64 << 20: 500e3}), 64 << 20, 16 << 10, Low, true},
		{"a noisy top below the plateau", withDiff(steps(map[uint64]float64{16 << 10: 650e3, 64 << 10: 750e3, 4 << 20: 900e3}), 64<<20, 700e3), 4 << 20, 16 << 10, High, false},
		{"a noisy point above the plateau", withDiff(steps(map[uint64]float64{16 << 10: 650e3, 64 << 10: 750e3, 4 << 20: 900e3}), 32<<20, 1200e3), 4 << 20, 16 << 10, High, false},
		// Seen on sd-cheap-old at load 7.5: the two largest alignments read low, one below the other.
		{"two low readings at the top", withDiff(withDiff(steps(map[uint64]float64{4 << 10: 450e3, 128 << 10: 600e3}), 32<<20, 430e3), 64<<20, 365e3), 128 << 10, 4 << 10, High, false},
		// Seen on sd-cheap-old beside QEMU guests: 8 and 4 MiB read low together, while 2 MiB
		// down to 128 KiB sat back at the plateau level.
		{"two adjacent low readings inside the plateau", withDiff(withDiff(steps(map[uint64]float64{4 << 10: 450e3, 128 << 10: 600e3}), 4<<20, 480e3), 8<<20, 470e3), 128 << 10, 4 << 10, High, false},
		{"one low reading inside the plateau", withDiff(steps(map[uint64]float64{4 << 10: 450e3, 128 << 10: 600e3}), 2<<20, 470e3), 128 << 10, 4 << 10, High, false},
		// A real step with one high reading below it is still a step.
		{"a high reading below the AU", withDiff(steps(map[uint64]float64{16 << 10: 650e3, 64 << 10: 750e3, 4 << 20: 900e3}), 1<<20, 900e3), 4 << 20, 16 << 10, High, false},
		// Seen on sd-typical on a busy host: 29 µs at 8 KiB under 646 µs at 16 KiB is noise.
		{"a small diff under the page", withDiff(steps(map[uint64]float64{16 << 10: 650e3, 64 << 10: 750e3, 4 << 20: 900e3}), 8<<10, 29e3), 4 << 20, 16 << 10, High, false},
		{"small eMMC-like steps", steps(map[uint64]float64{16 << 10: 160e3, 64 << 10: 180e3, 1 << 20: 200e3}), 1 << 20, 16 << 10, Medium, false}, // 20 µs step against a 14 µs floor (2 % of a 700 µs read)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			at := AlignTest{Points: c.pts}
			au, page := analyzeAlign(&at)
			if au.Value != c.au || au.Confidence != c.auConf || au.AtLeast != c.atLeast {
				t.Errorf("AU = %d %s at-least %v (%s), want %d %s at-least %v", au.Value, au.Confidence, au.AtLeast, au.Evidence, c.au, c.auConf, c.atLeast)
			}
			if page.Value != c.page {
				t.Errorf("page = %d (%s), want %d", page.Value, page.Evidence, c.page)
			}
		})
	}
}

func TestBoundariesAreOddMultiples(t *testing.T) {
	for _, a := range alignments(256<<20, 1024, 64<<20) {
		bs := boundaries(256<<20, 1024, a, 64)
		if len(bs) < 2 {
			t.Errorf("align %d: %d boundaries, want at least 2", a, len(bs))
		}
		for _, b := range bs {
			if b%a != 0 || (b/a)%2 != 1 || b+1024 > 256<<20 {
				t.Errorf("align %d: boundary %d is not an odd multiple inside the device", a, b)
			}
		}
	}
}

func TestParseExtCSD(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "extcsd.txt"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := parseExtCSD(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if e.LifeTimeA != 1 || e.LifeTimeB != 3 || e.PreEOL != 1 {
		t.Errorf("parsed %+v, want A=1 B=3 PreEOL=1", e)
	}
	if want := "type B 20–30 %"; !strings.Contains(e.Summary, want) {
		t.Errorf("summary %q does not contain %q", e.Summary, want)
	}
	if _, err := parseExtCSD("Extended CSD rev 1.5\n"); err == nil {
		t.Error("parseExtCSD accepted output without life-time fields")
	}
}

func TestUSBInfo(t *testing.T) {
	cases := []struct {
		path string
		usb  bool
	}{
		{"/sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdb", true},
		{"/sys/devices/platform/soc/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa/block/mmcblk0", false},
		{"/sys/devices/virtual/block/loop3", false},
	}
	for _, c := range cases {
		if got := usbInfo(c.path); got.Through != c.usb || (c.usb && !strings.Contains(got.Warning, "rotational=1")) {
			t.Errorf("usbInfo(%s) = %+v, want through_usb %v with the rotational warning", c.path, got, c.usb)
		}
	}
}

// TestOutputGolden checks the summary of a model probe against testdata/summary.golden and
// that the charts are well-formed SVG with a point per measurement.
func TestOutputGolden(t *testing.T) {
	r := runModel(t, "sd-typical", true)
	r.Device, r.Kind = "/dev/model", "disk"
	r.DurationNs, r.Align.DurationNs = 0, 0
	dir := t.TempDir()
	paths, err := WriteFiles(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 5 {
		t.Errorf("wrote %v, want probe.json, probe.txt and three charts", paths)
	}
	got, err := os.ReadFile(filepath.Join(dir, SummaryTxtFile))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		_ = os.WriteFile(golden+".got", got, 0o644)
		t.Errorf("summary differs from %s; see %s.got (go test -update accepts it)", golden, golden)
	}
	back, err := Load(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if back.Estimates.AU != r.Estimates.AU || len(back.Align.Points) != len(r.Align.Points) {
		t.Errorf("probe.json does not round-trip: %+v", back.Estimates.AU)
	}
	for name, points := range map[string]int{AlignSVG: len(r.Align.Points), ReadSweepSVG: len(r.ReadSweep), WriteSweepSVG: len(r.WriteSweep) + len(r.GappedSweep)} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		circles := 0
		dec := xml.NewDecoder(f)
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s is not well-formed XML: %v", name, err)
			}
			if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
				circles++
			}
		}
		f.Close()
		if circles != points {
			t.Errorf("%s has %d points, want %d", name, circles, points)
		}
	}
}

// burstDevice slows chosen reads for their first few calls: a burst of host load that hits
// the few boundaries of the largest alignment during the first pass.
type burstDevice struct {
	*modelDevice
	slow  map[uint64]int // offset → reads still to slow
	extra time.Duration
}

func (d *burstDevice) ReadAt(p []byte, off uint64) (time.Duration, error) {
	lat, err := d.modelDevice.ReadAt(p, off)
	if d.slow[off] > 0 {
		d.slow[off]--
		lat += d.extra
	}
	return lat, err
}

// TestAlignRecheck: on sd-typical (AU 4 MiB), every try of the reads across the two 64 MiB
// boundaries of a 256 MiB card is slowed in the first pass. The first reading then says "AU at
// least 64 MiB"; the recheck reads those alignments again and finds 4 MiB.
func TestAlignRecheck(t *testing.T) {
	md := newModelDevice(t, "sd-typical", 256<<20)
	const rs = 1024 // two 512-byte blocks
	d := &burstDevice{modelDevice: md, slow: map[uint64]int{}, extra: 400 * time.Microsecond}
	opts := Options{MaxReadBlock: 1 << 20}
	opts.defaults()
	for _, pos := range boundaries(md.Size(), rs, 64<<20, opts.AlignPositions) {
		d.slow[pos-rs/2] = opts.AlignTries
	}
	buf := make([]byte, rs)
	at, err := alignTest(context.Background(), d, buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(at.Rechecked) == 0 || !slices.Contains(at.Rechecked, uint64(64<<20)) {
		t.Errorf("rechecked %v, want 64 MiB among them", at.Rechecked)
	}
	au, _ := analyzeAlign(&at)
	if au.Value != 4<<20 || au.AtLeast || au.Confidence == Low {
		t.Errorf("AU after the recheck: %s at-least %v %s (%s), want 4 MiB", formatSize(au.Value), au.AtLeast, au.Confidence, au.Evidence)
	}
}

func TestAnalyzeFAT(t *testing.T) {
	const au = 4 << 20
	pts := func(first float64) []FATPoint {
		return []FATPoint{{Offset: 0, MBps: first}, {Offset: au, MBps: first}, {Offset: 2 * au, MBps: 0.11}, {Offset: 3 * au, MBps: 0.11}, {Offset: 164 << 20, MBps: 0.1}}
	}
	tests := []struct {
		name  string
		first float64
		value uint64
		conf  string
	}{
		{"a FAT area", 2.0, 2 * au, High},
		{"no faster area", 0.11, 0, High},
		{"faster, but not by a FAT area's factor (a busy host)", 0.26, 0, Low},
		{"a random-write log's middle under host overhead (CI: 1.600 vs 1.241 MB/s)", 0.129, 0, Low},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := analyzeFAT(pts(tc.first), au)
			if e.Value != tc.value || e.Confidence != tc.conf {
				t.Errorf("FAT area %s %s (%s), want %s %s", formatSize(e.Value), e.Confidence, e.Evidence, formatSize(tc.value), tc.conf)
			}
		})
	}
}

// TestBusyFAT: "no FAT area" measured while the machine was busy drops to low confidence and
// says why; a FAT area found, a quiet span, and an estimate that has no value are left alone.
func TestBusyFAT(t *testing.T) {
	busy := measure.Noise{Busy: true, Why: "other processes up to 180 % of a CPU"}
	for _, tc := range []struct {
		name     string
		in       Estimate
		noise    measure.Noise
		wantConf string
		wantWhy  bool
	}{
		{"none found, busy", Estimate{Value: 0, Confidence: High}, busy, Low, true},
		{"none found, quiet", Estimate{Value: 0, Confidence: High}, measure.Noise{}, High, false},
		{"area found, busy", Estimate{Value: 8 << 20, Confidence: High}, busy, High, false},
		{"no estimate, busy", Estimate{Confidence: None}, busy, None, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.in
			busyFAT(&e, tc.noise)
			if e.Confidence != tc.wantConf {
				t.Errorf("confidence %v, want %v", e.Confidence, tc.wantConf)
			}
			if got := strings.Contains(e.Evidence, "busy"); got != tc.wantWhy {
				t.Errorf("evidence %q: says busy %v, want %v", e.Evidence, got, tc.wantWhy)
			}
		})
	}
}
