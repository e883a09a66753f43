// Package fakefs is an in-memory suitekit.FileOps that counts every operation, so that the
// rate suites' tests (bonnie, smallfiles, randio) can check exactly what each benchmark did.
package fakefs

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/suites/suitekit"
)

// FS is the in-memory filesystem and its counters. Its counters may be reset between the
// phases of a test.
type FS struct {
	mu    sync.Mutex
	Files map[string][]byte
	Dirs  map[string]bool
	// Operations counted: files created, removed, directories made, fsyncs of files and of
	// directories, syncfs calls, cache drops.
	Creates, Removes, Mkdirs, Fsyncs, DirSyncs, Syncfses, Drops int
	Writes, Reads                                               int
	Written, Read                                               uint64
	Direct                                                      int // opens with O_DIRECT
	// RefuseDirect makes an O_DIRECT open fail with EINVAL, as a filesystem without direct
	// I/O does.
	RefuseDirect bool
}

// New is an empty filesystem with the directory root.
func New(root string) *FS {
	return &FS{Files: map[string][]byte{}, Dirs: map[string]bool{root: true}}
}

type handle struct {
	fs   *FS
	name string
	pos  int64
}

// OpenFile opens or creates a file as os.OpenFile does (O_CREATE, O_EXCL, O_TRUNC).
func (c *FS) OpenFile(name string, flag int, _ os.FileMode) (suitekit.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if flag&unix.O_DIRECT != 0 {
		if c.RefuseDirect {
			return nil, unix.EINVAL
		}
		c.Direct++
	}
	if !c.Dirs[filepath.Dir(name)] {
		return nil, os.ErrNotExist
	}
	_, exists := c.Files[name]
	switch {
	case exists && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, os.ErrExist
	case !exists && flag&os.O_CREATE == 0:
		return nil, os.ErrNotExist
	case !exists:
		c.Creates++
		c.Files[name] = nil
	}
	if flag&os.O_TRUNC != 0 {
		c.Files[name] = nil
	}
	return &handle{fs: c, name: name}, nil
}

func (h *handle) ReadAt(b []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	d := h.fs.Files[h.name]
	h.fs.Reads++
	if off >= int64(len(d)) {
		return 0, io.EOF
	}
	n := copy(b, d[off:])
	h.fs.Read += uint64(n)
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (h *handle) WriteAt(b []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	d := h.fs.Files[h.name]
	if end := off + int64(len(b)); end > int64(len(d)) {
		d = append(d, make([]byte, end-int64(len(d)))...)
	}
	copy(d[off:], b)
	h.fs.Files[h.name] = d
	h.fs.Writes++
	h.fs.Written += uint64(len(b))
	return len(b), nil
}

func (h *handle) Read(b []byte) (int, error) {
	n, err := h.ReadAt(b, h.pos)
	h.pos += int64(n)
	if n > 0 && err == io.EOF {
		err = nil
	}
	return n, err
}

func (h *handle) Write(b []byte) (int, error) {
	n, err := h.WriteAt(b, h.pos)
	h.pos += int64(n)
	return n, err
}

func (h *handle) Sync() error {
	h.fs.mu.Lock()
	h.fs.Fsyncs++
	h.fs.mu.Unlock()
	return nil
}

func (h *handle) Close() error { return nil }

// Remove removes a file, or an empty directory.
func (c *FS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.Files[name]; ok {
		delete(c.Files, name)
		c.Removes++
		return nil
	}
	if c.Dirs[name] {
		for f := range c.Files {
			if filepath.Dir(f) == name {
				return unix.ENOTEMPTY
			}
		}
		delete(c.Dirs, name)
		return nil
	}
	return os.ErrNotExist
}

// Mkdir makes a directory in an existing one.
func (c *FS) Mkdir(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Dirs[name] {
		return os.ErrExist
	}
	if !c.Dirs[filepath.Dir(name)] {
		return os.ErrNotExist
	}
	c.Dirs[name] = true
	c.Mkdirs++
	return nil
}

// ReadDirNames lists dir's files and directories, sorted.
func (c *FS) ReadDirNames(dir string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for f := range c.Files {
		if filepath.Dir(f) == dir {
			out = append(out, filepath.Base(f))
		}
	}
	for d := range c.Dirs {
		if d != dir && filepath.Dir(d) == dir {
			out = append(out, filepath.Base(d))
		}
	}
	slices.Sort(out)
	return out, nil
}

// SyncDir counts a directory fsync.
func (c *FS) SyncDir(string) error { c.mu.Lock(); c.DirSyncs++; c.mu.Unlock(); return nil }

// Syncfs counts a syncfs.
func (c *FS) Syncfs(string) error { c.mu.Lock(); c.Syncfses++; c.mu.Unlock(); return nil }

// DropCaches counts a cache drop.
func (c *FS) DropCaches() error { c.mu.Lock(); c.Drops++; c.mu.Unlock(); return nil }
