package flash

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// End-of-life behaviours (EndOfLife.Behaviour): what a card does once a block wears out and
// no spare block is left to take its place.
const (
	// EOLReadOnly: the card refuses every write and discard from then on and keeps serving
	// reads (SD cards that write-protect themselves at the end of their life).
	EOLReadOnly = "read-only"
	// EOLDead: the card refuses every request, reads included (a card that disables itself).
	EOLDead = "dead"
	// EOLWrongData: the card keeps the worn block in service; what it programs there reads
	// back wrong, without an error (a card that returns corrupted data).
	EOLWrongData = "wrong-data"
)

// EOLBehaviours lists the behaviours, in the order the documentation gives them.
var EOLBehaviours = []string{EOLReadOnly, EOLDead, EOLWrongData}

// Errors a worn-out card answers with (Model.Do). A served card turns each into EIO, which is
// what a filesystem sees from a card whose command failed.
var (
	// ErrReadOnly: a write or discard to a card that turned read-only.
	ErrReadOnly = errors.New("the card is worn out and read-only")
	// ErrDead: any request to a card that disabled itself.
	ErrDead = errors.New("the card is worn out and no longer responds")
)

// EndOfLife is how a card wears out (a profile's [end_of_life] table): each erase block lasts
// its own number of erases, drawn around the profile's endurance; a block that reaches it fails
// its erase and the card retires it, replacing it by one of its spare blocks; once the spares
// are gone, the next block that wears out ends the card's life in the way Behaviour names.
type EndOfLife struct {
	// Spread is the standard deviation of a block's endurance, as a share of the profile's
	// endurance (the mean): blocks of one chip do not all last the same number of cycles.
	Spread float64 `toml:"endurance_spread" json:"endurance_spread"`
	// Spare is how many spare erase blocks the card keeps to replace blocks that wear out, as
	// a share of the erase blocks its FTL uses (at least one).
	Spare float64 `toml:"spare_blocks" json:"spare_blocks"`
	// Behaviour is what the card does once the spares are gone: EOLReadOnly, EOLDead or
	// EOLWrongData.
	Behaviour string `toml:"behaviour" json:"behaviour"`
}

// DefaultEndOfLife is the end of life of a profile without an [end_of_life] table.
var DefaultEndOfLife = EndOfLife{Spread: 0.1, Spare: 0.02, Behaviour: EOLReadOnly}

// validate checks an end-of-life table, filling in a missing behaviour; it returns the
// offending key.
func (e *EndOfLife) validate() (string, error) {
	if e.Spread < 0 || e.Spread > 0.5 {
		return "endurance_spread", fmt.Errorf("must be between 0 and 0.5 (a share of the endurance), not %g", e.Spread)
	}
	if e.Spare < 0 || e.Spare > 0.5 {
		return "spare_blocks", fmt.Errorf("must be between 0 and 0.5 (a share of the erase blocks), not %g", e.Spare)
	}
	switch e.Behaviour {
	case "":
		e.Behaviour = EOLReadOnly
	case EOLReadOnly, EOLDead, EOLWrongData:
	default:
		return "behaviour", fmt.Errorf("must be %q, %q or %q, not %q", EOLReadOnly, EOLDead, EOLWrongData, e.Behaviour)
	}
	return "", nil
}

// Health is a card's state as its wear left it.
type Health string

// Healths.
const (
	Healthy   Health = ""           // every block in service is within its endurance
	WornWrong Health = "wrong-data" // worn blocks are in service: what they hold reads back wrong
	ReadOnly  Health = "read-only"  // writes and discards fail
	Dead      Health = "dead"       // every request fails
)

// WearOut are the counters of a card's end of life (Counters.EndOfLife): snapshots, not
// deltas.
type WearOut struct {
	// Scale multiplies every block's endurance (WithEndurance): 1 for a card as its profile
	// says, 0.01 for one that wears out a hundred times sooner.
	Scale float64 `json:"scale"`
	// Seed drew the blocks' endurances.
	Seed uint64 `json:"seed"`
	// SpareBlocks is how many spares the card had, SpareLeft how many it still has.
	SpareBlocks uint64 `json:"spare_blocks"`
	SpareLeft   uint64 `json:"spare_left"`
	// BadBlocks are the blocks that wore out: retired (replaced by a spare), or kept in
	// service worn (a wrong-data card without spares, WornInService).
	BadBlocks     uint64 `json:"bad_blocks"`
	WornInService uint64 `json:"worn_in_service,omitempty"`
	Health        Health `json:"health,omitempty"`
	// Failed counts the requests the card refused because of its wear.
	Failed uint64 `json:"failed_requests,omitempty"`
	// CorruptReads counts the reads that returned data from worn blocks, CorruptBytes their
	// bytes that read back wrong.
	CorruptReads uint64 `json:"corrupt_reads,omitempty"`
	CorruptBytes uint64 `json:"corrupt_bytes,omitempty"`
	// FirstErrorWrites is the number of the card's write requests (Counters.Writes) when it
	// first failed a request or first kept a worn block in service: the host's first error.
	// 0: not yet.
	FirstErrorWrites uint64 `json:"first_error_writes,omitempty"`
	// FirstErrorHostBytes is Counters.HostBytesWritten then.
	FirstErrorHostBytes uint64 `json:"first_error_host_bytes,omitempty"`
}

// wearState is a card's wear-out: each erase block slot of the model (an index of
// Model.erases) holds one physical block, with its own endurance; a slot whose block wears out
// gets a spare block (its erase counter starts again), until none is left.
type wearState struct {
	eol    EndOfLife
	scale  float64
	seed   uint64
	endur  []uint32 // per slot: the endurance of the block in it now
	spares []uint32 // the endurance of each spare not yet used, in the order they are used
	nSpare uint64
	worn   bitset // per slot: a worn block kept in service (EOLWrongData)
	c      WearOut
	// tripped is set while a request is the one that ended the card's life (it fails).
	tripped bool
}

// wearSalt makes the endurance stream a stream of its own.
const wearSalt = 0x656e647572616e63

// newWear draws the endurance of each of slots blocks and of the spares for a card of
// profile p: the mean is p's endurance times scale, the spread p's.
func newWear(p Profile, slots int, seed uint64, scale float64) *wearState {
	e := p.EndOfLife
	w := &wearState{eol: e, scale: scale, seed: seed, worn: newBitset(uint64(slots))}
	w.nSpare = uint64(math.Ceil(e.Spare * float64(slots)))
	if e.Spare > 0 {
		w.nSpare = max(w.nSpare, 1)
	}
	mean := float64(p.Endurance) * scale
	rng := rand.New(rand.NewPCG(seed, wearSalt))
	draw := func() uint32 {
		v := mean * (1 + e.Spread*rng.NormFloat64())
		// A block lasts at least one erase; none lasts more than twice the mean (the normal
		// tail is not a physical block).
		return uint32(max(1, math.Round(min(v, 2*mean))))
	}
	w.endur = make([]uint32, slots)
	for i := range w.endur {
		w.endur[i] = draw()
	}
	w.spares = make([]uint32, w.nSpare)
	for i := range w.spares {
		w.spares[i] = draw()
	}
	w.c = WearOut{Scale: scale, Seed: seed, SpareBlocks: w.nSpare, SpareLeft: w.nSpare}
	return w
}

// WithEndurance returns a fresh card like m (same profile and size, nothing written) whose
// blocks' endurances are drawn with seed around the profile's endurance times scale: a card
// that wears out scale times as fast (0.01: after a hundredth of the erases), with the same
// spread and spares. The seed makes each card of a batch a card of its own.
func (m *Model) WithEndurance(seed uint64, scale float64) (*Model, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("endurance scale %g: must be a positive number (1: as the profile says, 0.01: a hundred times sooner)", scale)
	}
	if float64(m.p.Endurance)*scale < 1 {
		return nil, fmt.Errorf("endurance scale %g leaves %s's blocks %.2g erases: give a scale of at least %g", scale, m.p.Name, float64(m.p.Endurance)*scale, 1/float64(m.p.Endurance))
	}
	n, err := NewModel(m.p, m.size)
	if err != nil {
		return nil, err
	}
	n.wear = newWear(m.p, len(n.erases), seed, scale)
	n.c.Endurance = uint64(max(1, math.Round(float64(m.p.Endurance)*scale)))
	return n, nil
}

// initWear gives a new model its wear-out: seed 0, endurance as the profile says.
func (m *Model) initWear() { m.wear = newWear(m.p, len(m.erases), 0, 1) }

// wore is called after slot i's block was erased: a block that reached its endurance failed
// that erase. The card retires it and puts a spare in the slot (whose count starts at 0: the
// spare was never erased); without a spare, the card's life ends as its profile says.
func (m *Model) wore(i int) {
	w := m.wear
	if m.erases[i] < w.endur[i] || w.worn.get(uint64(i)) {
		return
	}
	w.c.BadBlocks++
	if len(w.spares) > 0 {
		w.endur[i], w.spares = w.spares[0], w.spares[1:]
		w.c.SpareLeft--
		m.erases[i] = 0
		return
	}
	w.firstError(m)
	switch w.eol.Behaviour {
	case EOLWrongData:
		w.worn.set(uint64(i))
		w.c.WornInService++
		if w.c.Health == Healthy {
			w.c.Health = WornWrong
		}
	case EOLDead:
		w.c.Health, w.tripped = Dead, true
	default:
		w.c.Health, w.tripped = ReadOnly, true
	}
}

// firstError notes the card's first error, once.
func (w *wearState) firstError(m *Model) {
	if w.c.FirstErrorWrites == 0 {
		w.c.FirstErrorWrites, w.c.FirstErrorHostBytes = max(m.c.Writes, 1), m.c.HostBytesWritten
	}
}

// gate refuses a request the card's health does not allow (before it touches the model).
func (m *Model) gate(r Request) error {
	w := m.wear
	switch {
	case w.c.Health == Dead:
		w.c.Failed++
		return ErrDead
	case w.c.Health == ReadOnly && (r.Op == OpWrite || r.Op == OpDiscard):
		w.c.Failed++
		return ErrReadOnly
	}
	return nil
}

// tripped returns the error of a request during which the card's life ended: the block it
// needed wore out with no spare left, so the request fails (a read-only card's write, a dead
// card's anything). The model's bookkeeping of the request stays: the card is past using it.
func (m *Model) trippedErr() error {
	w := m.wear
	if !w.tripped {
		return nil
	}
	w.tripped = false
	w.c.Failed++
	if w.c.Health == Dead {
		return ErrDead
	}
	return ErrReadOnly
}

// Health returns the card's state as its wear left it.
func (m *Model) Health() Health { return m.wear.c.Health }

// WearOut returns the card's end-of-life counters now.
func (m *Model) WearOut() WearOut { return m.wear.c }

// FirstErrorCycles is how many erases every block can take, under perfect wear levelling,
// before the card runs out of spares: the (spares+1)-th smallest endurance of the blocks in
// service. The blocks that wear out before it are replaced by spares, which start from no
// erases and outlast it.
func (m *Model) FirstErrorCycles() float64 {
	e := slices.Clone(m.wear.endur)
	slices.Sort(e)
	k := min(int(m.wear.nSpare), len(e)-1)
	return float64(e[k])
}

// Corrupt returns the byte ranges of [off, off+n) that a read now returns wrong: the pages
// stored in worn blocks kept in service (an EOLWrongData card past its spares). It counts the
// read as corrupt when any are. Pages still in the volatile cache read back right.
func (m *Model) Corrupt(off, n uint64) []Span {
	w := m.wear
	if w.c.WornInService == 0 || n == 0 {
		return nil
	}
	var out []Span
	for p := off / m.ps; p <= (off+n-1)/m.ps && p < m.nPages; p++ {
		if m.cacheSet != nil && m.cacheSet[p] {
			continue
		}
		slot, ok := m.slotOf(p)
		if !ok || !w.worn.get(uint64(slot)) {
			continue
		}
		s, e := max(off, p*m.ps), min(off+n, (p+1)*m.ps)
		if len(out) > 0 && out[len(out)-1].Off+out[len(out)-1].Len == s {
			out[len(out)-1].Len += e - s
		} else {
			out = append(out, Span{Off: s, Len: e - s})
		}
	}
	if len(out) > 0 {
		w.c.CorruptReads++
		for _, s := range out {
			w.c.CorruptBytes += s.Len
		}
	}
	return out
}

// slotOf returns the erase-block slot (index of m.erases) holding logical page p now; false
// when the page holds no data (never written, or discarded).
func (m *Model) slotOf(p uint64) (int, bool) {
	if !m.valid.get(p) {
		return 0, false
	}
	ppb := uint64(m.p.EraseBlock) / m.ps
	if p < m.pmPages {
		ph := m.pool.fwd[p]
		if ph == 0 {
			return 0, false
		}
		return m.pool.base + int(uint64(ph-1)/ppb), true
	}
	au, pg := (p-m.pmPages)/m.ppau, (p-m.pmPages)%m.ppau
	if m.log != nil {
		if ph := m.log.fwd[au*m.ppau+pg]; ph != 0 {
			return m.log.base + int(uint64(ph-1)/ppb), true
		}
	}
	phys := m.auMap[au]
	for _, o := range m.open {
		if o.au != au {
			continue
		}
		// In the open AU's fresh copy when it wrote (or, in order, copied) the page there.
		inNew := pg < (o.wp+m.ps-1)/m.ps
		if m.p.WriteOrder == OrderAny {
			inNew = o.written.get(pg)
		}
		if inNew {
			phys = o.phys
		} else {
			phys = o.old
		}
	}
	if phys < 0 {
		return 0, false
	}
	return m.auBase + int(phys)*m.ebPerAU + int(pg/ppb), true
}
