package advise

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/probe"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestExt4Stripe(t *testing.T) {
	cases := []struct {
		name           string
		page, au       uint64
		stride, stripe uint64
	}{
		// The Dreamplug card (seeds/002): 8 KiB page, 8 MiB erase block. They used
		// stripe-width=1024 (= AU / (stride × block)); in mke2fs's unit it is 2048.
		{"dreamplug", 8 << 10, 8 << 20, 2, 2048},
		{"sd-typical", 16 << 10, 4 << 20, 4, 1024}, // the README's ext4-tuned example
		{"small-AU card (sd-cheap-old before its calibration)", 4 << 10, 128 << 10, 1, 32},
		{"page below a block", 2 << 10, 1 << 20, 1, 256},
		{"AU below a block", 16 << 10, 2 << 10, 4, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, w := Ext4Stripe(c.page, c.au)
			if s != c.stride || w != c.stripe {
				t.Errorf("Ext4Stripe(%d, %d) = %d, %d; want %d, %d", c.page, c.au, s, w, c.stride, c.stripe)
			}
		})
	}
}

func TestF2FSAndNILFS(t *testing.T) {
	cases := []struct {
		au        uint64
		sections  uint64
		nilfsBlks uint64
	}{
		{128 << 10, 1, 2048},
		{4 << 20, 2, 2048},
		{8 << 20, 4, 2048},
		{16 << 20, 8, 4096},
	}
	for _, c := range cases {
		if got := F2FSSections(c.au); got != c.sections {
			t.Errorf("F2FSSections(%d) = %d, want %d", c.au, got, c.sections)
		}
		if got := NILFSBlocksPerSegment(c.au); got != c.nilfsBlks {
			t.Errorf("NILFSBlocksPerSegment(%d) = %d, want %d", c.au, got, c.nilfsBlks)
		}
	}
}

// modelDevice is a probe.Device timed by a flash.Model (no real time passes).
type modelDevice struct{ m *flash.Model }

func (d modelDevice) do(op flash.Op, off, n uint64) (time.Duration, error) {
	var total time.Duration
	for o := uint64(0); o < n; o += 1 << 20 {
		lat, err := d.m.Do(flash.Request{Op: op, Off: off + o, Len: min(n-o, 1<<20)})
		if err != nil {
			return 0, err
		}
		total += lat
	}
	return total, nil
}
func (d modelDevice) ReadAt(p []byte, off uint64) (time.Duration, error) {
	return d.do(flash.OpRead, off, uint64(len(p)))
}
func (d modelDevice) WriteAt(p []byte, off uint64) (time.Duration, error) {
	return d.do(flash.OpWrite, off, uint64(len(p)))
}
func (d modelDevice) Discard(off, n uint64) error {
	_, err := d.m.Do(flash.Request{Op: flash.OpDiscard, Off: off, Len: n})
	return err
}
func (d modelDevice) Size() uint64      { return d.m.Size() }
func (d modelDevice) BlockSize() uint64 { return 512 }
func (d modelDevice) Direct() bool      { return true }

// TestAdviceFromProbe probes a model of each profile and checks that the ext4 command uses
// the stride and stripe-width the formula gives for the profile's true geometry.
func TestAdviceFromProbe(t *testing.T) {
	for _, name := range flash.Builtins() {
		t.Run(name, func(t *testing.T) {
			p, err := flash.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			m, err := flash.NewModel(p, 256<<20)
			if err != nil {
				t.Fatal(err)
			}
			r, err := probe.Run(context.Background(), modelDevice{m}, probe.Options{MaxReadBlock: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			g := FromProbe(r)
			stride, sw := Ext4Stripe(uint64(p.PageSize), uint64(p.AUSize))
			want := "-E stride=" + itoa(stride) + ",stripe-width=" + itoa(sw)
			var found bool
			for _, it := range Advise(g) {
				for _, c := range it.Commands {
					if strings.HasPrefix(c, "mkfs.ext4") && strings.Contains(c, want) {
						found = true
					}
				}
			}
			if !found {
				var b bytes.Buffer
				_ = Write(&b, g, Advise(g))
				t.Errorf("no mkfs.ext4 command with %q in:\n%s", want, b.String())
			}
		})
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

func TestTunedVariants(t *testing.T) {
	g := Geometry{AU: 4 << 20, Page: 16 << 10, Rotational: "1"}
	want := []plan.Variant{
		{Name: "ext4-tuned", FS: "ext4", MkfsArgs: []string{"-b", "4096", "-E", "stride=4,stripe-width=1024"}, MountOptions: "noatime"},
		{Name: "ext4-tuned-nojournal", FS: "ext4", MkfsArgs: []string{"-O", "^has_journal", "-b", "4096", "-E", "stride=4,stripe-width=1024"}, MountOptions: "noatime"},
		{Name: "f2fs-tuned", FS: "f2fs", MkfsArgs: []string{"-s", "2", "-z", "1"}, MountOptions: "noatime"},
		{Name: "nilfs2-tuned", FS: "nilfs2", MkfsArgs: []string{"-b", "4096", "-B", "2048"}, MountOptions: "noatime"},
		{Name: "btrfs-tuned", FS: "btrfs", MkfsArgs: []string{"-m", "single"}, MountOptions: "noatime,ssd"},
	}
	if diff := cmp.Diff(want, TunedVariants(g)); diff != "" {
		t.Errorf("TunedVariants (-want +got):\n%s", diff)
	}
	// fsbench run --tuned puts them in the matrix, where every mkfs word is checked.
	for _, v := range TunedVariants(g) {
		if err := fs.CheckMkfs(v.FS, v.MkfsArgs); err != nil {
			t.Errorf("%s: %v", v.Name, err)
		}
		if err := fs.CheckMount(v.FS, v.MountOptions); err != nil {
			t.Errorf("%s: %v", v.Name, err)
		}
	}
}

// TestWriteGolden checks the printed advice for a USB card reader with an 8 MiB AU against
// testdata/advice.golden.
func TestWriteGolden(t *testing.T) {
	g := Geometry{AU: 8 << 20, Page: 8 << 10, AUFrom: "alignment test: AU 8 MiB, high confidence",
		PageFrom: "write sweep: page 8 KiB, high confidence", Size: 8068792320, Device: "/dev/sdb",
		Rotational: "1", Scheduler: "[mq-deadline] none", DiscardMax: "0", USB: true, FATArea: 8 << 20, OpenAUs: 4}
	var b bytes.Buffer
	if err := Write(&b, g, Advise(g)); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "advice.golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		_ = os.WriteFile(golden+".got", b.Bytes(), 0o644)
		t.Errorf("advice differs from %s; see %s.got (go test -update accepts it)", golden, golden)
	}
	for _, s := range []string{"start=16384,", "stride=2,stripe-width=2048", "mkfs.f2fs -s 4", "-B 2048", "rotational", "does not take discards"} {
		if !bytes.Contains(b.Bytes(), []byte(s)) {
			t.Errorf("advice lacks %q", s)
		}
	}
}

// TestCautions: advice built on a figure the probe is not sure of says so before any command
// (the probe once found "AU at least 64 MiB, low confidence" under load and advise built a
// 64 MiB partition start from it without a word).
func TestCautions(t *testing.T) {
	est := func(v uint64, conf string, atLeast bool) probe.Estimate {
		return probe.Estimate{Value: v, Confidence: conf, AtLeast: atLeast, Evidence: "test"}
	}
	tests := []struct {
		name string
		au   probe.Estimate
		page probe.Estimate
		want []string // substrings of the cautions, in order; none when empty
	}{
		{"sure", est(4<<20, probe.High, false), est(16<<10, probe.High, false), nil},
		{"medium is enough", est(4<<20, probe.Medium, false), est(16<<10, probe.Medium, false), nil},
		{"low AU", est(4<<20, probe.Low, false), est(16<<10, probe.High, false), []string{"AU of 4 MiB is a low-confidence estimate"}},
		{"lower bound", est(64<<20, probe.Low, true), est(16<<10, probe.High, false), []string{"AU of 64 MiB is a low-confidence"}},
		{"no AU", est(0, probe.None, false), est(16<<10, probe.High, false), []string{"no AU was measured"}},
		{"low page", est(4<<20, probe.High, false), est(16<<10, probe.Low, false), []string{"page of 16 KiB"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &probe.Result{SizeBytes: 1 << 30}
			r.Estimates.AU, r.Estimates.ReadPage = tc.au, tc.page
			g := FromProbe(r)
			if len(g.Cautions) != len(tc.want) {
				t.Fatalf("cautions %q, want %d", g.Cautions, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(g.Cautions[i], w) {
					t.Errorf("caution %q lacks %q", g.Cautions[i], w)
				}
			}
			var b bytes.Buffer
			if err := Write(&b, g, Advise(g)); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if got := strings.Count(out, "caution: "); got != len(tc.want) {
				t.Errorf("printed %d cautions, want %d:\n%s", got, len(tc.want), out)
			}
			if len(tc.want) > 0 && strings.Index(out, "caution: ") > strings.Index(out, "sfdisk") {
				t.Errorf("the caution comes after the first command:\n%s", out)
			}
		})
	}
}
