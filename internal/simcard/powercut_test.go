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
