package flash

import (
	"bytes"
	"encoding/gob"
	"fmt"
)

// snapshot is a model's state in exported fields, for gob: everything NewModel does not derive
// from the profile and size again. TestSnapshotCoversModel fails when Model gains a field this
// does not carry (or list as derived).
type snapshot struct {
	Profile Profile
	Size    uint64
	C       Counters
	Erases  []uint32
	Valid   []uint64
	Pool    *poolSnap
	AUMap   []int32
	AUFree  []int32
	AUDirty []bool
	Open    []openSnap
	Clock   uint64
	Cache   []uint64
	Log     *poolSnap
	LogAU   []uint32
	SLC     *slcSnap
	Wear    wearSnap
}

// slcSnap is the SLC cache's state (its profile, size and fold unit NewModel derives).
type slcSnap struct{ Used, Folded uint64 }

type poolSnap struct {
	Fwd, Rev, ValidCnt []uint32
	Free               []int
	Dirty              []bool
	Active             int
	WP                 uint32
	N                  int
}

type openSnap struct {
	AU      uint64
	Phys    int32
	Old     int32
	WP      uint64
	Written []uint64
	Tail    uint64
	Used    uint64
	Merged  bool
}

type wearSnap struct {
	Scale   float64
	Seed    uint64
	Endur   []uint32
	Spares  []uint32
	NSpare  uint64
	Worn    []uint64
	C       WearOut
	Tripped bool
}

// MarshalBinary saves the card: everything it wrote, erased and remembers, so that
// UnmarshalBinary makes the same card again (a run killed goes on from a snapshot).
func (m *Model) MarshalBinary() ([]byte, error) {
	s := snapshot{Profile: m.p, Size: m.size, C: m.c, Erases: m.erases, Valid: m.valid, AUMap: m.auMap,
		AUFree: m.auFree, AUDirty: m.auDirty, Clock: m.clock, Cache: m.cache, LogAU: m.logAU,
		Pool: m.pool.snap(), Log: m.log.snap(),
		Wear: wearSnap{Scale: m.wear.scale, Seed: m.wear.seed, Endur: m.wear.endur, Spares: m.wear.spares,
			NSpare: m.wear.nSpare, Worn: m.wear.worn, C: m.wear.c, Tripped: m.wear.tripped}}
	if m.slc != nil {
		s.SLC = &slcSnap{Used: m.slc.used, Folded: m.slc.folded}
	}
	for _, o := range m.open {
		s.Open = append(s.Open, openSnap{AU: o.au, Phys: o.phys, Old: o.old, WP: o.wp, Written: o.written,
			Tail: o.tail, Used: o.used, Merged: o.merged})
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&s); err != nil {
		return nil, fmt.Errorf("saving the card model: %w", err)
	}
	return b.Bytes(), nil
}

// LoadModel makes the card a MarshalBinary saved.
func LoadModel(data []byte) (*Model, error) {
	var s snapshot
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&s); err != nil {
		return nil, fmt.Errorf("loading the card model: %w", err)
	}
	m, err := NewModel(s.Profile, s.Size)
	if err != nil {
		return nil, err
	}
	if len(s.Erases) != len(m.erases) || uint64(len(s.Valid)) != uint64(len(m.valid)) || len(s.AUMap) != len(m.auMap) {
		return nil, fmt.Errorf("loading the card model: it does not fit a %s card of %d bytes", s.Profile.Name, s.Size)
	}
	m.c, m.erases, m.valid, m.auMap, m.auFree, m.auDirty = s.C, s.Erases, s.Valid, s.AUMap, s.AUFree, s.AUDirty
	m.clock, m.logAU = s.Clock, s.LogAU
	m.pool.load(s.Pool)
	m.log.load(s.Log)
	if m.slc != nil && s.SLC != nil {
		m.slc.used, m.slc.folded = s.SLC.Used, s.SLC.Folded
	}
	for _, o := range s.Open {
		m.open = append(m.open, &openAU{au: o.AU, phys: o.Phys, old: o.Old, wp: o.WP, written: o.Written,
			tail: o.Tail, used: o.Used, merged: o.Merged})
	}
	for _, p := range s.Cache {
		m.cache = append(m.cache, p)
		m.cacheSet[p] = true
	}
	w := m.wear
	w.scale, w.seed, w.endur, w.spares, w.nSpare, w.worn, w.c, w.tripped = s.Wear.Scale, s.Wear.Seed, s.Wear.Endur,
		s.Wear.Spares, s.Wear.NSpare, s.Wear.Worn, s.Wear.C, s.Wear.Tripped
	if w.worn == nil {
		w.worn = newBitset(uint64(len(m.erases)))
	}
	return m, nil
}

func (pp *pagePool) snap() *poolSnap {
	if pp == nil {
		return nil
	}
	return &poolSnap{Fwd: pp.fwd, Rev: pp.rev, ValidCnt: pp.validCnt, Free: pp.free, Dirty: pp.dirty,
		Active: pp.active, WP: pp.wp, N: pp.n}
}

func (pp *pagePool) load(s *poolSnap) {
	if pp == nil || s == nil {
		return
	}
	pp.fwd, pp.rev, pp.validCnt, pp.free, pp.dirty = s.Fwd, s.Rev, s.ValidCnt, s.Free, s.Dirty
	pp.active, pp.wp, pp.n = s.Active, s.WP, s.N
}
