package powercut

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// Check is what the check of a filesystem after a cut found.
type Check struct {
	// Files is how many files the manifest had something to say about at the cut.
	Files int `json:"files"`
	// AckedLost are acknowledged files missing, AckedCorrupt acknowledged files whose
	// content is neither the acknowledged one nor a later one (nor, for a write in flight, a
	// block-by-block mix of them): the numbers that must be zero.
	AckedLost    int `json:"acked_lost"`
	AckedCorrupt int `json:"acked_corrupt"`
	// TornRenames are files of the atomic-replace pattern holding a mix of the old and the new
	// content: never allowed, acknowledged or not.
	TornRenames int `json:"torn_renames"`
	// Resurrected are files whose acknowledged deletion was undone.
	Resurrected int `json:"resurrected"`
	// UnackedLost counts writes that were never acknowledged and are gone: expected loss.
	UnackedLost int `json:"unacked_lost"`
	// Problems names each violation, for the report's detail.
	Problems []string `json:"problems,omitempty"`
}

// Violations is the number of broken promises.
func (c Check) Violations() int { return c.AckedLost + c.AckedCorrupt + c.TornRenames + c.Resurrected }

// LastAckBefore is the last acknowledgement given at or before the card's request position cut.
func (m *Manifest) LastAckBefore(cut uint64) (Ack, bool) {
	i := sort.Search(len(m.Acks), func(i int) bool { return m.Acks[i].Pos > cut })
	if i == 0 {
		return Ack{}, false
	}
	return m.Acks[i-1], true
}

// Verify checks the filesystem mounted on dir, as it came up after power was cut when the card
// had received cut requests, against the manifest: what was acknowledged by then must be there.
func (m *Manifest) Verify(dir string, cut uint64) (Check, error) {
	var c Check
	for _, f := range m.Files {
		if err := checkFile(&c, dir, f, cut); err != nil {
			return c, err
		}
	}
	return c, nil
}

// checkFile applies the rules to one path. R is the last version acknowledged at or before
// the cut; the versions after it whose operation had started before the cut may have reached
// the card in part; the ones that started later cannot have.
func checkFile(c *Check, dir string, f *File, cut uint64) error {
	r := -1
	for i, v := range f.Versions {
		if v.Ack != 0 && v.Ack <= cut {
			r = i
		}
	}
	var later []Version
	for _, v := range f.Versions[r+1:] {
		if v.Started < cut {
			later = append(later, v)
		}
	}
	if r < 0 && len(later) == 0 {
		return nil // nothing of this file had reached the card
	}
	c.Files++
	got, err := os.ReadFile(filepath.Join(dir, f.Path))
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, os.ErrNotExist) {
		// An I/O error reading a file is a damaged file, as far as its user is concerned.
		exists, got = true, nil
	}
	allowed := later
	if r >= 0 {
		allowed = append([]Version{f.Versions[r]}, later...)
	}
	if !exists {
		switch {
		case r < 0:
			c.UnackedLost++ // never promised
		case f.Versions[r].Deleted:
		case slices.ContainsFunc(later, func(v Version) bool { return v.Deleted }):
			// A deletion in flight may have reached the card.
		default:
			c.AckedLost++
			c.Problems = append(c.Problems, fmt.Sprintf("%s: missing, acknowledged by the %s at request %d", f.Path, f.Versions[r].Op, f.Versions[r].Ack))
		}
		return nil
	}
	h := hash(got)
	for _, v := range allowed {
		if !v.Deleted && v.Hash == h && v.Size == int64(len(got)) {
			return nil // whole: the acknowledged version or a later one
		}
	}
	if r >= 0 && f.Versions[r].Deleted && !slices.ContainsFunc(later, func(v Version) bool { return !v.Deleted }) {
		c.Resurrected++
		c.Problems = append(c.Problems, fmt.Sprintf("%s: back, though its deletion was acknowledged at request %d", f.Path, f.Versions[r].Ack))
		return nil
	}
	// Not a whole version. What an unacknowledged plain write left half-done (a file created
	// and never synced, caught empty or with blocks not written yet) is expected loss, even
	// when an atomic replace of it was in flight: the replace's old side was never promised.
	if r < 0 && partialOf(got, unpromised(allowed)) {
		c.UnackedLost++
		return nil
	}
	// An atomic replace may only ever show one whole version.
	if slices.ContainsFunc(allowed, func(v Version) bool { return v.Atomic }) {
		c.TornRenames++
		c.Problems = append(c.Problems, fmt.Sprintf("%s: %d bytes matching no version of an atomic replace", f.Path, len(got)))
		return nil
	}
	// A write in flight: block by block, the content must come from the allowed versions.
	if mixOf(got, allowed) {
		if r < 0 {
			c.UnackedLost++
		}
		return nil
	}
	if r < 0 {
		c.UnackedLost++ // garbage in a file nobody was promised
		return nil
	}
	c.AckedCorrupt++
	c.Problems = append(c.Problems, fmt.Sprintf("%s: %d bytes, neither the version acknowledged at request %d nor a later one", f.Path, len(got), f.Versions[r].Ack))
	return nil
}

// mixOf reports whether every 4 KiB block of got equals the same block of one of the versions
// (a write caught in flight), and its size is within the versions' sizes.
func mixOf(got []byte, versions []Version) bool {
	var minSize, maxSize int64 = -1, 0
	for _, v := range versions {
		if v.Deleted {
			continue
		}
		if minSize < 0 || v.Size < minSize {
			minSize = v.Size
		}
		maxSize = max(maxSize, v.Size)
	}
	n := int64(len(got))
	if minSize < 0 || n < minSize || n > maxSize {
		return false
	}
	for i := 0; int64(i)*blockSize < n; i++ {
		blk := got[int64(i)*blockSize : min(int64(i+1)*blockSize, n)]
		if len(blk) < blockSize && n != minSize && n != maxSize {
			// The last block of a file caught growing (an append in flight) ends anywhere:
			// its content was checked up to the last whole block.
			continue
		}
		h := hash(blk)
		if !slices.ContainsFunc(versions, func(v Version) bool { return i < len(v.Blocks) && v.Blocks[i] == h }) {
			return false
		}
	}
	return true
}

// unpromised are the versions written without the atomic-replace pattern (plain creates and
// writes, never acknowledged by the caller's choice of r < 0).
func unpromised(vs []Version) []Version {
	var out []Version
	for _, v := range vs {
		if !v.Atomic && !v.Deleted {
			out = append(out, v)
		}
	}
	return out
}

// partialOf reports whether got is what a filesystem can show of a file whose data had not
// all reached the card: empty, or no longer than one of the versions with each 4 KiB block
// either that version's or zeroes (allocated, not yet written).
func partialOf(got []byte, versions []Version) bool {
	if len(versions) == 0 {
		return false
	}
	if len(got) == 0 {
		return true
	}
	zero := make([]byte, blockSize)
	for _, v := range versions {
		if int64(len(got)) > v.Size {
			continue
		}
		ok := true
		for i := 0; ok && i*blockSize < len(got); i++ {
			blk := got[i*blockSize : min((i+1)*blockSize, len(got))]
			ok = bytes.Equal(blk, zero[:len(blk)]) || (i < len(v.Blocks) && int64((i+1)*blockSize) <= v.Size && v.Blocks[i] == hash(blk))
		}
		if ok {
			return true
		}
	}
	return false
}
