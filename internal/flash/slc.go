package flash

import (
	"errors"
	"fmt"
	"time"
)

// SLCCache is a card's SLC cache (the profile's [slc_cache] table): modern TLC cards and eMMC
// write into flash blocks used one bit per cell (SLC mode), which programs several times
// faster than TLC, and copy ("fold") the data into TLC later. While the cache has room a write
// runs at the card's burst rate (program_page_time); once it is full the card must fold before
// it can take more, and the writer waits: that is the rate after the cache, and the stalls a
// writer sees every fold_unit bytes. Left idle, the card folds on its own and the cache comes
// back (AnandTech's card reviews measure cards fresh and after extended use for this reason).
//
// The cache is dynamic: it is made of free blocks, which in SLC mode hold a third of what they
// hold as TLC, so a card whose every block holds data (a used card, --card-state used) has
// only its spare blocks for it and a smaller cache.
//
// Only a page-mapped FTL ("page") has one here: the profiles that stand for such cards (A1/A2
// cards, eMMC) are page-mapped.
type SLCCache struct {
	// Share is the cache of a fresh (empty) card, as a share of the card's capacity.
	Share float64 `toml:"share" json:"share"`
	// FoldPageTime is the time to fold one page from the cache into TLC (a TLC program): the
	// card's write rate once the cache is full is 1 ÷ (program_page_time + fold_page_time)
	// per page, and it folds at 1 ÷ fold_page_time while idle.
	FoldPageTime Duration `toml:"fold_page_time" json:"fold_page_time"`
	// FoldUnit is how much a write that finds the cache full makes the card fold before it
	// takes the write (default 4 MiB): the stall a writer sees, fold_unit ÷ page_size ×
	// fold_page_time.
	FoldUnit Size `toml:"fold_unit" json:"fold_unit"`
	// FoldAfter is how long the card must be left idle before it folds on its own (default
	// 100 ms): the short gaps between a host's requests fold nothing.
	FoldAfter Duration `toml:"fold_after" json:"fold_after"`
}

// slcBitsPerCell is how many times more a block holds as TLC than in SLC mode: a dynamic cache
// of free blocks holds a third of them.
const slcBitsPerCell = 3

func (s *SLCCache) validate(p *Profile) (string, error) {
	if p.FTL != FTLPage {
		return "slc_cache", fmt.Errorf("only a %q FTL has an SLC cache in this model (the profiles with one stand for page-mapped cards): remove the table or set ftl = %q", FTLPage, FTLPage)
	}
	if s.Share <= 0 || s.Share > 1.0/slcBitsPerCell {
		return "share", fmt.Errorf("must be in (0, 1/%d]: a fresh card's cache as a share of its capacity (SLC mode holds a %d-th of a TLC block), not %g", slcBitsPerCell, slcBitsPerCell, s.Share)
	}
	if s.FoldPageTime <= 0 {
		return "fold_page_time", errors.New("must be set (> 0): the time to fold one page into TLC")
	}
	if s.FoldUnit == 0 {
		s.FoldUnit = 4 << 20
	}
	if s.FoldUnit%p.PageSize != 0 {
		return "fold_unit", fmt.Errorf("must be a multiple of page_size, not %d", s.FoldUnit)
	}
	if s.FoldAfter < 0 {
		return "fold_after", errors.New("must not be negative")
	}
	if s.FoldAfter == 0 {
		s.FoldAfter = Duration(100 * time.Millisecond)
	}
	return "", nil
}

// FreshBytes is the cache of a fresh card of size bytes.
func (s *SLCCache) FreshBytes(size, pageSize uint64) uint64 {
	return uint64(s.Share*float64(size/pageSize)) * pageSize
}

// AfterMBps is the card's write rate once the cache is full, in MB/s, for a page size and
// the profile's burst program time per page (the model's own, without command or bus time).
func (s *SLCCache) AfterMBps(pageSize uint64, burst time.Duration) float64 {
	return float64(pageSize) / (burst + time.Duration(s.FoldPageTime)).Seconds() / 1e6
}

// slcState is the model's cache: how many pages it holds, not yet folded.
type slcState struct {
	c      *SLCCache
	max    uint64 // pages: the fresh card's cache
	used   uint64 // pages in the cache
	unit   uint64 // pages folded when a write finds the cache full
	folded uint64 // pages folded, in the foreground and while idle
}

func newSLC(c *SLCCache, nPages, pageSize uint64) *slcState {
	return &slcState{c: c, max: uint64(c.Share * float64(nPages)), unit: max(uint64(c.FoldUnit)/pageSize, 1)}
}

// slcCapacity is the cache's size now, in pages: the fresh card's, less when the free blocks
// (physical pages holding no valid data) cannot hold it in SLC mode.
func (m *Model) slcCapacity() uint64 {
	free := uint64(len(m.pool.rev)) - uint64(m.pool.n)
	return min(m.slc.max, free/slcBitsPerCell)
}

// hostProgramTime is the time to program n pages of host data: through the SLC cache where
// the profile has one (progPages' hook).
func (m *Model) hostProgramTime(n uint64) time.Duration {
	if m.slc == nil {
		return time.Duration(n) * time.Duration(m.p.ProgramPageTime)
	}
	var d time.Duration
	s := m.slc
	for range n {
		capacity := m.slcCapacity()
		if capacity == 0 {
			// No room for a cache at all: straight into TLC.
			d += time.Duration(s.c.FoldPageTime)
			continue
		}
		for s.used >= capacity {
			// Full: the card folds a unit before it takes the write, and the writer waits.
			f := min(s.unit, s.used)
			s.used -= f
			s.folded += f
			d += time.Duration(f) * time.Duration(s.c.FoldPageTime)
		}
		s.used++
		d += time.Duration(m.p.ProgramPageTime)
	}
	return d
}

// slcDiscarded keeps the cache from holding more than the card's valid data after a discard
// (discard's hook): what the host discarded needs no folding. Which pages the cache held is not
// tracked; a card discarded whole ends with an empty cache, which is what matters.
func (m *Model) slcDiscarded() {
	if m.slc != nil {
		m.slc.used = min(m.slc.used, uint64(m.pool.n))
	}
}

// Idle tells the model that the card was left alone for d (no request in flight): a card with
// an SLC cache folds it into TLC then, after FoldAfter, at one page per FoldPageTime. Nothing
// else in the model depends on time.
func (m *Model) Idle(d time.Duration) {
	if m.slc == nil || d <= time.Duration(m.slc.c.FoldAfter) {
		return
	}
	s := m.slc
	f := min(s.used, uint64((d-time.Duration(s.c.FoldAfter))/time.Duration(s.c.FoldPageTime)))
	s.used -= f
	s.folded += f
}

// SLC says what the card's SLC cache holds and can hold now, in bytes, and how much it has
// folded into TLC so far (ok false: the profile has no SLC cache).
func (m *Model) SLC() (used, capacity, folded uint64, ok bool) {
	if m.slc == nil {
		return 0, 0, 0, false
	}
	return m.slc.used * m.ps, m.slcCapacity() * m.ps, m.slc.folded * m.ps, true
}
