package randio

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
	"github.com/fsbench/fsbench/internal/suites/suitekit"
	"github.com/fsbench/fsbench/internal/testkit/fakefs"
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
	c := fakefs.New("/m")
	ctx := context.Background()
	const size, block = 8 << 20, 512 << 10
	if err := layOutSeqFile(c, "/m/file", size); err != nil {
		t.Fatal(err)
	}
	if c.Creates != 1 || c.Writes != 0 {
		t.Errorf("lay-out: %d creates, %d writes; want the file made and nothing written", c.Creates, c.Writes)
	}
	p, note, err := seqWriteDirect(ctx, c, "/m/file", size, block)
	if err != nil || note != "" {
		t.Fatal(err, note)
	}
	if p.Ops != 16 || c.Writes != 16 || c.Written != size || c.Fsyncs != 1 || c.Direct != 1 {
		t.Errorf("seq write: %d ops, %d writes, %d bytes, %d fsyncs, %d O_DIRECT opens", p.Ops, c.Writes, c.Written, c.Fsyncs, c.Direct)
	}
	// Fixed op count (the runtime is far away): exact counts, all 4 KiB-aligned.
	c.Writes, c.Reads, c.Written, c.Read = 0, 0, 0, 0
	p, _, err = randomIO(ctx, c, "/m/file", size, 4096, true, time.Hour, 500, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ops != 500 || c.Writes != 500 || c.Written != 500*4096 || c.Fsyncs != 2 || len(c.Files["/m/file"]) != size {
		t.Errorf("random write: %d ops, %d writes, %d bytes, %d fsyncs, file %d", p.Ops, c.Writes, c.Written, c.Fsyncs, len(c.Files["/m/file"]))
	}
	p, _, err = randomIO(ctx, c, "/m/file", size, 4096, false, time.Hour, 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ops != 300 || c.Reads != 300 || c.Read != 300*4096 || c.Fsyncs != 2 || c.Direct != 3 || p.Lat.N() != 300 {
		t.Errorf("random read: %d ops, %d reads, %d bytes, %d fsyncs, %d O_DIRECT", p.Ops, c.Reads, c.Read, c.Fsyncs, c.Direct)
	}
	// Fixed runtime: stops by time.
	start := time.Now()
	p, _, err = randomIO(ctx, c, "/m/file", size, 4096, false, 50*time.Millisecond, 1<<30, 1)
	if err != nil || p.Ops == 0 || time.Since(start) > 2*time.Second {
		t.Errorf("runtime-bound: %d ops in %v, %v", p.Ops, time.Since(start), err)
	}
}

func TestRandioBufferedFallback(t *testing.T) {
	c := fakefs.New("/m")
	c.RefuseDirect = true
	if err := layOutSeqFile(c, "/m/file", 1<<20); err != nil {
		t.Fatal(err)
	}
	_, note, err := seqWriteDirect(context.Background(), c, "/m/file", 1<<20, 512<<10)
	if err != nil || !strings.Contains(note, "refused O_DIRECT") || c.Written != 1<<20 {
		t.Errorf("fallback: note %q err %v written %d", note, err, c.Written)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		test   string
		value  float64
		a1, a2 float64
	}{
		{SeqWrite, 12, 1, 1},
		{SeqWrite, 9.9, 0, 0},
		{RandWrite, 500, 1, 0},
		{RandWrite, 2000, 1, 1},
		{RandRead, 1499, 0, 0},
		{RandRead, 3999, 1, 0},
		{RandRead, 4000, 1, 1},
	}
	for _, tc := range tests {
		m := results.Measurement{Value: results.Float(tc.value), Extra: map[string]float64{}, Unit: catalog.IOPS}
		classify(&m, tc.test)
		if m.Extra["a1_pass"] != tc.a1 || m.Extra["a2_pass"] != tc.a2 || !strings.Contains(m.Note, "A1 ") || !strings.Contains(m.Note, "A2 ") {
			t.Errorf("%s %v: %v %q", tc.test, tc.value, m.Extra, m.Note)
		}
	}
	na := results.Measurement{Status: results.NA, Extra: map[string]float64{}}
	classify(&na, RandRead)
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
	if err := layOutSeqFile(suitekit.OS{}, path, size); err != nil {
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
