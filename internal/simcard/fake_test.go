package simcard

import (
	"bytes"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/cardid"
	"github.com/fsbench/fsbench/internal/flash"
)

func fakeCard(t *testing.T, f flash.Fake, size uint64) *Card {
	t.Helper()
	p, err := flash.Lookup("sd-cheap-old")
	if err != nil {
		t.Fatal(err)
	}
	p.Name = "fake-test"
	if f.Block == 0 {
		f.Block = 512
	}
	p.Fake = &f
	c, err := NewCard(p, size, filepath.Join(t.TempDir(), "card.img"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func stamp(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func rw(t *testing.T, c *Card, op flash.Op, off uint64, buf []byte) {
	t.Helper()
	if n, err := c.Do(flash.Request{Op: op, Off: off, Len: uint64(len(buf))}, buf); err != nil || n != len(buf) {
		t.Fatalf("%v at %d: %d, %v", op, off, n, err)
	}
}

// TestFakeLayerClasses checks each class's address path as f3's emulation defines it: a
// wraparound card lands high writes low, a limbo card drops them (reads zero), a chain does both.
func TestFakeLayerClasses(t *testing.T) {
	const M = 1 << 20
	t.Run("wraparound", func(t *testing.T) {
		c := fakeCard(t, flash.Fake{RealSize: 4 * M, Wrap: 4 * M}, 32*M)
		// The model holds the real flash, and more where the base's page-mapped area needs it
		// (Fake.PhysicalSize); the wrap keeps every address inside the real 4 MiB.
		if c.Size() != 32*M || c.model.Size() < 4*M {
			t.Fatalf("announced %d, model %d", c.Size(), c.model.Size())
		}
		rw(t, c, flash.OpWrite, 1*M, stamp('a', 4096))
		rw(t, c, flash.OpWrite, 9*M, stamp('b', 4096)) // 9 MiB mod 4 MiB = 1 MiB
		got := make([]byte, 4096)
		rw(t, c, flash.OpRead, 1*M, got)
		if !bytes.Equal(got, stamp('b', 4096)) {
			t.Errorf("1 MiB after a write at 9 MiB holds %q..., want b (wrapped)", got[:4])
		}
		if st := c.Stats().Fake; st.Class != flash.FakeWraparound || st.WrappedBytes != 4096 || st.HostBytesWritten != 8192 || st.LostBytes != 0 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("limbo", func(t *testing.T) {
		c := fakeCard(t, flash.Fake{RealSize: 3 * M}, 32*M)
		// A write across the end of the real flash keeps its first part only.
		rw(t, c, flash.OpWrite, 3*M-2048, stamp('x', 4096))
		got := make([]byte, 4096)
		rw(t, c, flash.OpRead, 3*M-2048, got)
		if !bytes.Equal(got[:2048], stamp('x', 2048)) || !bytes.Equal(got[2048:], make([]byte, 2048)) {
			t.Errorf("across the end: %q / %q", got[:2], got[2048:2050])
		}
		if st := c.Stats().Fake; st.Class != flash.FakeLimbo || st.LostBytes != 2048 || st.LostBusyNs == 0 {
			t.Errorf("stats %+v", st)
		}
	})
	t.Run("chain", func(t *testing.T) {
		c := fakeCard(t, flash.Fake{RealSize: 2 * M, Wrap: 4 * M}, 32*M)
		rw(t, c, flash.OpWrite, 5*M, stamp('c', 512)) // lands at 1 MiB
		rw(t, c, flash.OpWrite, 3*M, stamp('d', 512)) // limbo
		got := make([]byte, 512)
		rw(t, c, flash.OpRead, 1*M, got)
		if got[0] != 'c' {
			t.Errorf("1 MiB holds %q, want c", got[0])
		}
		rw(t, c, flash.OpRead, 3*M, got)
		if got[0] != 0 {
			t.Errorf("limbo read %q, want 0", got[0])
		}
	})
}

// TestFakeCache: a strict cache returns a block only at its own address until the card is reset
// or the slot is overwritten; a loose one returns whatever its slot holds.
func TestFakeCache(t *testing.T) {
	const M = 1 << 20
	for _, strict := range []bool{true, false} {
		c := fakeCard(t, flash.Fake{RealSize: M, CacheSize: 64 << 10, CacheStrict: strict}, 8*M)
		got := make([]byte, 512)
		rw(t, c, flash.OpWrite, 4*M, stamp('k', 512))
		rw(t, c, flash.OpRead, 4*M, got)
		if got[0] != 'k' {
			t.Errorf("strict %v: cached block read %q, want k", strict, got[0])
		}
		// 64 KiB further is the same slot (128 slots of 512 bytes).
		rw(t, c, flash.OpRead, 4*M+64<<10, got)
		if want := map[bool]byte{true: 0, false: 'k'}[strict]; got[0] != want {
			t.Errorf("strict %v: aliased slot read %q, want %q", strict, got[0], want)
		}
		c.Reset()
		rw(t, c, flash.OpRead, 4*M, got)
		if got[0] != 0 {
			t.Errorf("strict %v: after a reset the cache still returned %q", strict, got[0])
		}
		if st := c.Stats().Fake; st.Resets != 1 || st.CacheReadBytes == 0 {
			t.Errorf("stats %+v", st)
		}
	}
}

// TestDeviceFilesHealth checks the simulated card's registers (decoded by the same parsers a
// real card's are) and that its health block's total erase count is the model's.
func TestDeviceFilesHealth(t *testing.T) {
	c := newTestCard(t, 0)
	files := c.deviceFiles()
	cid, err := cardid.ParseRegister(string(files["cid"]))
	if err != nil {
		t.Fatal(err)
	}
	id := cardid.ParseSDCID(cid)
	if id.ManufacturerID != simMID || id.ProductName != "SDTYP" || id.CRC != "ok" {
		t.Errorf("CID %+v", id)
	}
	csd, _ := cardid.ParseRegister(string(files["csd"]))
	if d, err := cardid.ParseSDCSD(csd); err != nil || d.CapacityBytes != 16<<20 {
		t.Errorf("CSD %+v, %v", d, err)
	}
	// Rewrite one AU many times: the model erases, and the health block follows.
	buf := stamp('w', 1<<20)
	for i := 0; i < 40; i++ {
		rw(t, c, flash.OpWrite, 12<<20+uint64(i%4)<<20, buf)
	}
	raw, err := hex.DecodeString(strings.TrimSpace(string(c.deviceFiles()[cardid.SimGenCmd56])))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cardid.ParseTranscendSMART(raw)
	if err != nil {
		t.Fatal(err)
	}
	cn := c.Stats().Counters
	erased := cn.BlocksErased
	// The health block counts rated cycles in hundreds.
	if erased == 0 || s.TotalErase != erased || s.MaxErase == 0 || s.RatedPECycles != cn.Endurance/100*100 ||
		s.SpareBlocks != cn.EndOfLife.SpareLeft || s.BadBlocks != cn.EndOfLife.BadBlocks {
		t.Errorf("health %+v, model erased %d, endurance %d, end of life %+v", s, erased, cn.Endurance, *cn.EndOfLife)
	}
	// An eMMC profile has an EXT_CSD with the announced sectors.
	p, _ := flash.Lookup("emmc")
	e, err := NewCard(p, 64<<20, filepath.Join(t.TempDir(), "e.img"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ext, err := cardid.ParseExtCSDHex(string(e.deviceFiles()[cardid.SimExtCSD]))
	if err != nil || ext.CapacityBytes != 64<<20 || ext.LifeTimeA != 1 || string(e.deviceFiles()["type"]) != "MMC\n" {
		t.Errorf("EXT_CSD %+v, %v", ext, err)
	}
}
