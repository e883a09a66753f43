package simcard

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/cardid"
	"github.com/fsbench/fsbench/internal/flash"
)

// wornTestCard is a served card (no FUSE: the Card itself) of profile sd-typical with the given
// end-of-life behaviour, renewed with blocks that last about 6 erases.
func wornTestCard(t *testing.T, behaviour string) *Card {
	t.Helper()
	p, err := flash.Lookup("sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	p.EndOfLife = flash.EndOfLife{Spread: 0.1, Spare: 0.05, Behaviour: behaviour}
	c, err := NewCard(p, 32<<20, filepath.Join(t.TempDir(), "card.img"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Renew(3, 6/float64(p.Endurance)); err != nil {
		t.Fatal(err)
	}
	return c
}

// pattern is what the test writes at off: its offset in every 8 bytes.
func pattern(off uint64, n int) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := off + uint64(i)
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	return b
}

// wearOut writes the card whole again and again, 1 MiB at a time, until a write fails or its
// health changes; it returns the failed write's error.
func wearOut(t *testing.T, c *Card) error {
	t.Helper()
	for cycle := 0; cycle < 100; cycle++ {
		for off := uint64(0); off < c.Size(); off += 1 << 20 {
			if _, err := c.Do(flash.Request{Op: flash.OpWrite, Off: off, Len: 1 << 20}, pattern(off, 1<<20)); err != nil {
				return err
			}
			if c.WearStatus().Health != flash.Healthy {
				return nil
			}
		}
	}
	t.Fatalf("the card did not wear out in 100 cycles: %+v", c.WearStatus())
	return nil
}

// TestCardEndOfLife: a served card that wears out refuses what its profile says with the
// model's errors, keeps the data it held (read-only), and reads back wrong what its worn
// blocks hold (wrong-data); its wear file's status says so.
func TestCardEndOfLife(t *testing.T) {
	for _, behaviour := range flash.EOLBehaviours {
		t.Run(behaviour, func(t *testing.T) {
			c := wornTestCard(t, behaviour)
			werr := wearOut(t, c)
			st := c.WearStatus()
			if st.BadBlocks == 0 || st.SpareLeft != 0 || st.Renewals != 1 || st.Scale == 1 {
				t.Errorf("status %+v: want bad blocks, no spare left, one renewal, the scale", st)
			}
			buf := make([]byte, 1<<20)
			_, rerr := c.Do(flash.Request{Op: flash.OpRead, Off: 8 << 20, Len: 1 << 20}, buf)
			switch behaviour {
			case flash.EOLReadOnly:
				if !errors.Is(werr, flash.ErrReadOnly) {
					t.Errorf("the last write: %v, want ErrReadOnly", werr)
				}
				if rerr != nil || !bytes.Equal(buf, pattern(8<<20, 1<<20)) {
					t.Errorf("read of a read-only card: %v, data intact %v", rerr, bytes.Equal(buf, pattern(8<<20, 1<<20)))
				}
			case flash.EOLDead:
				if !errors.Is(werr, flash.ErrDead) || !errors.Is(rerr, flash.ErrDead) {
					t.Errorf("a dead card: write %v, read %v; want ErrDead for both", werr, rerr)
				}
			case flash.EOLWrongData:
				if werr != nil {
					t.Fatalf("a wrong-data card refused a write: %v", werr)
				}
				// Write the card whole once more, then read it back: what the worn block holds
				// reads back wrong, every byte of it, without an error; the rest right.
				for off := uint64(0); off < c.Size(); off += 1 << 20 {
					if _, err := c.Do(flash.Request{Op: flash.OpWrite, Off: off, Len: 1 << 20}, pattern(off, 1<<20)); err != nil {
						t.Fatal(err)
					}
				}
				var wrong, right int
				for off := uint64(0); off < c.Size(); off += 1 << 20 {
					if _, err := c.Do(flash.Request{Op: flash.OpRead, Off: off, Len: 1 << 20}, buf); err != nil {
						t.Fatalf("read of a wrong-data card: %v", err)
					}
					want := pattern(off, 1<<20)
					for i := range buf {
						if buf[i] != want[i] {
							wrong++
						} else {
							right++
						}
					}
				}
				st := c.WearStatus()
				t.Logf("%d bytes read back wrong, %d right; %+v", wrong, right, st.WearOut)
				if wrong == 0 || right == 0 || uint64(wrong) != st.CorruptBytes {
					t.Errorf("%d bytes wrong, %d right, the card counted %d: want some of each, counted exactly", wrong, right, st.CorruptBytes)
				}
			}
			// A fresh card again: healthy, empty, its counters from zero.
			if err := c.WearCommand("renew 9"); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Do(flash.Request{Op: flash.OpRead, Off: 8 << 20, Len: 4096}, buf); err != nil || !bytes.Equal(buf[:4096], make([]byte, 4096)) {
				t.Errorf("a renewed card: read %v, zeroes %v", err, bytes.Equal(buf[:4096], make([]byte, 4096)))
			}
			var js WearStatus
			if err := json.Unmarshal(c.wearJSON(), &js); err != nil || js.Health != flash.Healthy || js.Seed != 9 || js.Renewals != 2 || js.BadBlocks != 0 || js.Scale != st.Scale {
				t.Errorf("wear file after renew 9: %+v, %v", js, err)
			}
		})
	}
}

// TestWearCommandErrors: a bad command fails with a message the status keeps.
func TestWearCommandErrors(t *testing.T) {
	c := wornTestCard(t, flash.EOLReadOnly)
	for _, line := range []string{"", "renew", "renew x", "renew 1 -1", "melt 1"} {
		if err := c.WearCommand(line); err == nil {
			t.Errorf("%q accepted", line)
		} else if c.WearStatus().Error == "" {
			t.Errorf("%q: the status does not keep the error", line)
		}
	}
}

// TestHealthFollowsBadBlocks: what the card's registers say of its health follows its bad
// blocks: an SD card's health block counts them and the spares left; an eMMC's PRE_EOL_INFO
// warns at 80 % of its reserved blocks used and is urgent at 90 % (JESD84-B51).
func TestHealthFollowsBadBlocks(t *testing.T) {
	c := wornTestCard(t, flash.EOLReadOnly)
	if err := wearOut(t, c); !errors.Is(err, flash.ErrReadOnly) {
		t.Fatalf("wear out: %v", err)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(c.deviceFiles()[cardid.SimGenCmd56])))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cardid.ParseTranscendSMART(raw)
	if st := c.WearStatus(); err != nil || s.BadBlocks != st.BadBlocks || s.SpareBlocks != 0 {
		t.Errorf("health block %+v (%v), card %+v: want its bad blocks and no spare left", s, err, st.WearOut)
	}
	for _, tt := range []struct {
		spare, left uint64
		want        int
	}{{0, 0, 1}, {10, 10, 1}, {10, 3, 1}, {10, 2, 2}, {10, 1, 3}, {10, 0, 3}, {50, 10, 2}, {50, 5, 3}} {
		if got := preEOL(tt.spare, tt.left); got != tt.want {
			t.Errorf("preEOL(%d spares, %d left) = %d, want %d", tt.spare, tt.left, got, tt.want)
		}
	}
}

// TestCardSaveRestore: a card saved and restored is the card as it was: its data, its counters
// and its wear, whatever was written after the save.
func TestCardSaveRestore(t *testing.T) {
	c := wornTestCard(t, flash.EOLReadOnly)
	for off := uint64(0); off < c.Size(); off += 1 << 20 {
		if _, err := c.Do(flash.Request{Op: flash.OpWrite, Off: off, Len: 1 << 20}, pattern(off, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := c.WearCommand("save " + dir); err != nil {
		t.Fatal(err)
	}
	saved := c.Stats().Counters
	if err := wearOut(t, c); !errors.Is(err, flash.ErrReadOnly) {
		t.Fatalf("wearing out after the save: %v", err)
	}
	if err := c.WearCommand("restore " + dir); err != nil {
		t.Fatal(err)
	}
	if got := c.Stats().Counters; got.BlocksErased != saved.BlocksErased || got.HostBytesWritten != saved.HostBytesWritten || c.WearStatus().Health != flash.Healthy {
		t.Errorf("restored: erased %d, written %d, health %q; saved: %d, %d, healthy", got.BlocksErased, got.HostBytesWritten, c.WearStatus().Health, saved.BlocksErased, saved.HostBytesWritten)
	}
	buf := make([]byte, 1<<20)
	for off := uint64(0); off < c.Size(); off += 1 << 20 {
		if _, err := c.Do(flash.Request{Op: flash.OpRead, Off: off, Len: 1 << 20}, buf); err != nil || !bytes.Equal(buf, pattern(off, 1<<20)) {
			t.Fatalf("restored data at %d: %v, equal %v", off, err, bytes.Equal(buf, pattern(off, 1<<20)))
		}
	}
	if err := c.WearCommand("restore " + t.TempDir()); err == nil {
		t.Error("restored from an empty directory")
	}
}
