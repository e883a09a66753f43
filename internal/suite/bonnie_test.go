package suite

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
)

// countingFS is an in-memory fileOps that counts every operation, so that the tests can check
// exactly what each benchmark did.
type countingFS struct {
	mu                                                        sync.Mutex
	files                                                     map[string][]byte
	dirs                                                      map[string]bool
	creates, removes, mkdirs, fsyncs, dirSyncs, syncfs, drops int
	writes, reads                                             int
	written, read                                             uint64
	direct                                                    int // opens with O_DIRECT
	refuseDirect                                              bool
}

func newCountingFS(root string) *countingFS {
	return &countingFS{files: map[string][]byte{}, dirs: map[string]bool{root: true}}
}

type memHandle struct {
	fs   *countingFS
	name string
	pos  int64
}

func (c *countingFS) OpenFile(name string, flag int, _ os.FileMode) (opFile, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if flag&unix.O_DIRECT != 0 {
		if c.refuseDirect {
			return nil, unix.EINVAL
		}
		c.direct++
	}
	if !c.dirs[filepath.Dir(name)] {
		return nil, os.ErrNotExist
	}
	_, exists := c.files[name]
	switch {
	case exists && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, os.ErrExist
	case !exists && flag&os.O_CREATE == 0:
		return nil, os.ErrNotExist
	case !exists:
		c.creates++
		c.files[name] = nil
	}
	if flag&os.O_TRUNC != 0 {
		c.files[name] = nil
	}
	return &memHandle{fs: c, name: name}, nil
}

func (h *memHandle) ReadAt(b []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	d := h.fs.files[h.name]
	h.fs.reads++
	if off >= int64(len(d)) {
		return 0, io.EOF
	}
	n := copy(b, d[off:])
	h.fs.read += uint64(n)
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (h *memHandle) WriteAt(b []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	d := h.fs.files[h.name]
	if end := off + int64(len(b)); end > int64(len(d)) {
		d = append(d, make([]byte, end-int64(len(d)))...)
	}
	copy(d[off:], b)
	h.fs.files[h.name] = d
	h.fs.writes++
	h.fs.written += uint64(len(b))
	return len(b), nil
}

func (h *memHandle) Read(b []byte) (int, error) {
	n, err := h.ReadAt(b, h.pos)
	h.pos += int64(n)
	if n > 0 && err == io.EOF {
		err = nil
	}
	return n, err
}

func (h *memHandle) Write(b []byte) (int, error) {
	n, err := h.WriteAt(b, h.pos)
	h.pos += int64(n)
	return n, err
}

func (h *memHandle) Sync() error {
	h.fs.mu.Lock()
	h.fs.fsyncs++
	h.fs.mu.Unlock()
	return nil
}
func (h *memHandle) Close() error { return nil }

func (c *countingFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.files[name]; ok {
		delete(c.files, name)
		c.removes++
		return nil
	}
	if c.dirs[name] {
		for f := range c.files {
			if filepath.Dir(f) == name {
				return unix.ENOTEMPTY
			}
		}
		delete(c.dirs, name)
		return nil
	}
	return os.ErrNotExist
}

func (c *countingFS) Mkdir(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirs[name] {
		return os.ErrExist
	}
	if !c.dirs[filepath.Dir(name)] {
		return os.ErrNotExist
	}
	c.dirs[name] = true
	c.mkdirs++
	return nil
}

func (c *countingFS) ReadDirNames(dir string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for f := range c.files {
		if filepath.Dir(f) == dir {
			out = append(out, filepath.Base(f))
		}
	}
	for d := range c.dirs {
		if d != dir && filepath.Dir(d) == dir {
			out = append(out, filepath.Base(d))
		}
	}
	slices.Sort(out)
	return out, nil
}

func (c *countingFS) SyncDir(string) error { c.mu.Lock(); c.dirSyncs++; c.mu.Unlock(); return nil }
func (c *countingFS) Syncfs(string) error  { c.mu.Lock(); c.syncfs++; c.mu.Unlock(); return nil }
func (c *countingFS) DropCaches() error    { c.mu.Lock(); c.drops++; c.mu.Unlock(); return nil }

func TestBlockIOCounts(t *testing.T) {
	tests := []struct {
		name        string
		size, chunk uint64
		wantChunks  int
	}{
		{"whole chunks", 64 << 10, 8192, 8},
		{"partial last chunk", 64<<10 + 100, 8192, 9},
		{"chunk larger than the pattern", 4 << 20, 2 << 20, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCountingFS("/m")
			ctx := context.Background()
			p, err := blockWrite(ctx, c, "/m/file", tc.size, tc.chunk)
			if err != nil {
				t.Fatal(err)
			}
			// Writes of the pattern buffer may be split at its end: count bytes exactly.
			if p.bytes != tc.size || c.written != tc.size || uint64(len(c.files["/m/file"])) != tc.size {
				t.Errorf("write: phase %d bytes, fs %d written, file %d; want %d", p.bytes, c.written, len(c.files["/m/file"]), tc.size)
			}
			if c.syncfs != 1 || c.creates != 1 || p.lat.n != uint64(p.ops) {
				t.Errorf("write: syncfs %d creates %d latencies %d ops %d", c.syncfs, c.creates, p.lat.n, p.ops)
			}
			c.written, c.writes, c.reads, c.read = 0, 0, 0, 0
			p, err = blockRewrite(ctx, c, "/m/file", tc.size, tc.chunk)
			if err != nil {
				t.Fatal(err)
			}
			if p.ops != tc.wantChunks || c.writes != tc.wantChunks || c.reads != tc.wantChunks || c.written != tc.size || c.read != tc.size {
				t.Errorf("rewrite: %d ops, %d writes, %d reads, %d written, %d read; want %d chunks of %d bytes", p.ops, c.writes, c.reads, c.written, c.read, tc.wantChunks, tc.size)
			}
			if c.syncfs != 2 {
				t.Errorf("rewrite did not syncfs: %d", c.syncfs)
			}
			c.read = 0
			p, err = blockRead(ctx, c, "/m/file", tc.chunk)
			if err != nil {
				t.Fatal(err)
			}
			if p.bytes != tc.size || c.read != tc.size || p.ops != tc.wantChunks {
				t.Errorf("read: %d bytes in %d ops (fs read %d); want %d in %d", p.bytes, p.ops, c.read, tc.size, tc.wantChunks)
			}
		})
	}
}

func TestSeeksCounts(t *testing.T) {
	c := newCountingFS("/m")
	ctx := context.Background()
	const size, chunk = 1 << 20, 8192
	if _, err := blockWrite(ctx, c, "/m/file", size, chunk); err != nil {
		t.Fatal(err)
	}
	c.writes, c.reads, c.written, c.read = 0, 0, 0, 0
	p, err := seeks(ctx, c, "/m/file", size, chunk, 8192, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.ops != 8192 || c.reads != 8192 || p.lat.n != 8192 {
		t.Errorf("%d seeks, %d reads, %d latencies; want 8192", p.ops, c.reads, p.lat.n)
	}
	// One seek in ten writes its chunk back: binomial(8192, 0.1) is within ±5σ of 819.
	if sd := math.Sqrt(8192 * 0.1 * 0.9); math.Abs(float64(c.writes)-819.2) > 5*sd {
		t.Errorf("%d rewrites among 8192 seeks, want about 10 %%", c.writes)
	}
	if uint64(len(c.files["/m/file"])) != size {
		t.Errorf("the seeks changed the file size to %d", len(c.files["/m/file"]))
	}
	if _, err := seeks(ctx, c, "/m/file", 100, chunk, 10, 3, 1); err == nil {
		t.Error("a file smaller than one chunk was accepted")
	}
}

func TestCreateStatDeleteCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  int
		dirs   int
		random bool
	}{
		{"sequential, one directory", 1000, 1, false},
		{"sequential, 10 directories", 1024, 10, false},
		{"random, 7 directories", 999, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCountingFS("/m")
			ctx := context.Background()
			set := makeFileSet("/m/b", tc.files, tc.dirs, tc.random, 1)
			p, err := createFiles(ctx, c, "/m/b", set)
			if err != nil {
				t.Fatal(err)
			}
			if p.ops != tc.files || c.creates != tc.files || c.mkdirs != tc.dirs+1 || c.syncfs != 1 {
				t.Errorf("create: %d ops, %d creates, %d mkdirs, %d syncfs", p.ops, c.creates, c.mkdirs, c.syncfs)
			}
			if n, err := countFiles(c, "/m/b"); err != nil || n != tc.files {
				t.Errorf("countFiles = %d, %v; want %d", n, err, tc.files)
			}
			// The random set is the same for the same count and seed: stat and delete find it.
			again := makeFileSet("/m/b", tc.files, tc.dirs, tc.random, 1)
			if !slices.Equal(again.paths, set.paths) {
				t.Fatal("makeFileSet is not deterministic")
			}
			var paths []string
			if tc.random {
				paths = shuffled(set.paths, 2)
				if slices.Equal(paths, set.paths) {
					t.Error("random stat order is the creation order")
				}
			} else if paths, err = listFiles(c, set); err != nil {
				t.Fatal(err)
			}
			p, err = deleteFiles(ctx, c, "/m/b", set, paths)
			if err != nil {
				t.Fatal(err)
			}
			if p.ops != tc.files || c.removes != tc.files || len(c.files) != 0 || len(c.dirs) != 1 || c.syncfs != 2 {
				t.Errorf("delete: %d ops, %d removes, %d files and %d dirs left, %d syncfs", p.ops, c.removes, len(c.files), len(c.dirs), c.syncfs)
			}
		})
	}
}

func TestSequentialNamesSortInCreationOrder(t *testing.T) {
	set := makeFileSet("/m/b", 500, 3, false, 1)
	for i := 1; i < len(set.paths); i++ {
		if filepath.Dir(set.paths[i]) == filepath.Dir(set.paths[i-1]) && set.paths[i] < set.paths[i-1] {
			t.Fatalf("%s sorts before %s", set.paths[i], set.paths[i-1])
		}
	}
}

func TestBonnieSize(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		name             string
		want, avail, ram uint64
		size             uint64
		notes            []string
	}{
		{"2 x RAM fits", 0, 100 * gib, 4 * gib, 8 * gib, nil},
		{"capped to the device", 0, 1 * gib, 4 * gib, 614 << 20, []string{"capped", "smaller than RAM"}},
		{"explicit size", 512 << 20, 10 * gib, 256 << 20, 512 << 20, nil},
		{"explicit, smaller than RAM", 100<<20 + 5, 10 * gib, 4 * gib, 100 << 20, []string{"smaller than RAM"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			size, note := bonnieSize(tc.want, tc.avail, tc.ram)
			if size != tc.size {
				t.Errorf("size %d, want %d", size, tc.size)
			}
			for _, n := range tc.notes {
				if !strings.Contains(note, n) {
					t.Errorf("note %q lacks %q", note, n)
				}
			}
			if tc.notes == nil && note != "" {
				t.Errorf("unexpected note %q", note)
			}
		})
	}
}

func TestBonnieFiles(t *testing.T) {
	tests := []struct {
		want   int
		inodes uint64
		n      int
		noted  bool
	}{
		{16384, 0, 16384, false},      // btrfs reports no inode count
		{16384, 100000, 16384, false}, // fits
		{16384, 10000, 7168, true},    // 80 % of 10000, in units of 1024
		{16384, 1000, 800, true},      // fewer than 1024 possible
	}
	for _, tc := range tests {
		n, note := bonnieFiles(tc.want, tc.inodes)
		if n != tc.n || (note != "") != tc.noted {
			t.Errorf("bonnieFiles(%d, %d) = %d, %q; want %d (noted %v)", tc.want, tc.inodes, n, note, tc.n, tc.noted)
		}
	}
}

func TestLatencies(t *testing.T) {
	var l latencies
	for i := 1; i <= 1000; i++ {
		l.add(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct{ q, want float64 }{{0.5, 500e-6}, {0.99, 990e-6}, {0.999, 999e-6}, {1, 1000e-6}} {
		if got := l.quantile(tc.q); math.Abs(got-tc.want)/tc.want > 0.011 {
			t.Errorf("quantile(%v) = %v, want %v within 1 %%", tc.q, got, tc.want)
		}
	}
	var other latencies
	other.add(2 * time.Second)
	l.merge(&other)
	if l.n != 1001 || l.max != 2*time.Second {
		t.Errorf("merge: n %d max %v", l.n, l.max)
	}
	m := map[string]float64{}
	l.extra(m)
	if m["latency_max_s"] != 2 || m["latency_p50_s"] <= 0 || m["latency_p999_s"] < m["latency_p99_s"] {
		t.Errorf("extra = %v", m)
	}
}

// TestLatencyBuckets checks the log-linear buckets: every value lands in a bucket whose upper
// bound is at or above it and less than 1 % above it, and the buckets are in order.
func TestLatencyBuckets(t *testing.T) {
	values := []uint64{0, 1, 2, 127, 128, 255, 256, 257, 1000, 4095, 4096, 150_000, 1<<40 + 12345, math.MaxInt64}
	for v := uint64(300); v < 1<<22; v = v*17/16 + 1 {
		values = append(values, v)
	}
	for _, v := range values {
		i := latIndex(v)
		if i < 0 || i >= latBuckets {
			t.Fatalf("latIndex(%d) = %d, outside [0, %d)", v, i, latBuckets)
		}
		up := latUpper(i)
		if up < v || float64(up-v) > 0.01*float64(v) {
			t.Errorf("value %d: bucket %d has upper bound %d", v, i, up)
		}
		if i > 0 && latUpper(i-1) >= v {
			t.Errorf("value %d: the bucket below (%d) already reaches %d", v, i-1, latUpper(i-1))
		}
	}
}

func TestRateTooFast(t *testing.T) {
	p := phase{ops: 100, work: 150 * time.Millisecond}
	p.lat.add(time.Millisecond)
	fast := rate(results.Measurement{Test: BonnieSeqCreate, Status: results.OK, WallSeconds: 0.21, UserSeconds: 0.1, SysSeconds: 0.05}, p, 100, catalog.FilesPerSec, "scaled")
	if fast.Status != results.NA || fast.Value != nil || fast.Note != "too fast to measure: took 0.21 s; scaled" {
		t.Errorf("fast: status %s value %v note %q", fast.Status, fast.Value, fast.Note)
	}
	if math.Abs(fast.Extra["cpu_pct"]-100*0.15/0.21) > 1e-9 || fast.Extra["latency_max_s"] != 0.001 {
		t.Errorf("fast extra = %v", fast.Extra)
	}
	slow := rate(results.Measurement{Status: results.OK, WallSeconds: 2, UserSeconds: 0.5}, phase{ops: 1000, work: time.Second}, 1000, catalog.FilesPerSec)
	if slow.Status != results.OK || *slow.Value != 500 || slow.Unit != catalog.FilesPerSec || slow.Extra["rate_before_sync"] != 1000 || slow.Extra["cpu_pct"] != 25 {
		t.Errorf("slow: %+v %v", slow, slow.Extra)
	}
}

func TestNewSuitesRegistered(t *testing.T) {
	for suite, first := range map[string]string{"bonnie": BonnieWrite, "smallfiles": SmallLarge, "randio": RandSeqWrite} {
		tests := append(slices.Clone(setup), Steps(suite)...)
		if len(tests) <= len(setup) || tests[len(setup)].Name != first {
			t.Errorf("suite %s: %v", suite, names(tests))
			continue
		}
		for i, test := range tests {
			for _, need := range test.Needs {
				if j := slices.IndexFunc(tests, func(x Test) bool { return x.Name == need }); j < 0 || j >= i {
					t.Errorf("%s needs %s, which does not run before it", test.Name, need)
				}
			}
			if i >= len(setup) && (test.ReadOnly || test.Run == nil) {
				t.Errorf("%s: read-only %v, or it does not run", test.Name, test.ReadOnly)
			}
		}
	}
}

// mounted makes an image of size bytes under t.TempDir(), attaches it as a loop device with
// direct I/O, and returns an Env for RunRepetition plus the cleanup, which the test must defer
// (RunRepetition mounts and unmounts; the cleanup detaches and checks that nothing is left).
func mounted(t testing.TB, size uint64, suites string) (*Env, func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes a loop device and mounts filesystems (run with sudo)")
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	if err := session.CreateImage(img, size); err != nil {
		t.Fatal(err)
	}
	loop, err := session.AttachLoop(img, session.LoopOptions{DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	work := filepath.Join(dir, "work")
	for _, d := range []string{mnt, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			loop.Detach()
			t.Fatal(err)
		}
	}
	sys, err := fs.HostSystem()
	if err != nil {
		loop.Detach()
		t.Fatal(err)
	}
	sel, err := Select(plan.ParseSuites(suites), nil)
	if err != nil {
		loop.Detach()
		t.Fatal(err)
	}
	env := &Env{Device: loop.Path, DeviceName: loop.Name, Sysfs: "/sys", Mountpoint: mnt, WorkDir: work,
		Timeout: 10 * time.Minute, Selection: sel, Run: fs.DefaultRunner, System: sys, Log: t.Logf,
		Params: plan.DefaultSuiteParams()}
	return env, func() {
		if err := loop.Detach(); err != nil {
			t.Error(err)
		}
		mounts, _ := os.ReadFile("/proc/mounts")
		if strings.Contains(string(mounts), mnt) {
			t.Errorf("%s is still mounted", mnt)
		}
	}
}

// runSuites runs one repetition of suites on a fresh filesystem of kind fsName.
func runSuites(t testing.TB, size uint64, fsName, suites string, params func(*plan.SuiteParams)) map[string]results.Measurement {
	t.Helper()
	env, done := mounted(t, size, suites)
	if params != nil {
		params(&env.Params)
	}
	defer done()
	k, ok := fs.Lookup(fsName)
	if !ok {
		t.Fatalf("no filesystem %s", fsName)
	}
	if av := env.System.Check(k); !av.Runs {
		t.Skipf("%s: %s", fsName, av.Reason)
	}
	got := map[string]results.Measurement{}
	err := RunRepetition(context.Background(), env, Job{Variant: plan.Variant{Name: fsName, FS: fsName}, Kind: k}, 1, false, func(m results.Measurement) error {
		got[m.Test] = m
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestNewSuitesOnLoopDevice runs bonnie, smallfiles and randio for real on a small ext4
// (and the randio suite on btrfs, whose O_DIRECT takes another path), with the sizes scaled
// down so that the run takes seconds, and checks every figure is there and plausible.
func TestNewSuitesOnLoopDevice(t *testing.T) {
	got := runSuites(t, 320<<20, "ext4", "bonnie,smallfiles,randio", func(p *plan.SuiteParams) {
		for _, s := range []struct {
			suite, key string
			v          any
		}{{"bonnie", "file_size_bytes", 64 << 20}, {"bonnie", "files", 4096}, {"bonnie", "dirs", 4},
			{"smallfiles", "blocks", 2000}, {"smallfiles", "files", 200},
			{"randio", "file_size_bytes", 32 << 20}, {"randio", "runtime", "1s"}} {
			if err := p.Set(s.suite, s.key, s.v); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, test := range append(append(names(Steps("bonnie")), names(Steps("smallfiles"))...), names(Steps("randio"))...) {
		m, ok := got[test]
		if !ok {
			t.Errorf("%s: no measurement", test)
			continue
		}
		if test == catalog.ModuleLoad || test == catalog.Mkfs || test == catalog.Mount || test == catalog.MountMem {
			continue
		}
		switch m.Status {
		case results.OK:
			if m.Value == nil || *m.Value <= 0 || m.Extra["cpu_pct"] <= 0 || m.Extra["latency_max_s"] <= 0 || m.Extra["latency_p50_s"] > m.Extra["latency_p99_s"] {
				t.Errorf("%s: value %v extra %v", test, m.Value, m.Extra)
			}
		case results.NA:
			if m.Value != nil || !strings.HasPrefix(m.Note, "too fast to measure: took ") {
				t.Errorf("%s: n/a with %q", test, m.Note)
			}
		default:
			t.Errorf("%s: %s %s", test, m.Status, m.Error)
		}
		if m.Extra["ops"] <= 0 {
			t.Errorf("%s: %v ops", test, m.Extra["ops"])
		}
	}
	if w := got[BonnieWrite]; w.Device == nil || w.Device.WriteBytes < 64<<20 {
		t.Errorf("bonnie_write wrote %+v to the device, want >= 64 MiB", w.Device)
	}
	if n := got[BonnieSeqCreate].Extra["ops"]; n != 4096 || got[BonnieSeqStat].Extra["ops"] != n || got[BonnieSeqDelete].Extra["ops"] != n || got[BonnieRandDelete].Extra["ops"] != n {
		t.Errorf("create/stat/delete counts differ: %v %v %v", n, got[BonnieSeqStat].Extra["ops"], got[BonnieSeqDelete].Extra["ops"])
	}
	if got[SmallFsync].Extra["ops"] != 200 || got[SmallDirsync].Extra["ops"] != 200 {
		t.Errorf("small files: %v, %v", got[SmallFsync].Extra, got[SmallDirsync].Extra)
	}
	if m := got[SmallDirsync]; m.Device == nil || m.Device.FlushIOs == 0 {
		t.Errorf("smallfiles_dirsync sent no flush to the device: %+v", m.Device)
	}
	if m := got[RandWrite4K]; m.Status == results.OK && !strings.Contains(m.Note, "A1 ") {
		t.Errorf("randio_rand_write has no class verdict: %q", m.Note)
	}
	if m := got[RandRead4K]; m.Status == results.OK && (m.Device == nil || m.Device.ReadIOs < uint64(m.Extra["ops"])*9/10) {
		t.Errorf("randio_rand_read: %v reads for %v requests: O_DIRECT not reaching the device?", m.Device, m.Extra["ops"])
	}
}

// TestCreateFilesOS runs the create, stat and delete phases with the real osOps (the
// openat/fstatat/unlinkat path of dirFDs) in a temporary directory: every file exists and is
// empty, one latency per file, creating an existing file fails (O_EXCL, as bonnie++), and the
// delete phase leaves nothing.
func TestCreateFilesOS(t *testing.T) {
	root := filepath.Join(t.TempDir(), "c")
	set := makeFileSet(root, 50, 2, false, 1)
	p, err := createFiles(context.Background(), osOps{}, root, set)
	if err != nil {
		t.Fatal(err)
	}
	if p.ops != 50 || p.lat.n != 50 {
		t.Errorf("%d ops, %d latencies; want 50", p.ops, p.lat.n)
	}
	for _, path := range set.paths {
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v %v", path, fi, err)
		}
	}
	if err := (&dirFDs{}).create(set.paths[0]); !errors.Is(err, os.ErrExist) {
		t.Errorf("creating an existing file: %v, want ErrExist", err)
	}
	// The timed loops of the stat tests: readdir order straight from getdents64, and a given
	// order (creation order, then a random one) resolved to directory descriptors beforehand.
	if s, err := statDirs(context.Background(), set.dirs); err != nil || s.ops != 50 || s.lat.n != 50 {
		t.Errorf("statDirs: %d ops, %d latencies, %v; want 50", s.ops, s.lat.n, err)
	}
	dirs := &dirFDs{}
	for _, order := range [][]string{set.paths, shuffled(set.paths, 2)} {
		ents, err := dirs.resolve(order)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := statEntries(context.Background(), ents); err != nil || s.ops != 50 {
			t.Errorf("statEntries: %d ops, %v; want 50", s.ops, err)
		}
	}
	dirs.close()
	paths, err := listFiles(osOps{}, set)
	if err != nil || len(paths) != 50 {
		t.Fatalf("listed %d files, %v", len(paths), err)
	}
	d, err := deleteFiles(context.Background(), osOps{}, root, set, paths)
	if err != nil || d.ops != 50 {
		t.Errorf("delete: %d ops, %v", d.ops, err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there after the delete phase: %v", root, err)
	}
	if _, err := statDirs(context.Background(), set.dirs[:1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat in a removed directory: %v, want ErrNotExist", err)
	}
}

// TestStatLoopsCount: the stat tests' loops stat every file once, whatever the shape of the
// set (one or many directories, bonnie++'s sequential or random names), on a real filesystem.
func TestStatLoopsCount(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  int
		dirs   int
		random bool
	}{
		{"sequential, one directory", 1000, 1, false},
		{"sequential, 10 directories", 1024, 10, false},
		{"random, 7 directories", 999, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			root := filepath.Join(t.TempDir(), "b")
			set := makeFileSet(root, tc.files, tc.dirs, tc.random, 1)
			if _, err := createFiles(ctx, osOps{}, root, set); err != nil {
				t.Fatal(err)
			}
			if p, err := statDirs(ctx, set.dirs); err != nil || p.ops != tc.files || p.lat.n != uint64(tc.files) {
				t.Errorf("statDirs: %d ops, %d latencies, %v; want %d", p.ops, p.lat.n, err, tc.files)
			}
			dirs := &dirFDs{}
			defer dirs.close()
			ents, err := dirs.resolve(shuffled(set.paths, 2))
			if err != nil {
				t.Fatal(err)
			}
			if p, err := statEntries(ctx, ents); err != nil || p.ops != tc.files || p.lat.n != uint64(tc.files) {
				t.Errorf("statEntries: %d ops, %d latencies, %v; want %d", p.ops, p.lat.n, err, tc.files)
			}
		})
	}
}

// TestDirentName: the getdents64 records statDirs walks, well formed and not.
func TestDirentName(t *testing.T) {
	rec := func(name string, reclen int) []byte {
		b := make([]byte, reclen)
		binary.NativeEndian.PutUint16(b[16:18], uint16(reclen))
		copy(b[19:], name)
		return b
	}
	for _, tc := range []struct {
		desc   string
		b      []byte
		name   string
		reclen int
		ok     bool
	}{
		{"a name padded with NULs", rec("0000000001abcdefg", 40), "0000000001abcdefg", 40, true},
		{"a name that fills the record but its NUL", rec("abc", 24), "abc", 24, true},
		{"two records: the first is read", append(rec("x", 24), rec("y", 24)...), "x", 24, true},
		{"shorter than a header", make([]byte, 10), "", 0, false},
		{"a record length of zero", make([]byte, 32), "", 0, false},
		{"a record longer than the buffer", rec("abc", 24)[:20], "", 0, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			name, n, ok := direntName(tc.b)
			if name != tc.name || n != tc.reclen || ok != tc.ok {
				t.Errorf("direntName = %q, %d, %v; want %q, %d, %v", name, n, ok, tc.name, tc.reclen, tc.ok)
			}
		})
	}
}
