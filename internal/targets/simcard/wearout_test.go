package simcard

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/simcard"
)

// TestWornCardAtBlockLevel: what a filesystem sees of a card at its end of life, through the
// path a run takes (the card served over FUSE by its own process, a direct-I/O loop device
// over it): a card written whole again and again through the loop device, with blocks that
// last a few erases, ends as its profile says. Read-only: writes fail with EIO, reads still
// return what was written; dead: reads fail with EIO too; wrong data: no error at all, and a
// read of the whole device returns data that differs from what was written, which only a
// comparison (the endurance suite's verifier) catches.
func TestWornCardAtBlockLevel(t *testing.T) {
	requireFUSE(t)
	tests := []struct{ behaviour, profile string }{
		{flash.EOLReadOnly, "sd-typical"},
		{flash.EOLDead, "testdata/sd-typical-dead.toml"},
		{flash.EOLWrongData, "testdata/sd-typical-wrong-data.toml"},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			const size = 32 << 20
			p, err := flash.CardProfile(tt.profile)
			if err != nil {
				t.Fatal(err)
			}
			if p.EndOfLife.Behaviour != tt.behaviour {
				t.Fatalf("profile %s ends %q, want %q", tt.profile, p.EndOfLife.Behaviour, tt.behaviour)
			}
			sc, dev := directTestCard(t, SimcardOptions{Profile: tt.profile, Size: size, TimeScale: 0,
				EnduranceScale: 5 / float64(p.Endurance), WearSeed: 2, PathOffset: "off"})
			buf := directBuf(t, 1<<20)
			wear := func() simcard.WearStatus {
				var st simcard.WearStatus
				b, err := os.ReadFile(filepath.Join(sc.Dir(), simcard.WearFile))
				if err == nil {
					err = json.Unmarshal(b, &st)
				}
				if err != nil {
					t.Fatalf("wear file: %v", err)
				}
				return st
			}
			// Write the device whole, again and again, until a write fails or the card says
			// its life ended.
			var werr error
			for cycle := 0; cycle < 50 && werr == nil && wear().Health == flash.Healthy; cycle++ {
				for off := int64(0); off < size; off += 1 << 20 {
					fill(buf, off)
					if _, werr = dev.WriteAt(buf, off); werr != nil {
						break
					}
				}
			}
			st := wear()
			t.Logf("%s: last write %v; card %+v", tt.behaviour, werr, st.WearOut)
			if st.Health == flash.Healthy {
				t.Fatalf("the card is still healthy after 50 whole writes of blocks that last 5 erases")
			}
			readAll := func() (wrong int, err error) {
				for off := int64(0); off < size; off += 1 << 20 {
					if _, err := dev.ReadAt(buf, off); err != nil {
						return wrong, err
					}
					want := make([]byte, len(buf))
					fill(want, off)
					for i := range buf {
						if buf[i] != want[i] {
							wrong++
						}
					}
				}
				return wrong, nil
			}
			switch tt.behaviour {
			case flash.EOLReadOnly:
				if !errors.Is(werr, unix.EIO) {
					t.Errorf("a write to the read-only card: %v, want EIO", werr)
				}
				fill(buf, 0)
				if _, err := dev.WriteAt(buf, 0); !errors.Is(err, unix.EIO) {
					t.Errorf("another write: %v, want EIO", err)
				}
				if wrong, err := readAll(); err != nil || wrong != 0 {
					t.Errorf("reading the read-only card: %v, %d bytes differ from what was written; want every byte back", err, wrong)
				}
			case flash.EOLDead:
				if !errors.Is(werr, unix.EIO) {
					t.Errorf("a write to the dead card: %v, want EIO", werr)
				}
				if _, err := dev.ReadAt(buf, 0); !errors.Is(err, unix.EIO) {
					t.Errorf("a read of the dead card: %v, want EIO", err)
				}
			case flash.EOLWrongData:
				if werr != nil {
					t.Fatalf("a write to the wrong-data card failed: %v", werr)
				}
				// Once more whole, so that the worn blocks hold data, then read it back.
				for off := int64(0); off < size; off += 1 << 20 {
					fill(buf, off)
					if _, err := dev.WriteAt(buf, off); err != nil {
						t.Fatal(err)
					}
				}
				wrong, err := readAll()
				if err != nil || wrong == 0 {
					t.Errorf("reading the wrong-data card: %v, %d bytes differ; want no error and wrong data", err, wrong)
				}
				if st := wear(); st.CorruptBytes != uint64(wrong) {
					t.Errorf("%d bytes read back wrong, the card counted %d", wrong, st.CorruptBytes)
				}
			}
		})
	}
}

// fill writes the device offset of every 8 bytes of b (b starts at off).
func fill(b []byte, off int64) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], uint64(off)+uint64(i))
	}
}

// directBuf is a page-aligned buffer for O_DIRECT I/O.
func directBuf(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}
