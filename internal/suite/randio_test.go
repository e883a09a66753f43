package suite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

func TestAlignedBuf(t *testing.T) {
	for _, n := range []uint64{4096, 512 << 10, 12345} {
		b := alignedBuf(n)
		if uint64(len(b)) != n || uintptr(unsafe.Pointer(&b[0]))%4096 != 0 {
			t.Errorf("alignedBuf(%d): len %d at %p", n, len(b), &b[0])
		}
	}
}

func TestRandioCounts(t *testing.T) {
	c := newCountingFS("/m")
	ctx := context.Background()
	const size, block = 8 << 20, 512 << 10
	if err := layOutSeqFile(c, "/m/file", size); err != nil {
		t.Fatal(err)
	}
	if c.creates != 1 || c.writes != 0 {
		t.Errorf("lay-out: %d creates, %d writes; want the file made and nothing written", c.creates, c.writes)
	}
	p, note, err := seqWriteDirect(ctx, c, "/m/file", size, block)
	if err != nil || note != "" {
		t.Fatal(err, note)
	}
	if p.ops != 16 || c.writes != 16 || c.written != size || c.fsyncs != 1 || c.direct != 1 {
		t.Errorf("seq write: %d ops, %d writes, %d bytes, %d fsyncs, %d O_DIRECT opens", p.ops, c.writes, c.written, c.fsyncs, c.direct)
	}
	// Fixed op count (the runtime is far away): exact counts, all 4 KiB-aligned.
	c.writes, c.reads, c.written, c.read = 0, 0, 0, 0
	p, _, err = randomIO(ctx, c, "/m/file", size, 4096, true, time.Hour, 500, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.ops != 500 || c.writes != 500 || c.written != 500*4096 || c.fsyncs != 2 || len(c.files["/m/file"]) != size {
		t.Errorf("random write: %d ops, %d writes, %d bytes, %d fsyncs, file %d", p.ops, c.writes, c.written, c.fsyncs, len(c.files["/m/file"]))
	}
	p, _, err = randomIO(ctx, c, "/m/file", size, 4096, false, time.Hour, 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.ops != 300 || c.reads != 300 || c.read != 300*4096 || c.fsyncs != 2 || c.direct != 3 || p.lat.n != 300 {
		t.Errorf("random read: %d ops, %d reads, %d bytes, %d fsyncs, %d O_DIRECT", p.ops, c.reads, c.read, c.fsyncs, c.direct)
	}
	// Fixed runtime: stops by time.
	start := time.Now()
	p, _, err = randomIO(ctx, c, "/m/file", size, 4096, false, 50*time.Millisecond, 1<<30, 1)
	if err != nil || p.ops == 0 || time.Since(start) > 2*time.Second {
		t.Errorf("runtime-bound: %d ops in %v, %v", p.ops, time.Since(start), err)
	}
}

func TestRandioBufferedFallback(t *testing.T) {
	c := newCountingFS("/m")
	c.refuseDirect = true
	if err := layOutSeqFile(c, "/m/file", 1<<20); err != nil {
		t.Fatal(err)
	}
	_, note, err := seqWriteDirect(context.Background(), c, "/m/file", 1<<20, 512<<10)
	if err != nil || !strings.Contains(note, "refused O_DIRECT") || c.written != 1<<20 {
		t.Errorf("fallback: note %q err %v written %d", note, err, c.written)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		test   string
		value  float64
		a1, a2 float64
	}{
		{RandSeqWrite, 12, 1, 1},
		{RandSeqWrite, 9.9, 0, 0},
		{RandWrite4K, 500, 1, 0},
		{RandWrite4K, 2000, 1, 1},
		{RandRead4K, 1499, 0, 0},
		{RandRead4K, 3999, 1, 0},
		{RandRead4K, 4000, 1, 1},
	}
	for _, tc := range tests {
		m := results.Measurement{Value: results.Float(tc.value), Extra: map[string]float64{}, Unit: catalog.IOPS}
		classify(&m, tc.test)
		if m.Extra["a1_pass"] != tc.a1 || m.Extra["a2_pass"] != tc.a2 || !strings.Contains(m.Note, "A1 ") || !strings.Contains(m.Note, "A2 ") {
			t.Errorf("%s %v: %v %q", tc.test, tc.value, m.Extra, m.Note)
		}
	}
	na := results.Measurement{Status: results.NA, Extra: map[string]float64{}}
	classify(&na, RandRead4K)
	if _, ok := na.Extra["a1_pass"]; ok {
		t.Error("a measurement without a figure was classified")
	}
}

// TestLayOutSeqFile: on a real filesystem the file is made at its full size before the timed
// writes, as fio's fallocate does, and an old file of the same name is replaced.
func TestLayOutSeqFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte("old contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	if err := layOutSeqFile(osOps{}, path, size); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		t.Skipf("the filesystem of %s has no fallocate: the file stays empty, as fio's does", path)
	}
	if fi.Size() != size {
		t.Errorf("laid-out file is %d bytes, want %d", fi.Size(), size)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 < size {
		t.Errorf("laid-out file has %d bytes allocated, want %d", st.Blocks*512, size)
	}
}
