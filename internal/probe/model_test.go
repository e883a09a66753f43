package probe

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
)

// modelDevice is a Device whose latencies come from a flash.Model, plus a fixed host
// overhead and random jitter that only ever adds (as scheduling does): the whole probe runs
// in milliseconds, without root, against every profile.
type modelDevice struct {
	m        *flash.Model
	overhead time.Duration
	jitter   time.Duration
	rng      *rand.Rand
}

func newModelDevice(t testing.TB, profile string, size uint64) *modelDevice {
	t.Helper()
	p, err := flash.Lookup(profile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := flash.NewModel(p, size)
	if err != nil {
		t.Fatal(err)
	}
	return &modelDevice{m: m, overhead: 40 * time.Microsecond, jitter: 30 * time.Microsecond, rng: rand.New(rand.NewPCG(7, 11))}
}

func (d *modelDevice) do(r flash.Request) (time.Duration, error) {
	// The FUSE server splits requests at 1 MiB (its MaxWrite); so do the loop device's bios.
	var total time.Duration
	for off := uint64(0); off < r.Len; off += 1 << 20 {
		n := min(r.Len-off, 1<<20)
		lat, err := d.m.Do(flash.Request{Op: r.Op, Off: r.Off + off, Len: n})
		if err != nil {
			return 0, err
		}
		total += lat + d.overhead
		if d.rng.IntN(4) == 0 {
			total += time.Duration(d.rng.Int64N(int64(d.jitter)))
		}
	}
	return total, nil
}

func (d *modelDevice) ReadAt(p []byte, off uint64) (time.Duration, error) {
	return d.do(flash.Request{Op: flash.OpRead, Off: off, Len: uint64(len(p))})
}
func (d *modelDevice) WriteAt(p []byte, off uint64) (time.Duration, error) {
	return d.do(flash.Request{Op: flash.OpWrite, Off: off, Len: uint64(len(p))})
}
func (d *modelDevice) Discard(off, n uint64) error {
	_, err := d.m.Do(flash.Request{Op: flash.OpDiscard, Off: off, Len: n})
	return err
}
func (d *modelDevice) Size() uint64      { return d.m.Size() }
func (d *modelDevice) BlockSize() uint64 { return 512 }
func (d *modelDevice) Direct() bool      { return true }
