package capacity

import (
	"bytes"
	"encoding/binary"
)

// Every block the probe writes is stamped, sector by sector, so that reading it back says
// exactly what the card did with it: each 512-byte sector holds a header (magic, the run's
// nonce, the offset the block was written at, the sector's index) and 480 bytes of a
// pseudo-random stream seeded by those, so that a card cannot compress, deduplicate or
// guess it, and a torn block shows which sectors survived.
const (
	sectorSize  = 512
	stampMagic  = "FSBcap01"
	stampHeader = 28
)

// fillStamp writes the stamp of the block at offset off (len(b) a multiple of 512).
func fillStamp(b []byte, nonce, off uint64) {
	for s := 0; s < len(b)/sectorSize; s++ {
		fillSector(b[s*sectorSize:(s+1)*sectorSize], nonce, off, s)
	}
}

// fillSector writes sector s of the stamp of the block at off.
func fillSector(sec []byte, nonce, off uint64, s int) {
	copy(sec, stampMagic)
	binary.LittleEndian.PutUint64(sec[8:], nonce)
	binary.LittleEndian.PutUint64(sec[16:], off)
	binary.LittleEndian.PutUint32(sec[24:], uint32(s))
	x := nonce ^ off*0x9e3779b97f4a7c15 ^ uint64(s+1)*0xbf58476d1ce4e5b9
	for i := stampHeader; i+8 <= sectorSize; i += 8 {
		// xorshift64*: fast, and its output has no runs a controller could compress.
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		binary.LittleEndian.PutUint64(sec[i:], x*0x2545f4914f6cdd1d)
	}
	copy(sec[sectorSize-4:], sec[stampHeader:stampHeader+4]) // the 4-byte tail (484 is not a multiple of 8)
}

// sectorOwner says whose stamp a sector holds: ok is true when it is an intact stamp of this
// run (nonce), and then off is the offset of the block it was written for and idx its index.
// scratch is a sector-sized buffer.
func sectorOwner(sec []byte, nonce uint64, scratch []byte) (off uint64, idx int, ok bool) {
	if len(sec) != sectorSize || string(sec[:8]) != stampMagic || binary.LittleEndian.Uint64(sec[8:]) != nonce {
		return 0, 0, false
	}
	off = binary.LittleEndian.Uint64(sec[16:])
	idx = int(binary.LittleEndian.Uint32(sec[24:]))
	fillSector(scratch[:sectorSize], nonce, off, idx)
	return off, idx, bytes.Equal(scratch[:sectorSize], sec)
}

// Observation is what came back from one block the probe wrote.
type Observation struct {
	Offset uint64 `json:"offset"`
	// State is StateOwn (its own stamp), StateOverwritten (the stamp of the block written at
	// By: the two addresses land on the same flash), StateLost (no stamp of this run: what
	// was there before, zeroes or garbage) or StateTorn (some sectors own, others not).
	State string `json:"state"`
	By    uint64 `json:"by,omitempty"`
	// OwnSectors counts the sectors that came back as written (of the block's Sectors).
	OwnSectors int `json:"own_sectors"`
	// OwnPrefix counts the leading sectors that came back as written: a block that crosses
	// the end of the real flash keeps exactly those.
	OwnPrefix int    `json:"own_prefix,omitempty"`
	Sectors   int    `json:"sectors"`
	Zero      bool   `json:"zero,omitempty"` // a lost block that reads as zeroes
	Err       string `json:"error,omitempty"`
}

// Observation states.
const (
	StateOwn         = "own"
	StateOverwritten = "overwritten"
	StateLost        = "lost"
	StateTorn        = "torn"
	StateError       = "error"
)

// Good reports whether the block came back as written.
func (o Observation) Good() bool { return o.State == StateOwn }

// classify reads a block read back from offset off.
func classify(b []byte, nonce, off uint64, scratch []byte) Observation {
	o := Observation{Offset: off, Sectors: len(b) / sectorSize}
	var by uint64
	foreign, others := 0, 0
	for s := 0; s < o.Sectors; s++ {
		sec := b[s*sectorSize : (s+1)*sectorSize]
		w, idx, ok := sectorOwner(sec, nonce, scratch)
		switch {
		case ok && w == off && idx == s:
			o.OwnSectors++
			if o.OwnPrefix == s {
				o.OwnPrefix++
			}
		case ok:
			others++
			by = w
		default:
			foreign++
		}
	}
	switch {
	case o.OwnSectors == o.Sectors:
		o.State = StateOwn
	case others == o.Sectors:
		o.State, o.By = StateOverwritten, by
	case o.OwnSectors == 0 && others == 0:
		o.State = StateLost
		o.Zero = allZero(b)
	default:
		o.State = StateTorn
		o.By = by
	}
	return o
}

// allZero reports whether b holds only zero bytes: nothing is left once they are trimmed.
func allZero(b []byte) bool { return len(bytes.TrimLeft(b, "\x00")) == 0 }

// sectorIsOurs says whether a sector holds any intact stamp of this run (for the undo log's
// check that a card is the one it was taken from).
func sectorIsOurs(sec []byte, nonce uint64, scratch []byte) bool {
	_, _, ok := sectorOwner(sec, nonce, scratch)
	return ok
}
