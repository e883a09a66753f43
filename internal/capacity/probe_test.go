package capacity

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/simcard"
)

// cardDev drives a simulated card in this process (no FUSE, no loop device, no waiting):
// the card's own address path and model, the probe's own code.
type cardDev struct{ c *simcard.Card }

func (d cardDev) ReadAt(p []byte, off int64) (int, error) {
	return d.c.Do(flash.Request{Op: flash.OpRead, Off: uint64(off), Len: uint64(len(p))}, p)
}

func (d cardDev) WriteAt(p []byte, off int64) (int, error) {
	return d.c.Do(flash.Request{Op: flash.OpWrite, Off: uint64(off), Len: uint64(len(p))}, p)
}

func (d cardDev) Sync() error {
	_, err := d.c.Do(flash.Request{Op: flash.OpFlush}, nil)
	return err
}

// simTarget serves profile at size in this process, with some of its data random so that a
// restore that misses a block shows.
func simTarget(t *testing.T, profile string, size uint64) (*Target, *simcard.Card, string) {
	t.Helper()
	p, err := flash.Lookup(profile)
	if err != nil {
		t.Fatal(err)
	}
	backing := filepath.Join(t.TempDir(), "card.img")
	c, err := simcard.NewCard(p, size, backing, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<20)
	for _, off := range []uint64{0, 1 << 20, 5 << 20, 64 << 20, 100 << 20, size/2 + 3<<20} {
		for i := range buf {
			buf[i] = byte(r.Uint32())
		}
		if off+uint64(len(buf)) <= size {
			if _, err := c.Do(flash.Request{Op: flash.OpWrite, Off: off, Len: uint64(len(buf))}, buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	tg := &Target{Dev: cardDev{c}, Path: profile, Size: size, BlockSize: 512, EraseSize: uint64(p.AUSize),
		Reset: func() error { c.Reset(); return nil }, ResetHow: "the card's Reset",
		ID: DeviceID{Path: "sim:" + profile, Size: size}}
	return tg, c, backing
}

// TestProbeProfiles probes every counterfeit profile and every genuine one, with and without
// the card's reset: a counterfeit is found with its class and its usable size to within one AU
// (of the card's erase unit), a genuine card passes, and the card's data ends as it began.
func TestProbeProfiles(t *testing.T) {
	const fakeSize, genuineSize = 2 << 30, 512 << 20
	profiles := append(flash.Counterfeits(), flash.Builtins()...)
	for _, name := range profiles {
		for _, noReset := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/noreset=%v", name, noReset), func(t *testing.T) {
				if noReset && testing.Short() {
					t.Skip("-short: the reset-less method writes past caches of up to 1 GiB")
				}
				p, _ := flash.Lookup(name)
				// Genuine cards smaller: their backing files are read whole, twice, to compare.
				cardSize := uint64(genuineSize)
				if p.Fake != nil {
					cardSize = fakeSize
				}
				tg, c, backing := simTarget(t, name, cardSize)
				before := sumFile(t, backing)
				st0 := c.Stats()
				res, err := Probe(context.Background(), tg, Options{UndoDir: t.TempDir(), NoReset: noReset})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Restored {
					t.Fatalf("not restored: %s", res.RestoreError)
				}
				if after := sumFile(t, backing); after != before {
					t.Errorf("the card's data changed: sha256 %s before, %s after", before, after)
				}
				au := uint64(p.AUSize)
				switch {
				case p.Fake == nil:
					if res.Verdict != VerdictGenuine || res.Usable != cardSize {
						t.Errorf("genuine card: %s, usable %d: %s", res.Verdict, res.Usable, res.Why)
					}
				case p.Fake.Class(cardSize) == flash.FakeBad:
					if res.Verdict != VerdictDamaged || res.Usable != 0 {
						t.Errorf("a card with no flash: %s, usable %d: %s", res.Verdict, res.Usable, res.Why)
					}
				default:
					want := p.Fake.Usable()
					diff := int64(res.Usable) - int64(want)
					if res.Verdict != VerdictCounterfeit || res.Class != p.Fake.Class(cardSize) || diff <= -int64(au) || diff >= int64(au) {
						t.Errorf("%s: %s %s, usable %d, want counterfeit %s, usable %d within one AU (%d): %s",
							name, res.Verdict, res.Class, res.Usable, p.Fake.Class(cardSize), want, au, res.Why)
					}
				}
				written, busy := cardCost(st0, c.Stats())
				if written != res.BytesWritten {
					t.Errorf("the card saw %d bytes written, the probe counts %d", written, res.BytesWritten)
				}
				t.Logf("%s: %s %s usable %d (exit %d) in %d steps; %s written, card busy %.2f s; %s",
					name, res.Verdict, res.Class, res.Usable, res.ExitCode(), len(res.Steps), size(written), busy.Seconds(), res.Why)
			})
		}
	}
}

// cardCost is what the card saw between two snapshots: bytes the host wrote at its announced
// addresses, and its modelled busy time (real flash and pretended).
func cardCost(a, b simcard.Stats) (uint64, time.Duration) {
	w := b.Counters.HostBytesWritten - a.Counters.HostBytesWritten
	busy := b.Counters.BusyNs - a.Counters.BusyNs
	if b.Fake != nil {
		w = b.Fake.HostBytesWritten - a.Fake.HostBytesWritten
		busy += b.Fake.LostBusyNs - a.Fake.LostBusyNs
	}
	return w, time.Duration(busy)
}

// failingDev fails writes in [from, to) (fail) or silently drops them (drop): a card whose
// flash is failing in one place, which no counterfeit class explains.
type failingDev struct {
	Device
	from, to int64
	drop     bool
}

func (d failingDev) WriteAt(p []byte, off int64) (int, error) {
	if off < d.to && off+int64(len(p)) > d.from {
		if d.drop {
			return len(p), nil
		}
		return 0, fmt.Errorf("input/output error")
	}
	return d.Device.WriteAt(p, off)
}

// TestProbeDamaged: a card that loses blocks in the middle and keeps those above, or refuses
// writes, is called damaged, and the verdict says where.
func TestProbeDamaged(t *testing.T) {
	for _, c := range []struct {
		name string
		drop bool
		want string
	}{{"drops writes", true, "blocks above it were kept"}, {"refuses writes", false, "refused to write 4096 bytes at"}} {
		t.Run(c.name, func(t *testing.T) {
			tg, _, backing := simTarget(t, "sd-typical", 512<<20)
			before := sumFile(t, backing)
			tg.Dev = failingDev{Device: tg.Dev, from: 200 << 20, to: 264 << 20, drop: c.drop}
			res, err := Probe(context.Background(), tg, Options{UndoDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != VerdictDamaged || !strings.Contains(res.Why, c.want) || res.ExitCode() != ExitDamaged || !res.Restored {
				t.Errorf("%s: exit %d: %+v", res.Verdict, res.ExitCode(), res.Why)
			}
			if after := sumFile(t, backing); after != before {
				t.Error("the card's data changed")
			}
			t.Log(res.Why)
		})
	}
}

// TestProbeNoUndo: for a caller that destroys the card anyway (a run with --destroy), the
// probe gives the same verdicts without an undo log: nothing is written to the undo
// directory, the result says the card's data was not saved, and that is not a failure to
// restore.
func TestProbeNoUndo(t *testing.T) {
	for _, c := range []struct {
		profile string
		size    uint64
		verdict string
		exit    int
	}{
		{"sd-typical", 256 << 20, VerdictGenuine, ExitGenuine},
		{"fake-limbo", 2 << 30, VerdictCounterfeit, ExitCounterfeit},
	} {
		t.Run(c.profile, func(t *testing.T) {
			tg, _, _ := simTarget(t, c.profile, c.size)
			undo := t.TempDir()
			res, err := Probe(context.Background(), tg, Options{UndoDir: undo, NoUndo: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != c.verdict || res.ExitCode() != c.exit || !res.NotSaved || res.Restored || res.UndoLog != "" {
				t.Errorf("%s, exit %d, not saved %v, restored %v, undo log %q: %s", res.Verdict, res.ExitCode(), res.NotSaved, res.Restored, res.UndoLog, res.Why)
			}
			if left, _ := os.ReadDir(undo); len(left) != 0 {
				t.Errorf("the undo directory holds %d entries, want none", len(left))
			}
		})
	}
}
