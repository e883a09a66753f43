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

// FileCounts are what the check of a filesystem after a cut found, file by file: broken
// promises and expected loss. A run's results sum them over its cuts in results.FileCounts,
// the same fields (a struct conversion turns one into the other).
type FileCounts struct {
	// AckedLost are acknowledged files missing, AckedCorrupt acknowledged files whose
	// content is neither the acknowledged one nor a later one (nor, for a write in flight, a
	// block-by-block mix of them), AckedUnreadable acknowledged files whose read failed (an
	// I/O error: damage the filesystem noticed, a checksum, rather than returned): data
	// acknowledged by fsync, fdatasync or syncfs and not given back.
	AckedLost       int `json:"acked_lost"`
	AckedCorrupt    int `json:"acked_corrupt"`
	AckedUnreadable int `json:"acked_unreadable,omitempty"`
	// TornRenames are files of an atomic replace that was in flight (not acknowledged) at the
	// cut, holding neither the old nor the new content: the atomicity of rename broken, which
	// is not acknowledged data lost.
	TornRenames int `json:"torn_renames"`
	// Resurrected are files whose acknowledged deletion was undone.
	Resurrected int `json:"resurrected"`
	// UnackedLost counts writes that were never acknowledged and are gone: expected loss.
	UnackedLost int `json:"unacked_lost"`
	// ZeroTails are files whose acknowledged bytes are all there and whose unacknowledged
	// append reads back, in part or whole, as zeroes: the size reached the card before the
	// data. Expected loss too, counted apart because a careless reader takes it for data.
	ZeroTails int `json:"zero_tails,omitempty"`
}

// Violations is the number of broken promises: acknowledged data not given back, deletions
// undone, and atomic replaces torn.
func (c FileCounts) Violations() int { return c.AckedLoss() + c.TornRenames }

// AckedLoss is the number of broken durability promises (fsync, fdatasync, syncfs, and the
// directory fsync of an unlink): acknowledged files missing, wrong, unreadable or undeleted.
func (c FileCounts) AckedLoss() int {
	return c.AckedLost + c.AckedCorrupt + c.AckedUnreadable + c.Resurrected
}

// Check is what the check of a filesystem after a cut found.
type Check struct {
	// Files is how many files the manifest had something to say about at the cut.
	Files int `json:"files"`
	// FileCounts are the files the check found damaged or lost, by kind.
	FileCounts
	// Problems names each violation, for the report's detail.
	Problems []string `json:"problems,omitempty"`
}

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
// the card in part; the ones that started later cannot have. The workload runs one operation
// at a time and acknowledges each (but the unsynced ones, which only create new files), so
// of those later versions only the last can have been in flight at the cut.
func checkFile(c *Check, dir string, f *File, cut uint64) error {
	fc := fileAtCut{f: f, r: -1}
	for i, v := range f.Versions {
		if v.Ack != 0 && v.Ack <= cut {
			fc.r = i
		}
	}
	for _, v := range f.Versions[fc.r+1:] {
		if v.Started < cut {
			fc.later = append(fc.later, v)
		}
	}
	if fc.r < 0 && len(fc.later) == 0 {
		return nil // nothing of this file had reached the card
	}
	c.Files++
	got, err := os.ReadFile(filepath.Join(dir, f.Path))
	switch {
	case err == nil:
		fc.judgeContent(c, got)
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist):
		fc.judgeMissing(c)
	default:
		// An I/O error: the filesystem refused to return what it could not vouch for.
		if fc.r < 0 {
			c.UnackedLost++
		} else {
			c.AckedUnreadable++
			c.Problems = append(c.Problems, fmt.Sprintf("%s: unreadable (%v), acknowledged by the %s at request %d", f.Path, errors.Unwrap(err), f.Versions[fc.r].Op, f.Versions[fc.r].Ack))
		}
	}
	return nil
}

// fileAtCut is one file as the cut left its promises: r is the index of the last version
// acknowledged by then (-1: none), later the versions started before the cut after it.
type fileAtCut struct {
	f     *File
	r     int
	later []Version
}

// allowed are the versions the file may show: the acknowledged one and the later ones.
func (fc fileAtCut) allowed() []Version {
	if fc.r >= 0 {
		return append([]Version{fc.f.Versions[fc.r]}, fc.later...)
	}
	return fc.later
}

// judgeMissing counts a file that is not there: a promise broken unless it was never
// promised or its deletion was acknowledged or in flight.
func (fc fileAtCut) judgeMissing(c *Check) {
	f, r := fc.f, fc.r
	switch {
	case r < 0:
		c.UnackedLost++ // never promised
	case f.Versions[r].Deleted:
	case slices.ContainsFunc(fc.later, func(v Version) bool { return v.Deleted }):
		// A deletion in flight may have reached the card.
	default:
		c.AckedLost++
		c.Problems = append(c.Problems, fmt.Sprintf("%s: missing, acknowledged by the %s at request %d", f.Path, f.Versions[r].Op, f.Versions[r].Ack))
	}
}

// judgeContent counts what the file's content got says: a whole allowed version, a file
// back from an acknowledged deletion, expected loss, a torn replace, a mix of a write in
// flight, a zero tail, or acknowledged data corrupted.
func (fc fileAtCut) judgeContent(c *Check, got []byte) {
	f, r, later, allowed := fc.f, fc.r, fc.later, fc.allowed()
	h := hash(got)
	for _, v := range allowed {
		if !v.Deleted && v.Hash == h && v.Size == int64(len(got)) {
			return // whole: the acknowledged version or a later one
		}
	}
	if r >= 0 && f.Versions[r].Deleted && !slices.ContainsFunc(later, func(v Version) bool { return !v.Deleted }) {
		c.Resurrected++
		c.Problems = append(c.Problems, fmt.Sprintf("%s: back, though its deletion was acknowledged at request %d", f.Path, f.Versions[r].Ack))
		return
	}
	// Not a whole version. What an unacknowledged plain write left half-done (a file created
	// and never synced, caught empty or with blocks not written yet) is expected loss, even
	// when an atomic replace of it was in flight: the replace's old side was never promised.
	if r < 0 && partialOf(got, unpromised(allowed)) {
		c.UnackedLost++
		return
	}
	// An atomic replace in flight may only show one whole version: the old or the new. The
	// rule is the replace's, so it applies only while the replace is in flight; an overwrite
	// or append in flight over a replaced file may mix, as over any file.
	if i := slices.IndexFunc(later, func(v Version) bool { return v.Atomic }); i >= 0 {
		c.TornRenames++
		c.Problems = append(c.Problems, fmt.Sprintf("%s: %d bytes, neither the old content nor the new one of the atomic replace in flight (started at request %d)", f.Path, len(got), later[i].Started))
		return
	}
	// A write in flight: block by block, the content must come from the allowed versions.
	if mixOf(got, allowed) {
		if r < 0 {
			c.UnackedLost++
		}
		return
	}
	if r < 0 {
		c.UnackedLost++ // garbage in a file nobody was promised
		return
	}
	if zeroTail(got, f.Versions[r], later) {
		c.ZeroTails++
		return
	}
	c.AckedCorrupt++
	c.Problems = append(c.Problems, fmt.Sprintf("%s: %d bytes, neither the version acknowledged at request %d nor a later one", f.Path, len(got), f.Versions[r].Ack))
}

// zeroTail reports whether got is the acknowledged version acked, intact, followed by an
// append in flight (one of later) of which some blocks read back as zeroes and the others, if
// any, as the append wrote them: a size that reached the card before the data.
func zeroTail(got []byte, acked Version, later []Version) bool {
	n, s := int64(len(got)), acked.Size
	if acked.Deleted || n <= s || !slices.ContainsFunc(later, func(v Version) bool { return !v.Deleted && v.Size >= n }) {
		return false
	}
	// Every acknowledged byte, block by block (the last block's hash covers its bytes up to s).
	for i := int64(0); i*blockSize < s; i++ {
		if int(i) >= len(acked.Blocks) || hash(got[i*blockSize:min((i+1)*blockSize, s)]) != acked.Blocks[i] {
			return false
		}
	}
	zeroes := false
	for i := s / blockSize; i*blockSize < n; i++ {
		blk := got[i*blockSize : min((i+1)*blockSize, n)]
		from := max(s-i*blockSize, 0) // the acknowledged part of the block was checked above
		if allZero(blk[from:]) {
			zeroes = true
			continue
		}
		h := hash(blk)
		if !slices.ContainsFunc(later, func(v Version) bool { return int(i) < len(v.Blocks) && v.Blocks[i] == h }) {
			return false
		}
	}
	return zeroes
}

// allZero reports whether b holds only zero bytes: nothing is left once they are trimmed.
func allZero(b []byte) bool { return len(bytes.TrimLeft(b, "\x00")) == 0 }

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
