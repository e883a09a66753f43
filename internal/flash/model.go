package flash

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
)

// Op is a request type.
type Op uint8

// Request types, as the block layer sends them (a FUSE server sees them as read, write,
// fallocate(PUNCH_HOLE) and fsync).
const (
	OpRead Op = iota
	OpWrite
	OpDiscard
	OpFlush
)

func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpDiscard:
		return "discard"
	case OpFlush:
		return "flush"
	}
	return fmt.Sprintf("op%d", uint8(o))
}

// Request is one host request. Off and Len are in bytes; Flush ignores them. FUA makes a
// write bypass the volatile cache (when the profile has one).
type Request struct {
	Op       Op
	Off, Len uint64
	FUA      bool
}

// WearBucket says how many erase blocks have been erased Erases times.
type WearBucket struct {
	Erases uint32 `json:"erases"`
	Blocks uint64 `json:"blocks"`
}

// Counters are the card's cumulative flash-level counters. Sub gives the counters of an
// interval (one benchmark test).
type Counters struct {
	Reads            uint64 `json:"reads"`
	Writes           uint64 `json:"writes"`
	Discards         uint64 `json:"discards"`
	Flushes          uint64 `json:"flushes"`
	HostBytesRead    uint64 `json:"host_bytes_read"`
	HostBytesWritten uint64 `json:"host_bytes_written"`
	HostBytesDiscard uint64 `json:"host_bytes_discarded"`
	PagesRead        uint64 `json:"pages_read"`          // page reads, including read-modify-write of partial pages
	PagesProgrammed  uint64 `json:"pages_programmed"`    // all page programs, copies included
	PagesCopied      uint64 `json:"pages_copied"`        // programs that moved still-valid data (AU merges, GC)
	BlocksErased     uint64 `json:"blocks_erased"`       // erase-block erases
	AUMerges         uint64 `json:"au_merges"`           // AU closes that had to copy (or finish a page)
	GCCollections    uint64 `json:"gc_collections"`      // page-mapped blocks reclaimed by garbage collection
	BusyNs           uint64 `json:"busy_ns"`             // modelled busy time, sum of request latencies
	PageSize         uint64 `json:"page_size"`           // to turn pages into bytes
	FlashBytesWrite  uint64 `json:"flash_bytes_written"` // PagesProgrammed × PageSize
	// WriteAmplification is flash bytes programmed ÷ host bytes written (0 when nothing was
	// written). Pages still in the card's volatile cache (profiles with cache_size) are not
	// counted until programmed.
	WriteAmplification float64 `json:"write_amplification"`
	// Wear is the erase-count histogram over all physical erase blocks (snapshot, not a delta).
	Wear        []WearBucket `json:"wear"`
	MaxErases   uint32       `json:"max_erases"`
	Endurance   uint64       `json:"endurance"`
	WornOut     uint64       `json:"worn_out_blocks"` // blocks at or past Endurance erases
	EraseBlocks uint64       `json:"erase_blocks"`    // physical erase blocks modelled
	// EndOfLife is the card's wear-out: bad blocks, spares, health (wearout.go).
	EndOfLife *WearOut `json:"end_of_life,omitempty"`
}

// Sub returns c minus an earlier snapshot for the cumulative fields; the wear fields are c's.
func (c Counters) Sub(old Counters) Counters {
	d := c
	d.Reads -= old.Reads
	d.Writes -= old.Writes
	d.Discards -= old.Discards
	d.Flushes -= old.Flushes
	d.HostBytesRead -= old.HostBytesRead
	d.HostBytesWritten -= old.HostBytesWritten
	d.HostBytesDiscard -= old.HostBytesDiscard
	d.PagesRead -= old.PagesRead
	d.PagesProgrammed -= old.PagesProgrammed
	d.PagesCopied -= old.PagesCopied
	d.BlocksErased -= old.BlocksErased
	d.AUMerges -= old.AUMerges
	d.GCCollections -= old.GCCollections
	d.BusyNs -= old.BusyNs
	d.FlashBytesWrite = d.PagesProgrammed * d.PageSize
	d.WriteAmplification = wa(d.FlashBytesWrite, d.HostBytesWritten)
	return d
}

func wa(flash, host uint64) float64 {
	if host == 0 {
		return 0
	}
	return float64(flash) / float64(host)
}

// Model is a deterministic model of one card: the same profile, size and request sequence
// always give the same latencies and counters. It is not safe for concurrent use.
//
// Memory: per page of the card one bit (which logical pages hold data); per page of the
// page-mapped pool two uint32 (forward and reverse map); per AU a mapping entry; per erase
// block an erase counter. A 2 GiB sd-typical card needs about 70 KiB; a 2 GiB page-mapped
// card with 16 KiB pages about 1.1 MiB.
type Model struct {
	p        Profile
	size     uint64
	ps       uint64 // page size
	nPages   uint64
	ppau     uint64 // pages per AU
	ebPerAU  int
	c        Counters
	erases   []uint32 // per physical erase block: page pool first, then the AU pool
	valid    bitset   // per logical page: holds data (written, not discarded)
	pool     *pagePool
	pmPages  uint64 // logical pages [0, pmPages) are page-mapped
	auBase   int    // first erase block of the AU pool in erases
	auMap    []int32
	auFree   []int32 // FIFO of free physical AUs: rotating them spreads wear
	auDirty  []bool  // physical AU needs an erase before it is programmed
	open     []*openAU
	clock    uint64
	cache    []uint64 // dirty logical pages in the volatile cache, oldest first
	cacheSet map[uint64]bool
	lat      time.Duration // latency being accumulated for the current request
	merges   []Span        // AUs the current request made the card merge (copy)
	// The random-write log (Profile.RWLogSize; nil: none): a page-mapped pool over the AU
	// region's pages (index: page − pmPages) holding the newest copy of the pages it maps.
	log    *pagePool
	logAU  []uint32  // pages each AU has in the log
	logMax int       // log pages kept before the card merges an AU out of the log
	slc    *slcState // the SLC cache (Profile.SLC; nil: none), slc.go

	wear *wearState // each block's endurance, the spares, the card's health (wearout.go)
}

// Span is a byte range of the card.
type Span struct{ Off, Len uint64 }

// LastMerges returns the allocation units (byte ranges of the card) that the last request
// made the card merge, copying their still-valid pages: a power cut during that request
// catches the merge in progress (the powercut suite's merge-loss rule).
func (m *Model) LastMerges() []Span { return append([]Span(nil), m.merges...) }

type openAU struct {
	au      uint64 // logical AU index
	phys    int32  // the fresh physical AU being written
	old     int32  // the physical AU holding the data before (-1: none)
	wp      uint64 // sequential order: bytes written from the AU start (pages below ⌈wp/P⌉ are programmed)
	written bitset // any order: pages programmed in phys
	// tail is 1 + the page where the last write into the AU ended partway (0: none), in any
	// order: the next write of a stream whose requests are not page-aligned starts there.
	tail uint64
	used uint64 // LRU stamp
	// merged: pages were copied from the old copy while the AU was open (a write skipped
	// over them), so closing it completes a merge of the two copies.
	merged bool
}

// NewModel returns a fresh (all-erased, empty) card of size bytes.
func NewModel(p Profile, size uint64) (*Model, error) {
	if _, err := p.validate(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	au := uint64(p.AUSize)
	if size == 0 || size%au != 0 {
		return nil, fmt.Errorf("card size %d is not a multiple of the profile's AU size %s: round it", size, bytesize.Format(au))
	}
	m := &Model{p: p, size: size, ps: uint64(p.PageSize), ppau: au / uint64(p.PageSize), ebPerAU: int(au / uint64(p.EraseBlock))}
	m.nPages = size / m.ps
	m.valid = newBitset(m.nPages)
	m.c.PageSize = m.ps
	m.c.Endurance = p.Endurance
	ppb := uint64(p.EraseBlock) / m.ps
	switch p.FTL {
	case FTLPage:
		m.pmPages = m.nPages
	default:
		m.pmPages = uint64(p.PageMappedArea) / m.ps
		if m.pmPages >= m.nPages {
			return nil, fmt.Errorf("card size %s is not larger than the page-mapped area %s", bytesize.Format(size), bytesize.Format(uint64(p.PageMappedArea)))
		}
	}
	if m.pmPages > 0 {
		if m.pmPages >= 1<<32-1 {
			return nil, errors.New("card too large for the page-mapped model (2^32 pages)")
		}
		m.pool = newPagePool(m, m.pmPages, ppb, p.Overprovision)
	}
	m.auBase = len(m.erases)
	nAU := (m.nPages - m.pmPages) / m.ppau
	if nAU > 0 {
		// Every open AU holds its old and its new physical AU, hence nAU + OpenAUs; merging
		// an AU out of the random-write log takes one more while every AU is open.
		phys := int(nAU) + p.OpenAUs
		if p.RWLogSize > 0 {
			phys++
		}
		m.erases = append(m.erases, make([]uint32, phys*m.ebPerAU)...)
		m.auMap = make([]int32, nAU)
		for i := range m.auMap {
			m.auMap[i] = -1
		}
		m.auDirty = make([]bool, phys)
		for i := 0; i < phys; i++ {
			m.auFree = append(m.auFree, int32(i))
		}
	}
	if p.RWLogSize > 0 && nAU > 0 {
		if nAU*m.ppau >= 1<<32-1 {
			return nil, errors.New("card too large for the random-write log model (2^32 pages)")
		}
		blocks := int(uint64(p.RWLogSize) / uint64(p.EraseBlock))
		m.log = newLogPool(m, nAU*m.ppau, ppb, blocks)
		m.logAU = make([]uint32, nAU)
		m.logMax = (blocks - logSlack(blocks)) * int(ppb)
	}
	if p.CacheSize > 0 {
		m.cacheSet = map[uint64]bool{}
	}
	if p.SLC != nil {
		m.slc = newSLC(p.SLC, m.nPages, m.ps)
	}
	m.initWear()
	return m, nil
}

// Profile returns the model's profile.
func (m *Model) Profile() Profile { return m.p }

// Size returns the card size in bytes.
func (m *Model) Size() uint64 { return m.size }

// Do applies one request and returns its modelled latency.
func (m *Model) Do(r Request) (time.Duration, error) {
	if r.Op != OpFlush {
		if r.Off > m.size || r.Len > m.size-r.Off {
			return 0, fmt.Errorf("%s at %d+%d is beyond the card's %d bytes", r.Op, r.Off, r.Len, m.size)
		}
		if r.Len == 0 {
			return 0, nil // nothing reaches the card
		}
	}
	if err := m.gate(r); err != nil {
		return 0, err
	}
	m.lat = time.Duration(m.p.CommandTime)
	m.merges = m.merges[:0]
	switch r.Op {
	case OpRead:
		m.c.Reads++
		m.c.HostBytesRead += r.Len
		m.read(r.Off, r.Len)
	case OpWrite:
		m.c.Writes++
		m.c.HostBytesWritten += r.Len
		m.write(r.Off, r.Len, r.FUA)
	case OpDiscard:
		m.c.Discards++
		m.c.HostBytesDiscard += r.Len
		m.lat += time.Duration(m.p.DiscardTime)
		m.discard(r.Off, r.Len)
	case OpFlush:
		m.c.Flushes++
		m.flushCache()
	default:
		return 0, fmt.Errorf("unknown request type %v", r.Op)
	}
	m.c.BusyNs += uint64(m.lat)
	return m.lat, m.trippedErr()
}

// read charges read_page_time per page touched and, between consecutive pages, the penalty
// of the largest boundary crossed: flashbench -a finds these boundaries by exactly this
// difference in read time.
func (m *Model) read(off, n uint64) {
	first, last := off/m.ps, (off+n-1)/m.ps
	pages := last - first + 1
	m.c.PagesRead += pages
	m.lat += time.Duration(pages) * time.Duration(m.p.ReadPageTime)
	a, b := first*m.ps, last*m.ps
	cross := func(unit uint64) uint64 { return b/unit - a/unit }
	nAU := cross(uint64(m.p.AUSize))
	nPG := cross(uint64(m.p.PlaneGroup))
	m.lat += time.Duration(nAU) * time.Duration(m.p.CrossAUTime)
	m.lat += time.Duration(nPG-nAU) * time.Duration(m.p.CrossPlaneTime)
	m.lat += time.Duration(pages-1-nPG) * time.Duration(m.p.CrossPageTime)
}

func (m *Model) write(off, n uint64, fua bool) {
	if m.cacheSet != nil && !fua {
		m.cacheWrite(off, n)
		return
	}
	if fua && m.cacheSet != nil {
		// A forced-unit-access write supersedes whatever the cache holds for these pages.
		m.cacheDrop(off, n, false)
	}
	m.program(off, n)
}

// program writes bytes [off, off+n) to flash, split by area and AU.
func (m *Model) program(off, n uint64) {
	end := off + n
	pmEnd := m.pmPages * m.ps
	for off < end {
		if off < pmEnd {
			e := min(end, pmEnd)
			for p := off / m.ps; p <= (e-1)/m.ps; p++ {
				partial := off > p*m.ps || e < (p+1)*m.ps
				if partial && m.valid.get(p) {
					// Read-modify-write: the rest of the page comes from its old copy.
					m.c.PagesRead++
					m.lat += time.Duration(m.p.ReadPageTime)
				}
				m.pool.write(uint32(p), false)
				m.valid.set(p)
			}
			off = e
			continue
		}
		au := off / (m.ppau * m.ps)
		auEnd := (au + 1) * m.ppau * m.ps
		e := min(end, auEnd)
		m.auWrite(au-m.pmPages/m.ppau, off-au*m.ppau*m.ps, e-au*m.ppau*m.ps)
		off = e
	}
}

func (m *Model) progPages(n uint64, copied bool) {
	m.c.PagesProgrammed += n
	if copied {
		m.c.PagesCopied += n
		m.lat += time.Duration(n) * time.Duration(m.p.CopyPageTime)
		return
	}
	m.lat += m.hostProgramTime(n)
}

func (m *Model) eraseBlock(i int) {
	m.erases[i]++
	m.wore(i)
	m.c.BlocksErased++
	m.lat += time.Duration(m.p.EraseTime)
}

// auPage is the logical page number of page p of AU-region AU au.
func (m *Model) auPage(au, p uint64) uint64 { return m.pmPages + au*m.ppau + p }

// auWrite writes bytes [s, e) of AU-region AU au (offsets inside the AU), as one write
// command.
//
// Every page the command touches is programmed before the command completes, partial pages
// included: these profiles have no write cache (cache_size = 0, or the cache path programs
// whole pages only), and an SD card without the cache feature holds busy until its data is in
// flash, so nothing of a command waits in the card for the next one. A partial page that
// still holds data (written before, in this AU or in the AU it replaces) is read first and
// merged: the read-modify-write that makes writes smaller than a page, or not aligned to
// one, cost as much as whole pages ([Linaro flash card survey]: "the time it takes to write
// 512 byte will be the same as writing the full page"). This is what a misaligned partition
// pays: each request of a sequential stream starts and ends inside a page.
func (m *Model) auWrite(au, s, e uint64) {
	if m.log != nil && e-s <= uint64(m.p.RWLogMaxWrite) && m.logTakes(au, s, e) {
		m.logWrite(au, s, e)
		return
	}
	o := m.openFor(au)
	ps := m.ps
	first, last := s/ps, (e-1)/ps
	if m.p.WriteOrder == OrderSequential {
		if first < o.wp/ps {
			// Backwards into a page already programmed and completed: the card cannot
			// rewrite it in place, so it merges the AU (copies the rest) and starts a fresh
			// one.
			m.closeAU(o)
			o = m.openFor(au)
		}
		// Pages [0, done) of the AU are programmed. A command that starts inside the last,
		// partly written page (the previous command's tail: a sequential stream whose
		// requests are not page-aligned) programs that page again, merged with its earlier
		// part; the card writes it to a spare page of the AU, which the model does not
		// track, rather than merging the whole AU.
		done := (o.wp + ps - 1) / ps
		if first > done {
			// A skip: pages of an open AU are written strictly in order, so the valid pages
			// skipped over are copied from the AU's old copy (or from the log).
			var copies uint64
			for p := done; p < first; p++ {
				if m.valid.get(m.auPage(au, p)) {
					copies++
					m.logDrop(au, p)
				}
			}
			m.progPages(copies, true)
			o.merged = o.merged || copies > 0
		}
		m.readPartial(au, s, e)
		m.progPages(last-first+1, false)
		o.wp = max(o.wp, e)
	} else {
		for p := first; p <= last; p++ {
			// A page written before must go to a fresh page: the AU is merged and reopened.
			// The exception is the partly written page the last write ended in, which a
			// stream of unaligned requests writes again (as in order, see above).
			if o.written.get(p) && (p != first || o.tail != first+1) {
				m.closeAU(o)
				o = m.openFor(au)
			}
			o.written.set(p)
		}
		o.tail = 0
		if e%ps != 0 {
			o.tail = last + 1
		}
		m.readPartial(au, s, e)
		m.progPages(last-first+1, false)
	}
	for p := first; p <= last; p++ {
		m.valid.set(m.auPage(au, p))
		m.logDrop(au, p) // the log's copy, if any, is older now
	}
}

// logTakes says whether a small write of bytes [s, e) of AU au goes to the random-write log:
// when it does not continue an open AU (it would go backwards, skip over valid pages, or,
// in any order, rewrite a page the open AU already holds) or, for an AU that is not open,
// when opening it would later cost a merge (it holds valid pages the write does not cover)
// and the write does not start at the AU's first page. A write at an AU's first page is
// taken for a stream entering the AU (a journal or a file crossing an AU boundary) and
// opens it, as a write that fills empty flash does: the card sees no reason to log either.
func (m *Model) logTakes(au, s, e uint64) bool {
	ps := m.ps
	first, last := s/ps, (e-1)/ps
	for _, o := range m.open {
		if o.au != au {
			continue
		}
		if m.p.WriteOrder == OrderSequential {
			if first < o.wp/ps {
				return true
			}
			for p := (o.wp + ps - 1) / ps; p < first; p++ {
				if m.valid.get(m.auPage(au, p)) {
					return true
				}
			}
			return false
		}
		for p := first; p <= last; p++ {
			if o.written.get(p) && (p != first || o.tail != first+1) {
				return true
			}
		}
		return false
	}
	if first == 0 {
		return false
	}
	for p := uint64(0); p < m.ppau; p++ {
		if (p < first || p > last) && m.valid.get(m.auPage(au, p)) {
			return true
		}
	}
	return false
}

// logWrite programs bytes [s, e) of AU au into the random-write log: one log page per page
// touched, partial pages read first as everywhere (read-modify-write). When the log holds
// logMax pages, the card first merges the AU with the most pages in it out of the log
// (evictLog): the cost of the log is one AU merge per that many random writes into an AU,
// instead of one per write.
func (m *Model) logWrite(au, s, e uint64) {
	m.readPartial(au, s, e)
	for p := s / m.ps; p <= (e-1)/m.ps; p++ {
		lp := uint32(au*m.ppau + p)
		if !m.log.mapped(lp) {
			for m.log.n >= m.logMax {
				m.evictLog()
			}
			m.logAU[au]++
		}
		m.log.write(lp, false)
		m.valid.set(m.auPage(au, p))
	}
}

// logDrop forgets the log's copy of page p of AU au (it was superseded or merged).
func (m *Model) logDrop(au, p uint64) {
	if m.log == nil {
		return
	}
	if lp := uint32(au*m.ppau + p); m.log.mapped(lp) {
		m.log.unmap(lp)
		m.logAU[au]--
	}
}

// evictLog merges the AU with the most pages in the log (the lowest on ties, for
// determinism) out of it: the merge that frees the most log space.
func (m *Model) evictLog() {
	victim := 0
	for a, n := range m.logAU {
		if n > m.logAU[victim] {
			victim = a
		}
	}
	au := uint64(victim)
	for _, o := range m.open {
		if o.au == au {
			m.closeAU(o) // takes the log pages the open AU did not rewrite
			break
		}
	}
	if m.logAU[victim] > 0 {
		m.mergeAU(au)
	}
}

// mergeAU writes AU au (not open) to a fresh physical AU with all its valid pages, from its
// old physical AU and from the log: a merge, costing au_close_time plus a copy per page.
func (m *Model) mergeAU(au uint64) {
	phys := m.auFree[0]
	m.auFree = m.auFree[1:]
	if m.auDirty[phys] {
		for i := 0; i < m.ebPerAU; i++ {
			m.eraseBlock(m.auBase + int(phys)*m.ebPerAU + i)
		}
	}
	var copies uint64
	for p := uint64(0); p < m.ppau; p++ {
		if m.valid.get(m.auPage(au, p)) {
			copies++
			m.logDrop(au, p)
		}
	}
	m.c.AUMerges++
	m.merges = append(m.merges, Span{Off: m.auPage(au, 0) * m.ps, Len: m.ppau * m.ps})
	m.lat += time.Duration(m.p.AUCloseTime)
	m.progPages(copies, true)
	if m.auMap[au] >= 0 {
		m.freeAU(m.auMap[au])
	}
	m.auMap[au] = phys
	m.auDirty[phys] = true
}

// readPartial charges the read half of a read-modify-write for the first and last page of
// bytes [s, e) of AU au when the command covers them only in part and they hold data.
func (m *Model) readPartial(au, s, e uint64) {
	ps := m.ps
	first, last := s/ps, (e-1)/ps
	ends := []uint64{first}
	if last != first {
		ends = append(ends, last)
	}
	for _, p := range ends {
		if (s > p*ps || e < (p+1)*ps) && m.valid.get(m.auPage(au, p)) {
			m.c.PagesRead++
			m.lat += time.Duration(m.p.ReadPageTime)
		}
	}
}

// openFor returns the open AU for au, opening it (and closing the least recently used one
// when all OpenAUs are in use).
func (m *Model) openFor(au uint64) *openAU {
	m.clock++
	for _, o := range m.open {
		if o.au == au {
			o.used = m.clock
			return o
		}
	}
	if len(m.open) >= m.p.OpenAUs {
		lru := m.open[0]
		for _, o := range m.open[1:] {
			if o.used < lru.used {
				lru = o
			}
		}
		m.closeAU(lru)
	}
	phys := m.auFree[0]
	m.auFree = m.auFree[1:]
	if m.auDirty[phys] {
		for i := 0; i < m.ebPerAU; i++ {
			m.eraseBlock(m.auBase + int(phys)*m.ebPerAU + i)
		}
		m.auDirty[phys] = false
	}
	o := &openAU{au: au, phys: phys, old: m.auMap[au], used: m.clock}
	if m.p.WriteOrder == OrderAny {
		o.written = newBitset(m.ppau)
	}
	m.open = append(m.open, o)
	return o
}

// closeAU makes the open AU's new physical AU the mapped one: it copies the valid pages not
// yet written to it, then frees the old physical AU.
//
// Closing is a merge, costing au_close_time plus the copies, whenever it combines the AU
// with its old copy: when valid pages are left to copy, or when the AU already copied pages
// from its old copy while open ("closing an AU costs ~60 ms + ~45 ms per MiB still to copy",
// design notes, from flashbench -O on written cards; on a card with a single open AU
// "alternating between two areas forces a garbage collection on every write" [LWN]: each
// return to an AU copies its earlier pages, and each departure closes it). A fully and
// sequentially written AU closes for free (Bergmann: the ideal case), and so does one that
// had nothing to take from an old copy: written for the first time, or after a discard.
//
// (Before, the fixed cost depended on whether the model had let the card keep a partial page
// between commands: 4 KiB random writes to a 16 KiB-page card paid it on every close, 16 KiB
// ones never, and a 4 KiB-page card alternating between two written AUs never did.)
func (m *Model) closeAU(o *openAU) {
	var copies uint64
	complete := true
	// A page the open AU did not write is copied from the old AU or from the log (whose copy
	// is then merged); one it did write stays in the log when the log holds a newer copy.
	if m.p.WriteOrder == OrderSequential {
		for p := (o.wp + m.ps - 1) / m.ps; p < m.ppau; p++ {
			complete = false
			if m.valid.get(m.auPage(o.au, p)) {
				copies++
				m.logDrop(o.au, p)
			}
		}
	} else {
		for p := uint64(0); p < m.ppau; p++ {
			if !o.written.get(p) {
				complete = false
				if m.valid.get(m.auPage(o.au, p)) {
					copies++
					m.logDrop(o.au, p)
				}
			}
		}
	}
	if copies > 0 || (o.merged && !complete) {
		m.c.AUMerges++
		if copies > 0 {
			m.merges = append(m.merges, Span{Off: m.auPage(o.au, 0) * m.ps, Len: m.ppau * m.ps})
		}
		m.lat += time.Duration(m.p.AUCloseTime)
		m.progPages(copies, true)
	}
	if o.old >= 0 {
		m.freeAU(o.old)
	}
	m.auMap[o.au] = o.phys
	m.auDirty[o.phys] = true
	for i, x := range m.open {
		if x == o {
			m.open = append(m.open[:i], m.open[i+1:]...)
			break
		}
	}
}

func (m *Model) freeAU(phys int32) {
	m.auDirty[phys] = true
	m.auFree = append(m.auFree, phys)
}

// discard forgets the data of whole pages in [off, off+n); partial pages keep theirs.
func (m *Model) discard(off, n uint64) {
	if m.cacheSet != nil {
		m.cacheDrop(off, n, true)
	}
	first, end := (off+m.ps-1)/m.ps, (off+n)/m.ps
	for p := first; p < end; p++ {
		if !m.valid.get(p) {
			continue
		}
		m.valid.clear(p)
		if p < m.pmPages {
			m.pool.unmap(uint32(p))
		} else {
			m.logDrop((p-m.pmPages)/m.ppau, (p-m.pmPages)%m.ppau)
		}
	}
	m.slcDiscarded()
	// A whole AU discarded and not open: its physical AU goes back to the free pool.
	if end <= m.pmPages {
		return
	}
	for a := (max(first, m.pmPages) - m.pmPages + m.ppau - 1) / m.ppau; m.auPage(a, m.ppau) <= end; a++ {
		if m.auMap[a] < 0 || m.isOpen(a) {
			continue
		}
		m.freeAU(m.auMap[a])
		m.auMap[a] = -1
	}
}

func (m *Model) isOpen(au uint64) bool {
	for _, o := range m.open {
		if o.au == au {
			return true
		}
	}
	return false
}

// cacheWrite puts the pages into the volatile cache (merging rewrites of cached pages) and
// programs the oldest ones when it overflows.
func (m *Model) cacheWrite(off, n uint64) {
	for p := off / m.ps; p <= (off+n-1)/m.ps; p++ {
		m.lat += time.Duration(m.p.CachePageTime)
		if m.cacheSet[p] {
			continue
		}
		m.cacheSet[p] = true
		m.cache = append(m.cache, p)
	}
	limit := int(uint64(m.p.CacheSize) / m.ps)
	for len(m.cache) > limit {
		p := m.cache[0]
		m.cache = m.cache[1:]
		delete(m.cacheSet, p)
		m.program(p*m.ps, m.ps)
	}
}

// cacheDrop removes pages from the cache: with whole, only pages [off, off+n) covers fully.
func (m *Model) cacheDrop(off, n uint64, whole bool) {
	first, last := off/m.ps, (off+n-1)/m.ps
	if whole {
		first, last = (off+m.ps-1)/m.ps, (off+n)/m.ps-1
		if (off+n)/m.ps == 0 {
			return
		}
	}
	kept := m.cache[:0]
	for _, p := range m.cache {
		if p >= first && p <= last {
			delete(m.cacheSet, p)
			continue
		}
		kept = append(kept, p)
	}
	m.cache = kept
}

func (m *Model) flushCache() {
	if m.cacheSet == nil {
		return
	}
	for _, p := range m.cache {
		m.program(p*m.ps, m.ps)
	}
	m.cache = m.cache[:0]
	clear(m.cacheSet)
}

// Counters returns a snapshot of the counters, with the wear histogram.
func (m *Model) Counters() Counters {
	c := m.c
	c.FlashBytesWrite = c.PagesProgrammed * c.PageSize
	c.WriteAmplification = wa(c.FlashBytesWrite, c.HostBytesWritten)
	hist := map[uint32]uint64{}
	for _, e := range m.erases {
		hist[e]++
		c.MaxErases = max(c.MaxErases, e)
		if uint64(e) >= c.Endurance {
			c.WornOut++
		}
	}
	for e, n := range hist {
		c.Wear = append(c.Wear, WearBucket{Erases: e, Blocks: n})
	}
	sort.Slice(c.Wear, func(i, j int) bool { return c.Wear[i].Erases < c.Wear[j].Erases })
	c.EraseBlocks = uint64(len(m.erases))
	wo := m.wear.c
	c.EndOfLife = &wo
	return c
}

// EraseCounts returns a copy of the per-erase-block erase counters (page-mapped pool first,
// then the AU pool, then the random-write log).
func (m *Model) EraseCounts() []uint32 { return append([]uint32(nil), m.erases...) }

// pagePool is a page-mapped FTL over a pool of erase blocks: writes append to the active
// block; when fewer than reserve blocks are free, greedy garbage collection copies the valid
// pages of the block with the fewest valid pages and frees it.
type pagePool struct {
	m        *Model
	ppb      uint32
	base     int      // first erase block in m.erases
	fwd      []uint32 // logical page -> physical page + 1 (0: unmapped)
	rev      []uint32 // physical page -> logical page + 1 (0: invalid)
	validCnt []uint32
	free     []int
	dirty    []bool
	active   int
	wp       uint32
	inGC     bool
	n        int // logical pages mapped
}

// reserveBlocks free blocks are kept: garbage collection itself needs a free block to copy
// into, so it starts while one is still left.
const reserveBlocks = 2

// newPagePool is the page-mapped pool: the blocks logical pages fill, and op of them again as
// spare (at least one more than garbage collection reserves).
func newPagePool(m *Model, logical, ppb uint64, op float64) *pagePool {
	data := (logical + ppb - 1) / ppb
	spare := uint64(float64(data)*op + 0.999999)
	spare = max(spare, reserveBlocks+1)
	return newPool(m, logical, ppb, int(data+spare))
}

// newLogPool is a pool of blocks erase blocks over a logical space larger than it: the
// random-write log, whose owner keeps the mapped pages below what the blocks hold.
func newLogPool(m *Model, logical, ppb uint64, blocks int) *pagePool {
	return newPool(m, logical, ppb, blocks)
}

// newPool is a pool of blocks erase blocks of ppb pages each, all free, mapping logical
// pages; its blocks' erase counts are m's, after those of the pools made before it.
func newPool(m *Model, logical, ppb uint64, blocks int) *pagePool {
	pp := &pagePool{m: m, ppb: uint32(ppb), base: len(m.erases), fwd: make([]uint32, logical),
		rev: make([]uint32, uint64(blocks)*ppb), validCnt: make([]uint32, blocks), dirty: make([]bool, blocks), active: -1}
	for i := 0; i < blocks; i++ {
		pp.free = append(pp.free, i)
	}
	m.erases = append(m.erases, make([]uint32, blocks)...)
	return pp
}

// minLogBlocks is the smallest random-write log: garbage collection keeps reserveBlocks free
// and needs a block with invalid pages to collect.
const minLogBlocks = reserveBlocks + 2

// logSlack is how many of a log's blocks stay unused by mapped pages: a quarter, and at
// least one more than garbage collection reserves, so that collecting the log copies at
// most about three quarters of a block to free one (the card merges AUs out of the log to
// keep it so).
func logSlack(blocks int) int { return max(reserveBlocks+1, blocks/4) }

func (pp *pagePool) mapped(lp uint32) bool { return pp.fwd[lp] != 0 }

func (pp *pagePool) unmap(lp uint32) {
	if ph := pp.fwd[lp]; ph != 0 {
		pp.rev[ph-1] = 0
		pp.validCnt[(ph-1)/pp.ppb]--
		pp.fwd[lp] = 0
		pp.n--
	}
}

func (pp *pagePool) write(lp uint32, copied bool) {
	if pp.active < 0 || pp.wp == pp.ppb {
		b := pp.free[0]
		pp.free = pp.free[1:]
		if pp.dirty[b] {
			pp.m.eraseBlock(pp.base + b)
			pp.dirty[b] = false
		}
		pp.active, pp.wp = b, 0
	}
	pp.unmap(lp)
	ph := uint32(pp.active)*pp.ppb + pp.wp
	pp.wp++
	pp.rev[ph] = lp + 1
	pp.fwd[lp] = ph + 1
	pp.n++
	pp.validCnt[pp.active]++
	pp.m.progPages(1, copied)
	if !pp.inGC {
		for len(pp.free) < reserveBlocks && pp.collect() {
		}
	}
}

// collect reclaims the block with the fewest valid pages; on ties the least worn (fewest
// erases; then the lowest index, for determinism): the dynamic wear levelling every FTL does
// (without it, blocks holding nothing valid were reclaimed lowest index first, the same few
// over and over, and the others never). false when no block would free anything.
func (pp *pagePool) collect() bool {
	isFree := make(map[int]bool, len(pp.free))
	for _, b := range pp.free {
		isFree[b] = true
	}
	victim := -1
	for b := range pp.validCnt {
		if b == pp.active || isFree[b] {
			continue
		}
		if victim < 0 || pp.validCnt[b] < pp.validCnt[victim] ||
			(pp.validCnt[b] == pp.validCnt[victim] && pp.m.erases[pp.base+b] < pp.m.erases[pp.base+victim]) {
			victim = b
		}
	}
	if victim < 0 || pp.validCnt[victim] >= pp.ppb {
		return false
	}
	pp.inGC = true
	pp.m.c.GCCollections++
	for i := uint32(0); i < pp.ppb; i++ {
		ph := uint32(victim)*pp.ppb + i
		if lp := pp.rev[ph]; lp != 0 {
			pp.write(lp-1, true)
		}
	}
	pp.inGC = false
	pp.dirty[victim] = true
	pp.free = append(pp.free, victim)
	return true
}

// bitset is a fixed-size set of small integers.
type bitset []uint64

func newBitset(n uint64) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) get(i uint64) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) set(i uint64)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) clear(i uint64)    { b[i/64] &^= 1 << (i % 64) }
