package blockdev_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/session"
)

// TestRealLoopDevice checks Identify, ReadStat, SizeBytes and Discard against a real loop
// device over an image under the test's temp dir.
func TestRealLoopDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: attaches a loop device")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("needs loop device support: %v", err)
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "dev.img")
	const size = 32 << 20
	if err := session.CreateImage(img, size); err != nil {
		t.Fatal(err)
	}
	l, err := session.AttachLoop(img, session.LoopOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Detach(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})

	id, err := blockdev.Identify("/sys", l.Name)
	if err != nil {
		t.Fatal(err)
	}
	if id.Name != l.Name || id.Path != l.Path || id.SizeBytes != size {
		t.Errorf("Identify = %s %s %d bytes, want %s %s %d", id.Name, id.Path, id.SizeBytes, l.Name, l.Path, size)
	}
	if id.Loop == nil || id.Loop.BackingFile != img || !id.Loop.Autoclear || id.Loop.DirectIO != l.DirectIO {
		t.Errorf("Identify.Loop = %+v, want backing %s, autoclear, dio %v", id.Loop, img, l.DirectIO)
	}
	for _, k := range []string{"rotational", "logical_block_size", "physical_block_size", "scheduler", "max_sectors_kb"} {
		if id.Queue[k] == "" {
			t.Errorf("Identify.Queue lacks %s: %v", k, id.Queue)
		}
	}
	if id.Queue["logical_block_size"] != "512" {
		t.Errorf("logical_block_size = %q, want 512", id.Queue["logical_block_size"])
	}

	f, err := os.OpenFile(l.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := blockdev.SizeBytes(f)
	if err != nil || got != size {
		t.Errorf("SizeBytes = %d, %v; want %d", got, err, size)
	}

	// Counters: writing 1 MiB through the device and flushing it must show up as at least
	// 1 MiB of written sectors.
	before, err := blockdev.ReadStat("/sys", l.Name)
	if err != nil {
		t.Fatal(err)
	}
	if before.Fields < 11 {
		t.Fatalf("Fields = %d", before.Fields)
	}
	data := bytes.Repeat([]byte{0xa5}, 1<<20)
	if _, err := f.WriteAt(data, 4<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	after, err := blockdev.ReadStat("/sys", l.Name)
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if d.WriteBytes() < 1<<20 || d.WriteIOs == 0 {
		t.Errorf("after writing 1 MiB: delta %d bytes in %d I/Os, want >= 1 MiB", d.WriteBytes(), d.WriteIOs)
	}

	// Discard on a loop device punches a hole in the image: its allocated blocks shrink.
	blocks := func() int64 {
		var st syscall.Stat_t
		if err := syscall.Stat(img, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks
	}
	full := blocks()
	if full < (1<<20)/512 {
		t.Fatalf("image has %d blocks after writing 1 MiB through the device", full)
	}
	beforeDiscard, err := blockdev.ReadStat("/sys", l.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := blockdev.Discard(f, 4<<20, 1<<20); err != nil {
		t.Fatal(err)
	}
	if now := blocks(); now > full-(1<<20)/512 {
		t.Errorf("image blocks %d -> %d after discarding 1 MiB, want at least 2048 fewer", full, now)
	}
	afterDiscard, err := blockdev.ReadStat("/sys", l.Name)
	if err != nil {
		t.Fatal(err)
	}
	if afterDiscard.Fields >= 15 {
		if got := afterDiscard.Sub(beforeDiscard).DiscardBytes(); got != 1<<20 {
			t.Errorf("discard counter delta = %d bytes, want %d", got, 1<<20)
		}
	}
	if err := blockdev.Discard(f, 1, 512); err == nil {
		t.Error("Discard at an unaligned offset succeeded")
	}
}

func TestSizeBytesRegularFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, err := blockdev.SizeBytes(f); err != nil || got != 4096 {
		t.Errorf("SizeBytes(regular file) = %d, %v; want 4096", got, err)
	}
	dev, err := os.Open("/dev/null")
	if err != nil {
		t.Skip(err)
	}
	defer dev.Close()
	if _, err := blockdev.SizeBytes(dev); err == nil {
		t.Error("SizeBytes(/dev/null) succeeded; it is not a block device")
	}
}
