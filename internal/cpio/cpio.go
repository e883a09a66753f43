// Package cpio writes initramfs archives in the kernel's "newc" cpio format: the QEMU guest's
// (internal/vm) and the emulated boards' (internal/board). Same inputs, same bytes.
package cpio

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// entry is one file of the initramfs. Exactly one of hostPath, data and link says what it holds;
// a directory has none.
type entry struct {
	mode     uint32 // permission bits (0755, 0644, ...); the type comes from the fields below
	dir      bool
	hostPath string // a regular file copied from the host
	data     []byte // a regular file with these contents
	link     string // a symlink to this target
}

// Archive is an initramfs being assembled: guest path (absolute, cleaned) → entry. Parent
// directories are added on write. Guest paths are unique: adding a path twice keeps the first,
// so that a library shared by two tools is stored once.
type Archive struct {
	entries map[string]entry
}

// New returns an empty archive.
func New() *Archive { return &Archive{entries: map[string]entry{}} }

func (a *Archive) add(guestPath string, e entry) {
	p := path.Clean("/" + guestPath)
	if _, ok := a.entries[p]; ok {
		return
	}
	a.entries[p] = e
}

// Has reports whether guestPath is in the archive.
func (a *Archive) Has(guestPath string) bool {
	_, ok := a.entries[path.Clean("/"+guestPath)]
	return ok
}

// Dir adds a directory with the permission bits mode (0755, 01777, ...).
func (a *Archive) Dir(p string, mode uint32) { a.add(p, entry{dir: true, mode: mode}) }

// File adds a regular file whose contents are read from hostPath when the archive is written.
func (a *Archive) File(p, hostPath string, mode uint32) {
	a.add(p, entry{hostPath: hostPath, mode: mode})
}

// Data adds a regular file holding data.
func (a *Archive) Data(p string, data []byte, mode uint32) {
	a.add(p, entry{data: data, mode: mode})
}

// Symlink adds a symbolic link to target.
func (a *Archive) Symlink(p, target string) { a.add(p, entry{link: target, mode: 0o777}) }

// Mode type bits of the newc format (those of stat(2)).
const (
	cpioDir     = 0o040000
	cpioRegular = 0o100000
	cpioSymlink = 0o120000
)

// Write stores the archive in the "newc" cpio format, the one the kernel unpacks into its
// rootfs: parents before children, every timestamp 0 and inode numbers in order so that the
// same inputs give the same bytes. It is not compressed: the kernel would have to inflate it
// under TCG, which costs more than reading an uncompressed archive from the host's page cache.
func (a *Archive) Write(w io.Writer) error {
	// Every parent directory must exist in the archive before its children: the kernel's
	// unpacker does not create missing parents.
	for p := range a.entries {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := a.entries[d]; !ok {
				a.entries[d] = entry{dir: true, mode: 0o755}
			}
		}
	}
	names := make([]string, 0, len(a.entries))
	for p := range a.entries {
		names = append(names, p)
	}
	// A parent sorts before its children because it is their prefix.
	sort.Strings(names)
	bw := bufio.NewWriterSize(w, 1<<20)
	ino := uint32(1)
	for _, p := range names {
		if err := writeEntry(bw, strings.TrimPrefix(p, "/"), a.entries[p], ino); err != nil {
			return err
		}
		ino++
	}
	if err := writeHeader(bw, "TRAILER!!!", 0, 0, 0); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write the initramfs: %w", err)
	}
	return nil
}

func writeEntry(w *bufio.Writer, name string, e entry, ino uint32) error {
	switch {
	case e.dir:
		return writeHeader(w, name, cpioDir|e.mode, ino, 0)
	case e.link != "":
		if err := writeHeader(w, name, cpioSymlink|e.mode, ino, uint64(len(e.link))); err != nil {
			return err
		}
		return writeBody(w, strings.NewReader(e.link), uint64(len(e.link)))
	case e.hostPath != "":
		f, err := os.Open(e.hostPath)
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("initramfs: %w", err)
		}
		size := uint64(fi.Size())
		if err := writeHeader(w, name, cpioRegular|e.mode, ino, size); err != nil {
			return err
		}
		return writeBody(w, f, size)
	default:
		if err := writeHeader(w, name, cpioRegular|e.mode, ino, uint64(len(e.data))); err != nil {
			return err
		}
		return writeBody(w, strings.NewReader(string(e.data)), uint64(len(e.data)))
	}
}

// writeHeader writes a newc header and the name, padded to 4 bytes. The format has 32-bit sizes:
// no file of an initramfs comes near 4 GiB.
func writeHeader(w *bufio.Writer, name string, mode, ino uint32, size uint64) error {
	if size > 0xffffffff {
		return fmt.Errorf("initramfs: %s is %d bytes, more than the cpio format holds", name, size)
	}
	nlink := 1
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	// Fields: magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor,
	// rdevmajor, rdevminor, namesize (with the NUL), check.
	h := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name)+1, 0)
	if _, err := w.WriteString(h + name + "\x00"); err != nil {
		return fmt.Errorf("write the initramfs: %w", err)
	}
	return pad(w, uint64(len(h)+len(name)+1))
}

func writeBody(w *bufio.Writer, r io.Reader, size uint64) error {
	n, err := io.Copy(w, io.LimitReader(r, int64(size)))
	if err != nil {
		return fmt.Errorf("write the initramfs: %w", err)
	}
	if uint64(n) != size {
		return fmt.Errorf("write the initramfs: a file shrank while it was copied (%d of %d bytes)", n, size)
	}
	return pad(w, size)
}

func pad(w *bufio.Writer, n uint64) error {
	if r := n % 4; r != 0 {
		if _, err := w.Write(make([]byte, 4-r)); err != nil {
			return fmt.Errorf("write the initramfs: %w", err)
		}
	}
	return nil
}

// Paths returns the guest paths in the archive, sorted.
func (a *Archive) Paths() []string {
	out := make([]string, 0, len(a.entries))
	for p := range a.entries {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
