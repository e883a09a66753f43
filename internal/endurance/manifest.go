package endurance

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// Manifest is what the filesystem promised the workload: every file it made durable (by
// fsync or syncfs), with its size and content hash. It lives off the device (in the state
// file), so that a card that returns wrong data cannot take it along.
type Manifest struct {
	Files map[string]Entry `json:"files"`
}

// Entry is a promised file: its size and the sha256 of its content. Appended files carry the
// hash's running state (Running), so that the next append extends it.
type Entry struct {
	Size    int64  `json:"size"`
	Hash    string `json:"hash"`
	Running []byte `json:"running,omitempty"`
	// Version is the workload's version of the file (the update workload's package version).
	Version int `json:"v,omitempty"`
}

// NewManifest is an empty manifest.
func NewManifest() *Manifest { return &Manifest{Files: map[string]Entry{}} }

// Put records that path (relative to the filesystem's root) holds content, made durable.
func (m *Manifest) Put(path string, content []byte) {
	s := sha256.Sum256(content)
	m.Files[path] = Entry{Size: int64(len(content)), Hash: hex.EncodeToString(s[:])}
}

// PutHash records that path holds size bytes whose sha256 is hash.
func (m *Manifest) PutHash(path string, size int64, hash string) {
	m.Files[path] = Entry{Size: size, Hash: hash}
}

// Append records that data was appended to path and made durable.
func (m *Manifest) Append(path string, data []byte) error {
	e := m.Files[path]
	h := sha256.New()
	if len(e.Running) > 0 {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(e.Running); err != nil {
			return fmt.Errorf("manifest of %s: %w", path, err)
		}
	}
	h.Write(data)
	run, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return err
	}
	m.Files[path] = Entry{Size: e.Size + int64(len(data)), Hash: hex.EncodeToString(h.Sum(nil)), Running: run}
	return nil
}

// Rename records that from was renamed to to (made durable).
func (m *Manifest) Rename(from, to string) {
	if e, ok := m.Files[from]; ok {
		m.Files[to] = e
		delete(m.Files, from)
	}
}

// Remove records that path was deleted.
func (m *Manifest) Remove(path string) { delete(m.Files, path) }

// RemoveUnder records that every file under dir (a path relative to the root) was deleted.
func (m *Manifest) RemoveUnder(dir string) {
	for p := range m.Files {
		if p == dir || len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/' {
			delete(m.Files, p)
		}
	}
}

// Check is what a verification found: how many promised files were read back whole, and the
// ones that were not, by kind.
type Check struct {
	// Files are the promised files checked; Bytes what was read of them.
	Files int    `json:"files"`
	Bytes uint64 `json:"bytes"`
	// Missing files are gone; Unreadable ones failed to read (the filesystem refused what it
	// could not vouch for: an I/O error, a checksum); Wrong ones read back other content
	// without an error: silent wrong data, which only this comparison catches.
	Missing    int `json:"missing,omitempty"`
	Unreadable int `json:"unreadable,omitempty"`
	Wrong      int `json:"wrong,omitempty"`
	// Problems names the first few of them.
	Problems []string `json:"problems,omitempty"`
	// IOErrors counts the reads that failed with EIO.
	IOErrors int `json:"io_errors,omitempty"`
}

// Bad is the number of promised files not given back whole.
func (c Check) Bad() int { return c.Missing + c.Unreadable + c.Wrong }

// Add adds another check's counts.
func (c *Check) Add(o Check) {
	c.Files += o.Files
	c.Bytes += o.Bytes
	c.Missing += o.Missing
	c.Unreadable += o.Unreadable
	c.Wrong += o.Wrong
	c.IOErrors += o.IOErrors
	for _, p := range o.Problems {
		c.note(p)
	}
}

// maxProblems bounds the problems kept.
const maxProblems = 20

func (c *Check) note(p string) {
	if len(c.Problems) < maxProblems {
		c.Problems = append(c.Problems, p)
	}
}

// Verify reads back every file of the manifest from the filesystem mounted on dir (which the
// caller mounted afresh, so that the reads reach the card) and compares it with what was
// promised.
func (m *Manifest) Verify(dir string) Check {
	var c Check
	paths := make([]string, 0, len(m.Files))
	for p := range m.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		c.file(filepath.Join(dir, p), p, m.Files[p])
	}
	return c
}

// file checks one promised file. It reads without touching the file's access time (the
// verification must not write to the card: an atime update is a metadata write, and reading
// every file each round would wear the card more than the workload's own metadata does), and
// drops the file's cached pages first, so that the data comes from the card.
func (c *Check) file(full, rel string, e Entry) {
	c.Files++
	f, err := os.OpenFile(full, os.O_RDONLY|unix.O_NOATIME, 0)
	if errors.Is(err, fs.ErrPermission) {
		f, err = os.Open(full) // O_NOATIME is for the file's owner (or root) only
	}
	if err == nil {
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		var h hash.Hash
		var n int64
		// A file still being appended to (a log) holds what was promised, and maybe more
		// that a failed day wrote and never synced: only its promised part is checked.
		h, n, err = hashFile(f, e.Running != nil, e.Size)
		f.Close()
		c.Bytes += uint64(n)
		if err == nil {
			if n != e.Size || hex.EncodeToString(h.Sum(nil)) != e.Hash {
				c.Wrong++
				c.note(fmt.Sprintf("%s: %d bytes read back, not the %d promised", rel, n, e.Size))
				if n == e.Size {
					c.Problems[len(c.Problems)-1] = fmt.Sprintf("%s: read back without an error, but not what was written", rel)
				}
			}
			return
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Missing++
		c.note(fmt.Sprintf("%s: missing", rel))
	default:
		c.Unreadable++
		if errors.Is(err, syscall.EIO) {
			c.IOErrors++
		}
		c.note(fmt.Sprintf("%s: unreadable: %v", rel, unwrapPath(err)))
	}
}

// hashFile hashes f whole, or its first size bytes when prefix is set.
func hashFile(f *os.File, prefix bool, size int64) (hash.Hash, int64, error) {
	h := sha256.New()
	var r io.Reader = f
	if prefix {
		r = io.LimitReader(f, size)
	}
	n, err := io.Copy(h, r)
	return h, n, err
}

// unwrapPath drops the path an *os.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
