package simcard

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/fsbench/fsbench/internal/flash"
)

// TestLivePowerOff switches a card's power on and off around requests, as an emulated board
// killed by its relay does: on power-off the card itself holds what the profile's model kept
// (a cache that loses whatever was not flushed keeps the flushed write and loses the rest; a
// protected card loses nothing), requests fail while it is off, and it works again once on.
func TestLivePowerOff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		loss  flash.PowerLoss
		cache int
		keepB bool
	}{
		{"cache lost unless flushed", flash.PowerLoss{VolatileCache: true, CacheOrder: flash.CacheOrderNone}, 1 << 20, false},
		{"protected", flash.PowerLoss{Protected: true}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := flash.Lookup("emmc")
			if err != nil {
				t.Fatal(err)
			}
			p.PowerLoss, p.CacheSize = tc.loss, flash.Size(tc.cache)
			dir := t.TempDir()
			c, err := NewCard(p, 16<<20, filepath.Join(dir, "backing"), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			do := func(r flash.Request, buf []byte) error { _, err := c.Do(r, buf); return err }
			fill := func(b byte) []byte { return bytes.Repeat([]byte{b}, 4096) }
			read := func(off uint64) byte {
				b := make([]byte, 4096)
				if _, err := c.backing.ReadAt(b, int64(off)); err != nil {
					t.Fatal(err)
				}
				return b[0]
			}
			on := fmt.Sprintf("power-on %s %d", dir, 1<<20)
			if err := c.PowerCutCommand(on); err != nil {
				t.Fatal(err)
			}
			for _, err := range []error{
				do(flash.Request{Op: flash.OpWrite, Off: 0, Len: 4096}, fill('a')),
				do(flash.Request{Op: flash.OpFlush}, nil),
				do(flash.Request{Op: flash.OpWrite, Off: 1 << 20, Len: 4096}, fill('b')),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := c.PowerCutCommand("power-off 9"); err != nil {
				t.Fatal(err)
			}
			if got := read(0); got != 'a' {
				t.Errorf("the flushed write reads %q after the power went, want 'a'", got)
			}
			wantB := byte(0)
			if tc.keepB {
				wantB = 'b'
			}
			if got := read(1 << 20); got != wantB {
				t.Errorf("the unflushed write reads %q after the power went, want %q (%s)", got, wantB, c.PowerCutStatus().Outcome)
			}
			if err := do(flash.Request{Op: flash.OpWrite, Off: 0, Len: 4096}, fill('x')); !errors.Is(err, syscall.EIO) {
				t.Errorf("a write while the power is off: %v, want EIO", err)
			}
			if got := read(0); got != 'a' {
				t.Errorf("a write while the power was off reached the card: %q", got)
			}
			if err := c.PowerCutCommand(on); err != nil {
				t.Fatal(err)
			}
			if err := do(flash.Request{Op: flash.OpWrite, Off: 0, Len: 4096}, fill('c')); err != nil {
				t.Fatalf("a write once the power is back: %v", err)
			}
			if got := read(0); got != 'c' {
				t.Errorf("after power-on the card reads %q, want 'c'", got)
			}
			if err := c.PowerCutCommand("power-off 1"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
