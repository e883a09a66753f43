package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/targets"
	"github.com/fsbench/fsbench/internal/targets/device"
	"github.com/fsbench/fsbench/internal/trace"
)

// These tests make, mount and measure real filesystems on loop devices over image files in a
// temporary directory. They need root and a kernel with loop devices.
func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes loop devices and mounts filesystems")
	}
}

// smallConfig is a real but quick run: 320 MiB is the smallest size at which every default
// filesystem can be made (mkfs.xfs refuses less than 300 MB).
func smallConfig() plan.Config {
	cfg := plan.Default()
	cfg.Size = 320 << 20
	cfg.Repetitions = 1
	cfg.DatasetSize = 8 << 20
	cfg.VideoSize = 12 << 20
	return cfg
}

// runAndLoad runs cfg to completion in a temporary directory, checks that nothing is left
// mounted or attached, and returns the saved results.
func runAndLoad(t *testing.T, cfg plan.Config) *results.Run {
	t.Helper()
	dir := t.TempDir()
	out, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(dir, "res")}, Log: t.Logf}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	checkNoLeftovers(t, dir)
	r, err := results.Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunEveryHostVariant(t *testing.T) {
	needRoot(t)
	r := runAndLoad(t, smallConfig())
	if r.Status != results.RunComplete {
		t.Errorf("status = %s", r.Status)
	}
	if !r.Target.DirectIO {
		t.Errorf("the loop device has no direct I/O: %+v", r.Target)
	}
	if r.Dataset.Files == 0 || r.Dataset.Bytes < 7<<20 || r.Dataset.Compressibility <= 0 || r.Dataset.Compressibility >= 1 {
		t.Errorf("dataset not described: %+v", r.Dataset)
	}
	procFS, _ := os.ReadFile("/proc/filesystems")
	ranAny := false
	for _, v := range r.Variants {
		if v.Status == results.Skipped {
			if v.Reason == "" {
				t.Errorf("%s skipped without a reason", v.Name)
			}
			if strings.Contains(string(procFS), "\t"+v.FS+"\n") && v.FS != "nilfs2" {
				t.Errorf("%s skipped although this kernel has %s: %s", v.Name, v.FS, v.Reason)
			}
			continue
		}
		ranAny = true
		if _, ok := r.Tools[toolOf(v.FS)]; !ok {
			t.Errorf("no version recorded for %s's tool", v.Name)
		}
		for _, test := range append(catalog.Setup(), catalog.Bootlin()...) {
			checkCell(t, r, v, test)
		}
	}
	if !ranAny {
		t.Fatal("no variant ran on this machine")
	}
	if r.Tool.PeakRSSBytes == 0 {
		t.Error("peak RSS not recorded")
	}
}

func toolOf(fsName string) string {
	switch fsName {
	case "squashfs":
		return "mksquashfs"
	default:
		return "mkfs." + fsName
	}
}

// checkCell checks that the figures of one cell are present and physically sane.
func checkCell(t *testing.T, r *results.Run, v results.Variant, test string) {
	t.Helper()
	cell := r.Cell(v.Name, test)
	if len(cell) != 1 {
		t.Errorf("%s %s: %d measurements, want 1", v.Name, test, len(cell))
		return
	}
	m := cell[0]
	tinfo, _ := suite.Lookup("bootlin", test)
	switch {
	case v.ReadOnly && !tinfo.ReadOnly:
		if m.Status != results.NA {
			t.Errorf("%s %s on a read-only fs: status %s, want n/a", v.Name, test, m.Status)
		}
		return
	case test == catalog.ModuleLoad:
		if m.Status != results.NA && m.Status != results.OK {
			t.Errorf("%s module_load: %+v", v.Name, m)
		}
		return
	case m.Status != results.OK:
		t.Errorf("%s %s: status %s: %s %s", v.Name, test, m.Status, m.Error, m.Note)
		return
	}
	val := *m.Value
	ds := r.Dataset
	switch test {
	case catalog.Mkfs, catalog.Mount, catalog.Write, catalog.Read, catalog.ReadRemoveWrite, catalog.Remove, catalog.VideoWrite, catalog.VideoRead:
		if val <= 0 || m.WallSeconds <= 0 || m.Device == nil {
			t.Errorf("%s %s: time %v, device %v", v.Name, test, val, m.Device)
		}
	}
	switch test {
	case catalog.MountMem:
		// The median of three cold mounts, never a negative size.
		if val < 0 || len(m.Extra) < 5 || m.Extra["min_bytes"] > m.Extra["max_bytes"] {
			t.Errorf("%s mount_mem %v, extra %v", v.Name, val, m.Extra)
		}
	case catalog.Write:
		// Everything copied must have reached the device (syncfs is inside the timed part),
		// and no default variant compresses.
		if want := uint64(ds.Copies) * ds.Bytes; m.Device.WriteBytes < want {
			t.Errorf("%s write: device wrote %d bytes < %d copied", v.Name, m.Device.WriteBytes, want)
		}
	case catalog.ReadRemoveWrite:
		// The copies must really be written: a reflink (copy_file_range on xfs/btrfs) would
		// share blocks instead.
		if want := uint64(ds.Copies) * ds.Bytes; m.Device.WriteBytes < want {
			t.Errorf("%s read_remove_write: device wrote %d bytes < %d copied", v.Name, m.Device.WriteBytes, want)
		}
	case catalog.Read:
		// Cold reads must reach the device. Compressed images read less than the logical size.
		want := uint64(ds.Copies) * ds.Bytes
		if v.ReadOnly {
			want = uint64(float64(ds.Bytes) * ds.Compressibility * 0.5)
		}
		if m.Device.ReadBytes < want {
			t.Errorf("%s read: device read %d bytes < %d", v.Name, m.Device.ReadBytes, want)
		}
		if m.LogicalBytes < ds.Bytes {
			t.Errorf("%s read: read %d logical bytes < dataset %d", v.Name, m.LogicalBytes, ds.Bytes)
		}
	case catalog.VideoRead:
		if want := uint64(ds.VideoCopies) * ds.VideoBytes; m.Device.ReadBytes < want || m.LogicalBytes != want {
			t.Errorf("%s video_read: device read %d, logical %d, want %d", v.Name, m.Device.ReadBytes, m.LogicalBytes, want)
		}
	case catalog.UsedSpace:
		if !v.ReadOnly && uint64(val) < uint64(ds.Copies)*ds.Bytes {
			t.Errorf("%s used_space %v < %d bytes stored", v.Name, val, uint64(ds.Copies)*ds.Bytes)
		}
		if v.ReadOnly && (val <= 0 || val > float64(ds.Bytes)) {
			t.Errorf("%s used_space %v not in (0, %d] for a compressed image", v.Name, val, ds.Bytes)
		}
	case catalog.Mkfs:
		if v.ReadOnly && m.Extra["image_bytes"] <= 0 {
			t.Errorf("%s mkfs: no image size", v.Name)
		}
	}
}

func TestRunInterrupted(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.Variants = cfg.Variants[:1] // ext4
	cfg.Repetitions = 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt := Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(dir, "res")}, Log: t.Logf}, Progress: func(p Progress) {
		if p.Rep == 2 && p.Test == catalog.Read { // in the middle of the second repetition
			cancel()
		}
	}}
	out, err := Run(ctx, opt)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	checkNoLeftovers(t, dir)
	r, err := results.Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != results.RunInterrupted {
		t.Errorf("status = %s, want interrupted", r.Status)
	}
	if got := len(r.Cell("ext4", catalog.Read)); got != 1 {
		t.Errorf("read cell has %d measurements, want the one completed before the interrupt", got)
	}
}

func TestRunRefusesExistingImage(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "mine.img")
	if err := os.WriteFile(img, []byte("user data"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	cfg.Variants = cfg.Variants[:1]
	_, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(dir, "res"), Image: img}}})
	if err == nil {
		t.Fatal("Run overwrote an existing file")
	}
	if b, _ := os.ReadFile(img); string(b) != "user data" {
		t.Errorf("the existing file was changed: %q", b)
	}
	checkNoLeftovers(t, dir)
}

// checkNoLeftovers fails if anything is mounted under dir or a loop device is backed by a file
// under dir.
func checkNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir) {
			t.Errorf("still mounted: %s", fields[4])
		}
	}
	loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, p := range loops {
		b, _ := os.ReadFile(p)
		if strings.HasPrefix(strings.TrimSpace(string(b)), dir) {
			t.Errorf("loop device still attached: %s -> %s", p, b)
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(session.DefaultLedgerDir, "*.json")); len(entries) > 0 {
		for _, e := range entries {
			if strings.TrimSuffix(filepath.Base(e), ".json") == strconv.Itoa(os.Getpid()) {
				t.Errorf("this process's ledger %s was not removed", e)
			}
		}
	}
}

// A test that exceeds its time limit is recorded as failed with a message saying what to do,
// the rest of that repetition as not run, and the run goes on to the next variant.
func TestTimeoutIsRecordedAndRunGoesOn(t *testing.T) {
	needRoot(t)
	cfg := smallConfig()
	cfg.Variants = []plan.Variant{cfg.Variants[0], cfg.Variants[4]} // ext4, xfs
	cfg.Timeout = plan.Duration{Duration: time.Microsecond}
	r := runAndLoad(t, cfg)
	if r.Status != results.RunComplete {
		t.Errorf("status %s, want complete", r.Status)
	}
	for _, v := range []string{"ext4", "xfs"} {
		mk := r.Cell(v, catalog.Mkfs)
		if len(mk) != 1 || mk[0].Status != results.Failed || !strings.Contains(mk[0].Error, "timed out") || !strings.Contains(mk[0].Error, "--timeout") {
			t.Errorf("%s mkfs: %+v, want failed with a timeout message", v, mk)
		}
		if rd := r.Cell(v, catalog.Read); len(rd) != 1 || rd[0].Status != results.NotRun {
			t.Errorf("%s read: %+v, want not run", v, rd)
		}
	}
}

// --dataset DIR: the user's own tree is copied into RAM and used, and described in the results.
func TestUserDataset(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	tree := filepath.Join(dir, "rootfs")
	for i, name := range []string{"etc/hostname", "usr/bin/tool", "usr/share/doc/readme"} {
		p := filepath.Join(tree, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(strings.Repeat("fsbench ", 1000*(i+1))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("usr/bin", filepath.Join(tree, "bin"))
	cfg := smallConfig()
	cfg.Variants = cfg.Variants[:1]
	cfg.Dataset = tree
	cfg.Tests = []string{catalog.Write, catalog.Read}
	r := runAndLoad(t, cfg)
	ds := r.Dataset
	if ds.Kind != "directory" || ds.Path != tree || ds.Files != 3 || ds.Symlinks != 1 || ds.Bytes != 8000*6 {
		t.Errorf("dataset = %+v", ds)
	}
	if got := len(r.Cell("ext4", catalog.Mkfs)); got != 0 {
		t.Errorf("mkfs recorded although only write and read were selected")
	}
	rd := r.Cell("ext4", catalog.Read)
	if len(rd) != 1 || rd[0].Status != results.OK || rd[0].LogicalBytes != 5*8000*6 {
		t.Errorf("read = %+v, want 5 copies of the user's %d bytes", rd, 8000*6)
	}
}

// The simulated card target: the run goes through the flash model, and every timed test carries
// the card's counters.
func TestRunOnSimulatedCard(t *testing.T) {
	needRoot(t)
	if !simcardAvailable() {
		t.Skip("the simulated card needs FUSE and a 64-bit build")
	}
	cfg := smallConfig()
	cfg.Size = 256 << 20
	// ext4 without lazy initialisation: its background thread would zero inode tables while
	// the tests run, writes no test asked for and that land wherever they happen to.
	cfg.Variants = []plan.Variant{
		{Name: "ext4", FS: "ext4", MkfsArgs: []string{"-E", "lazy_itable_init=0,lazy_journal_init=0"}},
		cfg.Variants[9], // squashfs-lzo
	}
	cfg.Tests = []string{catalog.Mkfs, catalog.Write, catalog.Read, catalog.Remove}
	dir := t.TempDir()
	out, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(dir, "res"), Target: plan.TargetSpec{Kind: plan.TargetSimcard, Profile: "sd-typical"}, TimeScale: 0.01}, Self: []string{fsbenchBinary(t)}, Log: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	checkNoLeftovers(t, dir)
	r, err := results.Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Target.Kind != results.KindSimcard || r.Target.Profile != "sd-typical" || r.Target.TimeScale != 0.01 || r.Target.CardProfile != "sd-typical" {
		t.Errorf("target = %+v", r.Target)
	}
	// The card's path calibration is recorded: a round trip through the loop device and FUSE
	// takes tens of microseconds at least.
	if r.Target.PathOffsetNs == 0 || !strings.Contains(r.Target.PathCalibration, "loop device") {
		t.Errorf("path calibration not recorded: offset %d ns, %q", r.Target.PathOffsetNs, r.Target.PathCalibration)
	}
	// The card's loop device got the scheduler a real SD card gets, unless this kernel has none.
	if b, err := os.ReadFile("/sys/block/loop0/queue/scheduler"); err == nil && strings.Contains(string(b), simcardScheduler) && r.Target.Scheduler != simcardScheduler {
		t.Errorf("the simulated card's scheduler = %q, want %s (what the kernel gives an SD card)", r.Target.Scheduler, simcardScheduler)
	}
	// ... and gave it back: a loop device outlives the run and keeps its scheduler.
	if r.Device != nil && r.Device.Name != "" {
		before := r.Device.Queue["scheduler"] // identified before the scheduler was set
		if now, err := os.ReadFile("/sys/block/" + r.Device.Name + "/queue/scheduler"); err == nil && strings.TrimSpace(string(now)) != strings.TrimSpace(before) {
			t.Errorf("%s's scheduler after the run = %q, before = %q", r.Device.Name, strings.TrimSpace(string(now)), before)
		}
	}
	if r.Card == nil || r.Card.EraseBlocks == 0 {
		t.Errorf("no final card state: %+v", r.Card)
	}
	// How many erases a run this small costs depends on the profile's open AUs and log
	// (TestSimulatedCardHealthDelta makes sure of some); here the count must only agree.
	checkHealthDelta(t, r, false)
	w := r.Cell("ext4", catalog.Write)
	if len(w) != 1 || w[0].Status != results.OK || w[0].Flash == nil {
		t.Fatalf("ext4 write = %+v", w)
	}
	f := w[0].Flash
	// Everything copied reached the card, and the card programmed at least that.
	if f.HostBytesWritten < w[0].LogicalBytes {
		t.Errorf("card received %d bytes, the test copied %d", f.HostBytesWritten, w[0].LogicalBytes)
	}
	if f.FlashBytesWritten < f.HostBytesWritten || f.WriteAmplification < 1 {
		t.Errorf("flash wrote %d < host %d (WA %v)", f.FlashBytesWritten, f.HostBytesWritten, f.WriteAmplification)
	}
	rd := r.Cell("ext4", catalog.Read)
	if len(rd) != 1 || rd[0].Flash == nil || rd[0].Flash.HostBytesRead < r.Dataset.Bytes {
		t.Errorf("ext4 read did not reach the card: %+v", rd)
	}
	// The trace and the live card saw the same requests: data writes agree to the byte. The
	// loop device turns write-zeroes into a hole-punching fallocate, which the card can only
	// count as a discard; the replay counts them as the writes a real SD card (which has no
	// write-zeroes command) receives from the kernel.
	if trace.Available() == nil {
		tr := w[0].Trace
		if tr == nil {
			t.Fatal("no trace on the simulated card")
		}
		// The card's window lies inside the trace's: equal but for background writes that
		// fall between the two (a journal commit), which a few percent covers.
		within := func(traced, live uint64) bool {
			return traced >= live && float64(traced-live) <= 0.01*float64(traced)+64<<10
		}
		if !within(tr.Summary.Write.Bytes, f.HostBytesWritten) || !within(tr.Summary.Other.Bytes+tr.Summary.Discard.Bytes, f.HostBytesDiscarded) {
			t.Errorf("trace wrote %d (+%d write-zeroes, %d discarded), the live card received %d (+%d discarded)",
				tr.Summary.Write.Bytes, tr.Summary.Other.Bytes, tr.Summary.Discard.Bytes, f.HostBytesWritten, f.HostBytesDiscarded)
		}
		if rp := tr.Replay["sd-typical"].Flash; rp == nil || rp.HostBytesWritten != tr.Summary.Write.Bytes+tr.Summary.Other.Bytes {
			t.Errorf("replay through sd-typical received %+v", rp)
		}
	}
}

func TestUntilStable(t *testing.T) {
	needRoot(t)
	// A busy machine makes until-stable wait for quiet: not for two minutes in a test.
	old := quietWait
	quietWait = 5 * time.Second
	t.Cleanup(func() { quietWait = old })
	tests := []struct {
		name         string
		target       float64
		wantReps     int
		wantUnstable bool
	}{
		// A target no interval can miss: stable as soon as the interval exists, at 6 samples.
		// (±1000 % was missed once on a loaded machine: a mount of a few milliseconds took
		// 12 times its median in one repetition.)
		{"loose target", 1e9, 6, false},
		// ±0.001 % is never reached on a shared machine: stops at the cap, and says so.
		{"impossible target", 0.00001, 7, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Variants = cfg.Variants[:1]
			cfg.Tests = []string{catalog.Mkfs, catalog.Mount}
			dir := t.TempDir()
			cfg.UntilStable, cfg.MaxRepetitions = tc.target, 7
			out, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(dir, "res")}}})
			if err != nil {
				t.Fatal(err)
			}
			checkNoLeftovers(t, dir)
			r, err := results.Load(out.Dir)
			if err != nil {
				t.Fatal(err)
			}
			v := r.Variants[0]
			want := tc.wantReps
			if busy := r.Methods["until_stable_busy"]; busy != "" && tc.wantUnstable {
				// The sentinel's way out: on a busy machine until-stable stops repeating and
				// records why, instead of piling up disturbed repetitions to the cap.
				t.Logf("stopped early on a busy machine: %s", busy)
				want = v.Repetitions
				if v.Repetitions < 6 || v.Repetitions > tc.wantReps {
					t.Errorf("repetitions %d on a busy machine, want between 6 and %d", v.Repetitions, tc.wantReps)
				}
			}
			if v.Repetitions != want || (len(v.Unstable) > 0) != tc.wantUnstable {
				t.Errorf("repetitions %d unstable %v, want %d and unstable=%v", v.Repetitions, v.Unstable, tc.wantReps, tc.wantUnstable)
			}
			if n := len(r.Values("ext4", catalog.Mkfs)); n != want {
				t.Errorf("%d mkfs samples, want %d", n, want)
			}
			if r.Methods["until_stable"] == "" {
				t.Error("the method is not recorded")
			}
		})
	}
}

// What the device sees: the journal's extra writes, and the writes that atime updates make on a
// read test, both as the seeds argued ("ext4 without journal reduces writes", "atime adds a
// write to every read") and nobody measured.
func TestJournalAndAtimeWrites(t *testing.T) {
	needRoot(t)
	cfg := smallConfig()
	// No lazy initialisation: ext4's background zeroing of inode tables would land in the
	// measured windows at random and swamp the differences this test looks for.
	noLazy := []string{"-E", "lazy_itable_init=0,lazy_journal_init=0"}
	cfg.Variants = []plan.Variant{
		{Name: "ext4", FS: "ext4", MkfsArgs: noLazy},
		{Name: "ext4-nojournal", FS: "ext4", MkfsArgs: append([]string{"-O", "^has_journal"}, noLazy...)},
		{Name: "ext4-strictatime", FS: "ext4", MkfsArgs: noLazy, MountOptions: "strictatime"},
		{Name: "ext4-noatime", FS: "ext4", MkfsArgs: noLazy, MountOptions: "noatime"},
	}
	cfg.Tests = []string{catalog.Write, catalog.Read}
	r := runAndLoad(t, cfg)
	dev := func(variant, test string) uint64 {
		c := r.Cell(variant, test)
		if len(c) != 1 || c[0].Status != results.OK {
			t.Fatalf("%s %s: %+v", variant, test, c)
		}
		return c[0].Device.WriteBytes
	}
	if j, nj := dev("ext4", catalog.Write), dev("ext4-nojournal", catalog.Write); j <= nj {
		t.Errorf("write: ext4 wrote %d bytes at the device, without journal %d: the journal's writes are missing", j, nj)
	}
	t.Logf("write test, bytes at the device: ext4 %d, ext4 without journal %d", dev("ext4", catalog.Write), dev("ext4-nojournal", catalog.Write))
	strict, noatime := dev("ext4-strictatime", catalog.Read), dev("ext4-noatime", catalog.Read)
	t.Logf("read test, bytes written at the device: strictatime %d, noatime %d", strict, noatime)
	if strict == 0 || strict <= noatime {
		t.Errorf("read: strictatime wrote %d bytes, noatime %d: atime updates should write", strict, noatime)
	}
	if trace.Available() == nil {
		c := r.Cell("ext4", catalog.Write)[0]
		if c.Trace == nil || c.Trace.Summary.Write.Bytes == 0 || len(c.Trace.Replay) < 4 {
			t.Fatalf("ext4 write has no usable trace: %+v", c.Trace)
		}
		for name, rp := range c.Trace.Replay {
			if rp.Flash == nil || rp.Flash.HostBytesWritten != c.Trace.Summary.Write.Bytes+c.Trace.Summary.Other.Bytes {
				t.Errorf("replay %s received %+v, the trace wrote %d", name, rp.Flash, c.Trace.Summary.Write.Bytes)
			}
			// The write test is the day's first write test: the card run to its first
			// error on its requests gives the day's lifetime.
			if rp.DayLifetimeYears <= 0 {
				t.Errorf("replay %s: no lifetime for the day of writes", name)
			}
		}
	}
}

// The other studies' suites run one after another on the same fresh filesystem.
func TestNewSuites(t *testing.T) {
	needRoot(t)
	cfg := smallConfig()
	cfg.Variants = cfg.Variants[:1]
	cfg.Suite = plan.Suites{"bonnie", "smallfiles", "randio"}
	r := runAndLoad(t, cfg)
	for _, n := range []string{catalog.Mkfs, "bonnie_write", "bonnie_seq_create", "smallfiles_fsync", "smallfiles_dirsync", "randio_rand_read", "randio_rand_write"} {
		c := r.Cell("ext4", n)
		if len(c) != 1 || (c[0].Status != results.OK && c[0].Status != results.NA) {
			t.Errorf("%s: %+v", n, c)
			continue
		}
		if c[0].Status == results.NA && !strings.Contains(c[0].Note, "too fast to measure") {
			t.Errorf("%s n/a without the reason: %+v", n, c[0])
		}
	}
}

// The device target on a loop device standing in for a card: refused unless --destroy names it,
// refused while mounted, and when accepted the run measures it and records its identity.
func TestDeviceTarget(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "card.img")
	if err := session.CreateImage(img, 320<<20); err != nil {
		t.Fatal(err)
	}
	loop, err := session.AttachLoop(img, session.LoopOptions{DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loop.Detach() })
	cfg := smallConfig()
	cfg.Variants = cfg.Variants[:1]
	cfg.Tests = []string{catalog.Mkfs, catalog.Write}
	run := func(destroy string) (*Outcome, error) {
		return Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(t.TempDir(), "res"), Target: plan.TargetSpec{Kind: plan.TargetDevice, Device: loop.Path}, Destroy: destroy}}})
	}
	var refused *device.RefusedError
	if _, err := run(""); !errors.As(err, &refused) {
		t.Errorf("without --destroy: %v, want a refusal", err)
	}
	if _, err := run("/dev/loop-not-this-one"); !errors.As(err, &refused) {
		t.Errorf("--destroy naming another device: %v, want a refusal", err)
	}
	out, err := run(loop.Path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := results.Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Target.Kind != results.KindDevice || r.Target.CardProfile != plan.DefaultCardProfile || r.Target.Device != loop.Path || r.Device == nil || r.Device.Name != loop.Name || r.Target.SizeBytes != 320<<20 {
		t.Errorf("target %+v, device %+v", r.Target, r.Device)
	}
	if w := r.Cell("ext4", catalog.Write); len(w) != 1 || w[0].Status != results.OK || w[0].Device.WriteBytes == 0 {
		t.Errorf("write on the device: %+v", w)
	}
	// The device is still attached (fsbench does not detach what it did not create) and unmounted.
	if mounted, _ := session.MountsUnder(out.Dir); len(mounted) > 0 {
		t.Errorf("left mounted: %v", mounted)
	}
	if _, err := os.Stat(filepath.Join("/sys/block", loop.Name, "loop")); err != nil {
		t.Errorf("the user's device was detached: %v", err)
	}
}

// The scheduler of the config is set on the device, recorded, and an unknown one is refused
// before anything runs.
func TestScheduler(t *testing.T) {
	needRoot(t)
	cfg := smallConfig()
	cfg.Variants = cfg.Variants[:1]
	cfg.Tests = []string{catalog.Mkfs}
	cfg.Scheduler = "none"
	r := runAndLoad(t, cfg)
	if r.Target.Scheduler != "none" {
		t.Errorf("target %+v, want scheduler none", r.Target)
	}
	cfg.Scheduler = "cfq" // removed from Linux in 5.0
	_, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(t.TempDir(), "res")}}})
	if err == nil || !strings.Contains(err.Error(), "not available") {
		t.Errorf("cfq: %v, want not available", err)
	}
}

// The noise sentinel marks the tests measured while another process kept a CPU busy, and leaves
// those of a quiet stretch unmarked (on a machine that other work may load, only the first
// half is asserted strictly).
func TestNoiseSentinel(t *testing.T) {
	needRoot(t)
	cfg := smallConfig()
	cfg.Variants = cfg.Variants[:1]
	cfg.Tests = []string{catalog.Write, catalog.Read}
	// A busy loop that is not fsbench's descendant: the shell that starts it exits at once, so
	// the loop is adopted by init, as another user's program would be. Being no child of the
	// test, it would outlive a test binary that is killed (no deferred kill, no Pdeathsig:
	// that fires for a parent only), so the loop itself checks on every turn that the test
	// still runs (kill -0 is a shell builtin: still a busy loop, no process started per turn).
	hog := fmt.Sprintf("(while kill -0 %d 2>/dev/null; do :; done) >/dev/null 2>&1 & echo $!", os.Getpid())
	out, err := exec.Command("sh", "-c", hog).Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	r := runAndLoad(t, cfg)
	for _, m := range r.Measurements {
		if m.Status != results.OK {
			continue
		}
		if m.Noise == nil {
			t.Errorf("%s: no noise recorded", m.Test)
			continue
		}
		if !m.Noise.Busy || !strings.Contains(m.Noise.Why, "other processes") || m.Noise.OtherCPUPct < 50 {
			t.Errorf("%s measured beside a busy loop: %+v", m.Test, m.Noise)
		}
	}
	if r.Methods["noise"] == "" {
		t.Error("the noise method is not recorded")
	}
}

// Repetitions are interleaved by default (repetition 1 of every variant, then 2), grouped on
// request, and the sequence is recorded either way.
func TestOrder(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		order string
		want  func(seq []string) bool
	}{
		{plan.OrderInterleaved, func(seq []string) bool {
			return strings.HasSuffix(seq[0], "#1") && strings.HasSuffix(seq[1], "#1") && seq[0] != seq[1] &&
				strings.HasSuffix(seq[2], "#2") && strings.HasSuffix(seq[3], "#2")
		}},
		{plan.OrderGrouped, func(seq []string) bool {
			return seq[0] == "ext4#1" && seq[1] == "ext4#2" && seq[2] == "ext2#1" && seq[3] == "ext2#2"
		}},
	} {
		t.Run(tc.order, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Variants = []plan.Variant{cfg.Variants[0], cfg.Variants[2]} // ext4, ext2
			cfg.Repetitions, cfg.Tests, cfg.Order = 2, []string{catalog.Mkfs}, tc.order
			r := runAndLoad(t, cfg)
			if len(r.Order) != 4 || !tc.want(r.Order) {
				t.Errorf("order %v", r.Order)
			}
			if !strings.HasPrefix(r.Methods["order"], tc.order) {
				t.Errorf("method %q", r.Methods["order"])
			}
		})
	}
}

// A partition's start is a dimension of the matrix: the same filesystem at 63 sectors (the
// old DOS default) and at 4 MiB, each on a window of the same size, the card seeing its writes
// at the card's offsets.
func TestPartitionStart(t *testing.T) {
	needRoot(t)
	cfg := smallConfig()
	// 4 KiB blocks: below 512 MiB mke2fs would choose 1 KiB ones, aligned to nothing.
	b4k := []string{"-b", "4096"}
	cfg.Variants = []plan.Variant{
		{Name: "ext4-63s", FS: "ext4", MkfsArgs: b4k, PartitionStart: 63 * 512},
		{Name: "ext4-4M", FS: "ext4", MkfsArgs: b4k, PartitionStart: 4 << 20},
	}
	cfg.Tests = []string{catalog.Mkfs, catalog.Write}
	r := runAndLoad(t, cfg)
	for _, v := range r.Variants {
		if v.PartitionStart == 0 {
			t.Errorf("%s: partition start not recorded", v.Name)
		}
	}
	if r.Methods["partition_start"] == "" {
		t.Error("method not recorded")
	}
	if trace.Available() != nil {
		return
	}
	share := func(variant string) float64 {
		w := r.Cell(variant, catalog.Write)
		if len(w) != 1 || w[0].Status != results.OK || w[0].Trace == nil || w[0].Trace.Summary.Write.Bytes == 0 {
			t.Fatalf("%s write: %+v", variant, w)
		}
		s := w[0].Trace.Summary
		return float64(s.Aligned4K.Bytes) / float64(s.Write.Bytes)
	}
	mis, al := share("ext4-63s"), share("ext4-4M")
	t.Logf("bytes written aligned to 4 KiB at the card: 63 sectors %.0f %%, 4 MiB %.0f %%", 100*mis, 100*al)
	if mis > 0.05 || al < 0.9 {
		t.Errorf("aligned shares: misaligned %.2f, aligned %.2f", mis, al)
	}
}
