package simcard

import (
	"fmt"
	"sync"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
)

// fakeLayer is a counterfeit card's controller (a profile's [fake] table, flash.Fake): it sits
// in the card's address path, before the flash model, and decides where each byte the host
// addresses really goes. The model and the backing file hold only the real flash; the layer
// announces the larger size, folds addresses above the wrap onto lower ones, and drops what
// lands beyond the real flash, or keeps it in its small RAM cache, the way f3's emulated drives
// do (AltraMayor/f3, src/libdevs.c). It is apart from the model so that the model's timing
// and wear stay those of the real flash behind the lie.
type fakeLayer struct {
	mu        sync.Mutex
	f         flash.Fake
	p         flash.Profile
	announced uint64
	real      uint64
	block     uint64
	mask      uint64 // address mask: wrap−1, or all ones
	cache     []byte // cache slots, block bytes each
	tags      []uint64
	valid     []bool
	slots     uint64
	st        FakeStats
}

// FakeStats are a counterfeit card's own counters (Stats.Fake): what the host asked of it,
// as opposed to what reached its real flash (Stats.Counters).
type FakeStats struct {
	Class     string `json:"class"`
	Announced uint64 `json:"announced_bytes"`
	Real      uint64 `json:"real_bytes"`
	Usable    uint64 `json:"usable_bytes"`
	// HostBytesWritten and HostBytesRead are the bytes the host wrote and read at the card's
	// announced addresses: what a capacity probe costs the card.
	HostBytesWritten uint64 `json:"host_bytes_written"`
	HostBytesRead    uint64 `json:"host_bytes_read"`
	// LostBytes were written beyond the real flash: dropped, or held in the cache.
	LostBytes uint64 `json:"lost_bytes"`
	// WrappedBytes were written above the wrap and landed lower, over other data.
	WrappedBytes uint64 `json:"wrapped_bytes"`
	// CacheReadBytes were read back from the cache rather than from flash.
	CacheReadBytes uint64 `json:"cache_read_bytes"`
	// LostBusyNs is the modelled time the card spent pretending to program and read what it
	// does not have (a program or read per page, as its real flash would take): with
	// Counters.BusyNs it is the card's whole busy time.
	LostBusyNs uint64 `json:"lost_busy_ns"`
	Resets     uint64 `json:"resets"`
}

func newFakeLayer(p flash.Profile, announced uint64) (*fakeLayer, error) {
	f := *p.Fake
	if err := f.CheckSize(announced); err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	l := &fakeLayer{f: f, p: p, announced: announced, real: uint64(f.RealSize), block: uint64(f.Block), mask: ^uint64(0)}
	if f.Wrap != 0 {
		l.mask = uint64(f.Wrap) - 1
	}
	if f.CacheSize > 0 {
		l.slots = uint64(f.CacheSize) / l.block
		l.cache = make([]byte, f.CacheSize)
		l.tags = make([]uint64, l.slots)
		l.valid = make([]bool, l.slots)
	}
	l.st = FakeStats{Class: f.Class(announced), Announced: announced, Real: l.real, Usable: f.Usable()}
	return l, nil
}

// piece is a part of a host request: at a real flash address (lost false) or beyond it.
type piece struct {
	host, phys, n uint64
	lost          bool
}

// split cuts [off, off+n) where the address wraps or crosses the end of the real flash.
func (l *fakeLayer) split(off, n uint64) []piece {
	var out []piece
	for end := off + n; off < end; {
		phys := off & l.mask
		run := end - off
		if l.mask != ^uint64(0) {
			run = min(run, l.mask+1-phys) // up to the next wrap
		}
		p := piece{host: off, phys: phys}
		if phys < l.real {
			run = min(run, l.real-phys)
		} else {
			p.lost = true
		}
		p.n = run
		out = append(out, p)
		off += run
	}
	return out
}

// do runs a host request through the layer: real pieces through the card (the model and the
// backing file, at their physical address), lost ones through the cache or nowhere.
func (c *Card) fakeDo(t *orderTicket, arrival time.Time, r flash.Request, buf []byte) (int, error) {
	l := c.fake
	if r.Op == flash.OpFlush {
		return c.doAt(t, arrival, r, buf)
	}
	if r.Op == flash.OpRead && r.Off < l.announced && r.Len > l.announced-r.Off {
		r.Len = l.announced - r.Off
	}
	if r.Op == flash.OpRead && r.Off >= l.announced {
		return 0, nil
	}
	if r.Off > l.announced || r.Len > l.announced-r.Off {
		return 0, fmt.Errorf("%s at %d+%d is beyond the card's %d bytes", r.Op, r.Off, r.Len, l.announced)
	}
	l.mu.Lock()
	switch r.Op {
	case flash.OpWrite:
		l.st.HostBytesWritten += r.Len
	case flash.OpRead:
		l.st.HostBytesRead += r.Len
	}
	l.mu.Unlock()
	done := 0
	for i, p := range l.split(r.Off, r.Len) {
		at := arrival
		if i > 0 {
			at = time.Now()
		}
		b := buf[p.host-r.Off : p.host-r.Off+p.n]
		if !p.lost {
			if p.host != p.phys && r.Op == flash.OpWrite {
				l.mu.Lock()
				l.st.WrappedBytes += p.n
				l.mu.Unlock()
			}
			if _, err := c.doAt(t, at, flash.Request{Op: r.Op, Off: p.phys, Len: p.n, FUA: r.FUA}, b); err != nil {
				return done, err
			}
		} else {
			c.lostIO(at, r.Op, p, b)
		}
		done += int(p.n)
	}
	return done, nil
}

// lostIO serves a piece beyond the real flash: a write goes to the cache (or nowhere), a read
// comes from the cache (or reads as zeroes). It costs the time a real program or read of its
// pages would: the controller pretends.
func (c *Card) lostIO(arrival time.Time, op flash.Op, p piece, b []byte) {
	l := c.fake
	pages := (p.n + uint64(l.p.PageSize) - 1) / uint64(l.p.PageSize)
	lat := time.Duration(l.p.CommandTime)
	l.mu.Lock()
	switch op {
	case flash.OpWrite:
		l.st.LostBytes += p.n
		lat += time.Duration(pages) * time.Duration(l.p.ProgramPageTime)
		l.cacheWrite(p.host, b)
	case flash.OpRead:
		lat += time.Duration(pages) * time.Duration(l.p.ReadPageTime)
		l.st.CacheReadBytes += l.cacheRead(p.host, b)
	case flash.OpDiscard:
		lat += time.Duration(l.p.DiscardTime)
	}
	l.st.LostBusyNs += uint64(lat)
	l.mu.Unlock()
	c.mu.Lock()
	deadline := c.book(arrival, flash.Request{Op: op, Off: p.phys, Len: p.n}, lat)
	c.mu.Unlock()
	waitUntil(deadline)
	c.mu.Lock()
	c.replied(time.Now())
	c.mu.Unlock()
}

// cacheWrite stores the blocks of b (host address off) in their slots: slot = block number
// mod slots, as f3's emulation indexes its cache. A partial block updates its slot's bytes.
func (l *fakeLayer) cacheWrite(off uint64, b []byte) {
	if l.slots == 0 {
		return
	}
	for done := uint64(0); done < uint64(len(b)); {
		blk := (off + done) / l.block
		in := (off + done) % l.block
		n := min(l.block-in, uint64(len(b))-done)
		s := blk % l.slots
		copy(l.cache[s*l.block+in:], b[done:done+n])
		l.tags[s], l.valid[s] = blk, true
		done += n
	}
}

// cacheRead fills b (host address off) from the cache: a strict cache returns a slot only
// for the block written there, a loose one whatever the slot holds; the rest reads as zeroes.
// It returns the bytes that came from the cache.
func (l *fakeLayer) cacheRead(off uint64, b []byte) uint64 {
	var hit uint64
	for done := uint64(0); done < uint64(len(b)); {
		blk := (off + done) / l.block
		in := (off + done) % l.block
		n := min(l.block-in, uint64(len(b))-done)
		dst := b[done : done+n]
		if s := blk % max(l.slots, 1); l.slots > 0 && l.valid[s] && (!l.f.CacheStrict || l.tags[s] == blk) {
			copy(dst, l.cache[s*l.block+in:])
			hit += n
		} else {
			clear(dst)
		}
		done += n
	}
	return hit
}

// Reset is a power cycle of the counterfeit's controller: its RAM cache is lost. (A host that
// can reset a real card, by its power or a USB reset, gets the same from a real counterfeit.)
// A genuine card's reset does nothing here: its data is on flash once flushed.
func (c *Card) Reset() {
	if c.fake == nil {
		return
	}
	l := c.fake
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.valid)
	clear(l.cache)
	l.st.Resets++
}

// fakeStats returns the counterfeit's counters, nil for a genuine card.
func (c *Card) fakeStats() *FakeStats {
	if c.fake == nil {
		return nil
	}
	c.fake.mu.Lock()
	defer c.fake.mu.Unlock()
	s := c.fake.st
	return &s
}

// Size is the size the card announces: a counterfeit's announced size, else its flash's.
func (c *Card) Size() uint64 {
	if c.fake != nil {
		return c.fake.announced
	}
	return c.model.Size()
}
