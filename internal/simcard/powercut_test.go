package simcard

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/fsbench/fsbench/internal/flash"
)

// TestPowerCutRecordAndCut records a few requests on a card without FUSE, then builds cuts
// in order and reads them back: a lossless card holds exactly the requests before the cut,
// and writes to the cut are forgotten by reset.
func TestPowerCutRecordAndCut(t *testing.T) {
	p, err := flash.Lookup("sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	p.PowerLoss = flash.PowerLoss{}
	dir := t.TempDir()
	size := uint64(16 << 20)
	c, err := NewCard(p, size, filepath.Join(dir, "backing"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fill := func(b byte) []byte { return bytes.Repeat([]byte{b}, 4096) }
	do := func(r flash.Request, buf []byte) {
		t.Helper()
		if _, err := c.Do(r, buf); err != nil {
			t.Fatal(err)
		}
	}
	do(flash.Request{Op: flash.OpWrite, Off: 0, Len: 4096}, fill('a')) // before recording: in the base
	if err := c.PowerCutCommand(fmt.Sprintf("record %s %d", dir, 1<<20)); err != nil {
		t.Fatal(err)
	}
	do(flash.Request{Op: flash.OpWrite, Off: 0, Len: 4096}, fill('b'))
	do(flash.Request{Op: flash.OpRead, Off: 0, Len: 4096}, make([]byte, 4096)) // not recorded
	do(flash.Request{Op: flash.OpFlush}, nil)
	do(flash.Request{Op: flash.OpWrite, Off: 8192, Len: 4096}, fill('c'))
	if st := c.PowerCutStatus(); st.Pos != 3 || !st.Recording {
		t.Fatalf("status %+v, want 3 requests recorded", st)
	}
	if err := c.PowerCutCommand("stop"); err != nil {
		t.Fatal(err)
	}
	read := func(off int64) byte {
		b := make([]byte, 4096)
		if _, err := c.cutIO(b, off, false); err != nil {
			t.Fatal(err)
		}
		return b[0]
	}
	for _, tc := range []struct {
		pos       int
		at0, at8k byte
	}{{0, 'a', 0}, {1, 'b', 0}, {3, 'b', 'c'}} {
		if err := c.PowerCutCommand(fmt.Sprintf("cut %d 1", tc.pos)); err != nil {
			t.Fatal(err)
		}
		if a, b := read(0), read(8192); a != tc.at0 || b != tc.at8k {
			t.Errorf("cut %d: %q %q, want %q %q", tc.pos, a, b, tc.at0, tc.at8k)
		}
		c.cutIO(fill('z'), 0, true)
		if err := c.PowerCutCommand("reset"); err != nil {
			t.Fatal(err)
		}
		if a := read(0); a != tc.at0 {
			t.Errorf("cut %d after reset: %q, want %q", tc.pos, a, tc.at0)
		}
	}
	if err := c.PowerCutCommand("cut 1 1"); err == nil {
		t.Error("a cut before the last one was built")
	}
	if err := c.PowerCutCommand("close"); err != nil {
		t.Fatal(err)
	}
}

// TestPowerCutWriteBuffer builds every cut, in ascending order, on a card whose write buffer
// loses writes from before the previous cut's durable prefix (sd-typical: 32 KiB, flushes or
// not): each must build, and hold the records the model kept.
func TestPowerCutWriteBuffer(t *testing.T) {
	p, err := flash.Lookup("sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	p.PowerLoss = flash.PowerLoss{WriteBuffer: 32 << 10}
	dir := t.TempDir()
	c, err := NewCard(p, 16<<20, filepath.Join(dir, "backing"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.PowerCutCommand(fmt.Sprintf("record %s %d", dir, 1<<20)); err != nil {
		t.Fatal(err)
	}
	const n = 12
	for i := 0; i < n; i++ { // 16 KiB writes, each flushed: the buffer spans two of them
		if _, err := c.Do(flash.Request{Op: flash.OpWrite, Off: uint64(i) << 14, Len: 1 << 14}, bytes.Repeat([]byte{byte('a' + i)}, 1<<14)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Do(flash.Request{Op: flash.OpFlush}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.PowerCutCommand("stop"); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for pos := 1; pos <= 2*n; pos++ {
		if err := c.PowerCutCommand(fmt.Sprintf("cut %d %d", pos, pos)); err != nil {
			t.Fatalf("cut %d: %v", pos, err)
		}
		o := c.PowerCutStatus().Outcome
		for i := 0; i < n; i++ {
			b := make([]byte, 1)
			if _, err := c.cutIO(b, int64(i)<<14, false); err != nil {
				t.Fatal(err)
			}
			rec := 2 * i // write i is request 2i
			landed := rec < o.Durable || (o.Partial != nil && o.Partial.Record == rec && o.Partial.Bytes > 0)
			if want := map[bool]byte{true: byte('a' + i), false: 0}[landed && rec < pos]; b[0] != want {
				t.Errorf("cut %d (%s): write %d reads %q, want %q", pos, o, i, b[0], want)
			}
		}
		if o.Durable < pos-1 {
			lost++
		}
	}
	if lost == 0 {
		t.Error("no cut lost a flushed write: the buffer was not modelled")
	}
}
