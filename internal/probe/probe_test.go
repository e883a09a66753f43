package probe

import (
	"bytes"
	"context"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/flash"
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
	if est.FATArea.Value != wantFAT {
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
