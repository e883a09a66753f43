package measure

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeSys builds a /sys with the block devices the stack walk reads: real directories under
// devices/, and class/block, block and dev/block symlinks to them, as the kernel lays them out.
type fakeSys struct {
	t    *testing.T
	root string
}

func newFakeSys(t *testing.T) *fakeSys {
	return &fakeSys{t: t, root: filepath.Join(t.TempDir(), "sys")}
}

func (f *fakeSys) mk(rel string, files map[string]string) string {
	f.t.Helper()
	dir := filepath.Join(f.root, "devices", rel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	return dir
}

func (f *fakeSys) link(at, to string) {
	f.t.Helper()
	p := filepath.Join(f.root, at)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(to, p); err != nil {
		f.t.Fatal(err)
	}
}

// disk adds a whole disk with device number num ("179:0").
func (f *fakeSys) disk(name, num string) {
	dir := f.mk(name, map[string]string{"dev": num})
	f.link("class/block/"+name, dir)
	f.link("block/"+name, dir)
	f.link("dev/block/"+num, dir)
}

// part adds a partition of disk.
func (f *fakeSys) part(disk, name, num string) {
	dir := f.mk(filepath.Join(disk, name), map[string]string{"dev": num, "partition": "2"})
	f.link("class/block/"+name, dir)
	f.link("dev/block/"+num, dir)
}

// loop adds a loop device bound to backing.
func (f *fakeSys) loop(name, num, backing string) {
	dir := f.mk(filepath.Join("virtual", name), map[string]string{"dev": num, "loop/backing_file": backing + "\n"})
	f.link("class/block/"+name, dir)
	f.link("block/"+name, dir)
	f.link("dev/block/"+num, dir)
}

// fileOn makes a file and says that the filesystem holding it is on device name, whatever
// device the test's temporary directory really is on.
func (f *fakeSys) fileOn(name string) string {
	f.t.Helper()
	file := filepath.Join(f.t.TempDir(), "image")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		f.t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		f.t.Fatal(err)
	}
	num := fmt.Sprintf("%d:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	os.Remove(filepath.Join(f.root, "dev", "block", num))
	f.link("dev/block/"+num, filepath.Join(f.root, "devices", name))
	return file
}

func TestResolveStack(t *testing.T) {
	tests := []struct {
		name  string
		build func(f *fakeSys) (device, backing string)
		want  []string
	}{
		{"a whole disk is its own", func(f *fakeSys) (string, string) {
			f.disk("mmcblk0", "179:0")
			return "mmcblk0", ""
		}, nil},
		{"a partition's I/O is its disk's", func(f *fakeSys) (string, string) {
			f.disk("mmcblk0", "179:0")
			f.part("mmcblk0", "mmcblk0p2", "179:2")
			return "mmcblk0p2", ""
		}, []string{"mmcblk0p2 on mmcblk0 (request for request)"}},
		{"a loop device over an image", func(f *fakeSys) (string, string) {
			f.disk("vda", "254:0")
			f.loop("loop3", "7:3", f.fileOn("vda"))
			return "loop3", ""
		}, []string{"loop3 on vda (through a file on it)"}},
		{"an image on a partition", func(f *fakeSys) (string, string) {
			f.disk("sda", "8:0")
			f.part("sda", "sda1", "8:1")
			f.loop("loop3", "7:3", f.fileOn("sda/sda1"))
			return "loop3", ""
		}, []string{"loop3 on sda (through a file on it)"}},
		{"a partition window over a card's partition", func(f *fakeSys) (string, string) {
			f.disk("mmcblk0", "179:0")
			f.part("mmcblk0", "mmcblk0p2", "179:2")
			dev := filepath.Join(f.t.TempDir(), "mmcblk0p2")
			if err := unix.Mknod(dev, unix.S_IFBLK|0o600, int(unix.Mkdev(179, 2))); err != nil {
				f.t.Skipf("mknod of a device node: %v (needs root)", err)
			}
			f.loop("loop7", "7:7", dev)
			return "loop7", dev
		}, []string{"mmcblk0p2 on mmcblk0 (request for request)"}},
		{"the simulated card's data file", func(f *fakeSys) (string, string) {
			f.disk("vda", "254:0")
			// The loop device's backing file is the card, on FUSE: no block device.
			f.loop("loop5", "7:5", "/nonexistent/fuse/card")
			return "loop5", f.fileOn("vda")
		}, []string{"loop5 on vda (through a file on it)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSys(t)
			dev, backing := tc.build(f)
			var got []string
			for _, l := range resolveStack(f.root, dev, backing) {
				got = append(got, l.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("stack of %s = %q, want %q", dev, got, tc.want)
			}
		})
	}
}

// ioMachine is a fake /proc and /sys whose disks move bytes, to check what the sentinel counts
// as other I/O.
type ioMachine struct {
	proc string
	sys  *fakeSys
	io   map[string]ioCount
	// dirty is /proc/meminfo's Dirty, in bytes.
	dirty uint64
}

func (m *ioMachine) write(t *testing.T) {
	t.Helper()
	os.MkdirAll(m.proc, 0o755)
	var ds strings.Builder
	for name, c := range m.io {
		fmt.Fprintf(&ds, " 1 0 %s 1 0 %d 0 1 0 %d 0 0 0 0\n", name, c.r/512, c.w/512)
	}
	for f, content := range map[string]string{
		"stat":      "cpu  100 0 0 1000 0 0 0 0 0 0\ncpu0 1\n",
		"diskstats": ds.String(),
		"meminfo":   fmt.Sprintf("Dirty: %d kB\nWriteback: 0 kB\n", m.dirty/1024),
	} {
		if err := os.WriteFile(filepath.Join(m.proc, f), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (m *ioMachine) add(dev string, r, w uint64) {
	c := m.io[dev]
	m.io[dev] = ioCount{c.r + r, c.w + w}
}

// TestSentinelOwnIO checks that the run's own I/O on the devices under its device is not
// another program's: a partition's on its disk (the case that marked every test on a card's
// partition busy), and an image's on the disk holding it, also when the page cache writes it
// back after the span that wrote it.
func TestSentinelOwnIO(t *testing.T) {
	const MB = 1 << 20
	const wall = time.Second
	type step struct {
		moves     map[string][2]uint64 // device → MiB read, written during the span
		dirty     uint64               // MiB dirty at its end
		wantBusy  bool
		wantOther uint64 // MiB
	}
	tests := []struct {
		name  string
		build func(f *fakeSys) (device, backing string)
		steps []step
	}{
		{"partition, idle disk", func(f *fakeSys) (string, string) {
			f.disk("mmcblk0", "179:0")
			f.part("mmcblk0", "mmcblk0p1", "179:1")
			f.part("mmcblk0", "mmcblk0p2", "179:2")
			return "mmcblk0p2", ""
		}, []step{
			{moves: map[string][2]uint64{"mmcblk0p2": {0, 40}, "mmcblk0": {0, 40}}},
			{moves: map[string][2]uint64{"mmcblk0p2": {30, 0}, "mmcblk0": {30, 0}}},
		}},
		{"partition, dd on the other partition", func(f *fakeSys) (string, string) {
			f.disk("mmcblk0", "179:0")
			f.part("mmcblk0", "mmcblk0p1", "179:1")
			f.part("mmcblk0", "mmcblk0p2", "179:2")
			return "mmcblk0p2", ""
		}, []step{
			{moves: map[string][2]uint64{"mmcblk0p2": {0, 40}, "mmcblk0p1": {0, 10}, "mmcblk0": {0, 50}}, wantBusy: true, wantOther: 10},
		}},
		{"image written back after the span", func(f *fakeSys) (string, string) {
			f.disk("vda", "254:0")
			f.loop("loop3", "7:3", f.fileOn("vda"))
			return "loop3", ""
		}, []step{
			// The write test dirties 100 MiB of the image; 10 reach the disk during it.
			{moves: map[string][2]uint64{"loop3": {0, 100}, "vda": {0, 10}}, dirty: 90},
			// The next test reads 5 MiB while the other 90 are written back.
			{moves: map[string][2]uint64{"loop3": {5, 0}, "vda": {5, 90}}},
			// Then another program writes 30 MiB to the same disk: that is other I/O.
			{moves: map[string][2]uint64{"loop3": {1, 0}, "vda": {1, 30}}, wantBusy: true, wantOther: 28},
		}},
		{"dirty data that is not the run's", func(f *fakeSys) (string, string) {
			f.disk("vda", "254:0")
			f.loop("loop3", "7:3", f.fileOn("vda"))
			return "loop3", ""
		}, []step{
			// 100 MiB written, but the machine has only 20 MiB dirty at the end: 80 reached
			// the disk somewhere the sentinel did not see, so at most 20 may still come.
			{moves: map[string][2]uint64{"loop3": {0, 100}, "vda": {0, 0}}, dirty: 20},
			{moves: map[string][2]uint64{"vda": {0, 60}}, wantBusy: true, wantOther: 39},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSys(t)
			dev, backing := tc.build(f)
			m := &ioMachine{proc: filepath.Join(t.TempDir(), "proc"), sys: f, io: map[string]ioCount{}}
			for _, d := range []string{"vda", "mmcblk0", "mmcblk0p1", "mmcblk0p2", "loop3"} {
				m.io[d] = ioCount{}
			}
			m.write(t)
			s := &Sentinel{Proc: m.proc, Sys: f.root, Device: dev, Backing: backing, self: 1}
			a := s.read()
			for i, st := range tc.steps {
				for d, mv := range st.moves {
					m.add(d, mv[0]*MB, mv[1]*MB)
				}
				m.dirty = st.dirty * MB
				m.write(t)
				b := s.read()
				n := s.compare(a, b, wall)
				// The 1 MiB of slack for a file's filesystem is not other I/O either.
				if n.Busy != st.wantBusy || n.OtherIOBytes/MB != st.wantOther {
					t.Errorf("span %d: busy %v (%q), other %d MiB; want busy %v, other %d MiB", i, n.Busy, n.Why, n.OtherIOBytes/MB, st.wantBusy, st.wantOther)
				}
				a = b
			}
		})
	}
}
