package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsbench/fsbench/internal/testkit/golden"
)

// fixture is a small run with one measurement of every status.
func fixture() *Run {
	start := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	return &Run{
		Schema:   Schema,
		Tool:     Tool{Name: "fsbench", Version: "test", GoVersion: "go1.26", PeakRSSBytes: 20 << 20},
		Status:   RunComplete,
		Started:  start,
		Finished: start.Add(time.Minute),
		Machine:  Machine{Hostname: "bench", Arch: "amd64", CPUs: 2, MemBytes: 24 << 30, Kernel: "6.18.44"},
		Target:   Target{Kind: "image", Image: "/tmp/x.img", SizeBytes: 512 << 20, Device: "/dev/loop3", LoopMethod: "LOOP_CONFIGURE", DirectIO: true},
		Device:   &DeviceIdentity{Name: "loop3", Path: "/dev/loop3", SizeBytes: 512 << 20, Queue: map[string]string{"rotational": "0"}},
		Tools:    map[string]string{"mkfs.ext4": "mke2fs 1.47.0 (5-Feb-2023)"},
		Config:   json.RawMessage(`{"repetitions":1}`),
		Dataset:  Dataset{Kind: "generated", Seed: 1, Files: 10, Dirs: 3, Symlinks: 1, Bytes: 1 << 20, LargestFile: 1 << 18, MedianFile: 4096, Compressibility: 0.45, SampledBytes: 1 << 20, Copies: 5, VideoBytes: 2 << 20, VideoCopies: 5},
		Methods:  map[string]string{"mount_mem": "delta"},
		Variants: []Variant{
			{Name: "ext4", FS: "ext4", Status: OK, Kernel: "built-in"},
			{Name: "squashfs-lzo", FS: "squashfs", MkfsArgs: []string{"-comp", "lzo"}, ReadOnly: true, Status: OK, Kernel: "built-in"},
			{Name: "f2fs", FS: "f2fs", Status: Skipped, Reason: "this kernel has no f2fs"},
			{Name: "jffs2-8M", FS: "jffs2", Status: OK, Base: "jffs2", PartitionBytes: 8 << 20,
				Source: &Source{Dir: "guest", Kernel: "6.1.0-56-amd64", Guest: "qemu tcg", Label: "nand-a"}},
		},
		Measurements: []Measurement{
			{Variant: "ext4", Test: "write", Rep: 1, Status: OK, Value: Float(1.5), Unit: "s", WallSeconds: 1.5, UserSeconds: 0.1, SysSeconds: 0.7,
				Device: &DeviceIO{ReadBytes: 4096, WriteBytes: 5 << 20, ReadIOs: 1, WriteIOs: 40, FlushIOs: 2, BusyMs: 900}, LogicalBytes: 5 << 20, MBps: 3.4952533333333333},
			{Variant: "ext4", Test: "read", Rep: 1, Status: Failed, Error: "reading copy-1/etc/x: input/output error"},
			{Variant: "ext4", Test: "remove", Rep: 1, Status: NotRun, Note: "read failed in this repetition"},
			{Variant: "squashfs-lzo", Test: "write", Rep: 1, Status: NA, Note: "read-only filesystem"},
			{Variant: "squashfs-lzo", Test: "mkfs", Rep: 1, Status: OK, Value: Float(0.25), Unit: "s", WallSeconds: 0.25, Extra: map[string]float64{"image_bytes": 400000}},
			{Variant: "jffs2-8M", Test: "mount_time", Rep: 1, Status: OK, Value: Float(0.22), Unit: "s", WallSeconds: 0.22},
		},
	}
}

func TestGolden(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, fixture()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"results.json", "results.csv"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, name+".golden", b)
	}
}

// TestEncodeRunIsMarshalIndent: results.json, written one measurement at a time, is byte for
// byte what json.MarshalIndent makes of the whole run, with and without measurements.
func TestEncodeRunIsMarshalIndent(t *testing.T) {
	none := fixture()
	none.Measurements = nil
	one := fixture()
	one.Measurements = one.Measurements[:1]
	for name, r := range map[string]*Run{"six measurements": fixture(), "one": one, "none": none} {
		r.Summary = r.Summarize()
		want, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := encodeRun(&got, r); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(want)+"\n", got.String()); d != "" {
			t.Errorf("%s: encodeRun differs from MarshalIndent (-want +got):\n%s", name, d)
		}
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := fixture()
	if err := Save(dir, want); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "results.json")} {
		got, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		want.Summary = want.Summarize()
		// MarshalIndent re-indents the raw config; compare it by meaning.
		compact := cmp.Transformer("compact", func(m json.RawMessage) string {
			var b bytes.Buffer
			json.Compact(&b, m)
			return b.String()
		})
		if d := cmp.Diff(want, got, compact); d != "" {
			t.Errorf("Load(%s) differs (-want +got):\n%s", p, d)
		}
	}
	// No temporary files are left beside the results.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("results dir holds %d entries, want results.json and results.csv", len(entries))
	}
}

func TestLoadRejects(t *testing.T) {
	tests := []struct {
		name, content, wantErr string
	}{
		{"not json", "hello", "not an fsbench results file"},
		{"other json", `{"schema":"something/else"}`, "not an fsbench results file"},
		{"future schema", `{"schema":"fsbench.results/v9"}`, "this fsbench reads " + Schema},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "results.json")
			os.WriteFile(p, []byte(tc.content), 0o644)
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Load error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func TestSummarize(t *testing.T) {
	r := &Run{Measurements: []Measurement{
		{Variant: "a", Test: "t", Rep: 0, Warmup: true, Status: OK, Value: Float(100), Unit: "s"},
		{Variant: "a", Test: "t", Rep: 1, Status: OK, Value: Float(3), Unit: "s"},
		{Variant: "a", Test: "u", Rep: 1, Status: Failed},
		{Variant: "a", Test: "t", Rep: 2, Status: OK, Value: Float(1), Unit: "s"},
		{Variant: "a", Test: "t", Rep: 3, Status: OK, Value: Float(2), Unit: "s"},
	}}
	want := []CellSummary{{Variant: "a", Test: "t", Unit: "s", Stats: Stats{N: 3, Median: 2, Min: 1, Max: 3}}}
	if d := cmp.Diff(want, r.Summarize()); d != "" {
		t.Errorf("Summarize (-want +got):\n%s", d)
	}
}

func TestValuesExcludeWarmupAndFailures(t *testing.T) {
	r := &Run{Measurements: []Measurement{
		{Variant: "a", Test: "t", Rep: 0, Warmup: true, Status: OK, Value: Float(100)},
		{Variant: "a", Test: "t", Rep: 1, Status: OK, Value: Float(1)},
		{Variant: "a", Test: "t", Rep: 2, Status: Failed},
		{Variant: "a", Test: "t", Rep: 3, Status: OK, Value: Float(3)},
		{Variant: "b", Test: "t", Rep: 1, Status: OK, Value: Float(7)},
	}}
	if d := cmp.Diff([]float64{1, 3}, r.Values("a", "t")); d != "" {
		t.Error(d)
	}
	r.Measurements[1].Extra = map[string]float64{"k": 5}
	r.Measurements[0].Extra = map[string]float64{"k": 50} // warm-up: excluded
	if d := cmp.Diff([]float64{5}, r.ExtraValues("a", "t", "k")); d != "" {
		t.Error(d)
	}
	if n := len(r.Cell("a", "t")); n != 4 {
		t.Errorf("Cell has %d measurements, want 4", n)
	}
}
