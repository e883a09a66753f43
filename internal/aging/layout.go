package aging

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Layout is how the aged tree lies on the device, read with the FIEMAP ioctl.
type Layout struct {
	Files int
	// Mapped are the files with at least one extent (empty files and files stored inline in
	// metadata have none).
	Mapped  int
	Extents int
	// ExtentsPerFile is the mean over the mapped files; Fragmented the share of them in more
	// than one extent; MaxExtents the most any file had.
	ExtentsPerFile float64
	Fragmented     float64
	MaxExtents     int
	// Score is Conway et al.'s layout score (FAST 2017) for a scan of the tree in directory
	// order: the share of consecutive 4 KiB blocks read that lie next to each other on the
	// device (1 = one sequential run; a fresh tree is near 1, an aged one lower).
	Score float64
}

// fiemap ioctl (linux/fiemap.h); golang.org/x/sys has no wrapper for it.
const (
	fsIocFiemap      = 0xC020660B // _IOWR('f', 11, struct fiemap)
	fiemapFlagSync   = 0x1        // write delayed allocations back first, so they have extents
	fiemapExtentLast = 0x1
	fiemapHeader     = 32
	fiemapExtent     = 56
	fiemapBatch      = 64
)

type extent struct{ logical, physical, length uint64 }

// extents returns the extents of the open file f, in logical order.
func extents(f *os.File) ([]extent, error) {
	buf := make([]byte, fiemapHeader+fiemapBatch*fiemapExtent)
	var out []extent
	var start uint64
	for {
		clear(buf)
		le := binary.LittleEndian // the ioctl's struct is in host order; every Linux target fsbench builds for is little-endian
		le.PutUint64(buf[0:], start)
		le.PutUint64(buf[8:], ^uint64(0)-start)
		le.PutUint32(buf[16:], fiemapFlagSync)
		le.PutUint32(buf[24:], fiemapBatch)
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
			return nil, fmt.Errorf("FIEMAP %s: %w", f.Name(), e)
		}
		n := int(le.Uint32(buf[20:]))
		if n == 0 {
			return out, nil
		}
		last := false
		for i := range n {
			e := buf[fiemapHeader+i*fiemapExtent:]
			x := extent{logical: le.Uint64(e[0:]), physical: le.Uint64(e[8:]), length: le.Uint64(e[16:])}
			out = append(out, x)
			start = x.logical + x.length
			last = le.Uint32(e[40:])&fiemapExtentLast != 0
		}
		if last {
			return out, nil
		}
	}
}

// MeasureLayout reads the extents of every regular file under dir, in the order of a directory
// scan (lexical, as List).
func MeasureLayout(dir string) (Layout, error) {
	var l Layout
	var blocks, breaks uint64
	var prevEnd uint64
	first := true
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		ex, err := extents(f)
		f.Close()
		if err != nil {
			return err
		}
		l.Files++
		if len(ex) == 0 {
			return nil
		}
		l.Mapped++
		// Extents that continue each other physically are one run for the layout, though a
		// filesystem may report them apart (ext4 splits at 128 MiB, btrfs at its compressed
		// chunks); for the count of extents they are kept as the filesystem reports them.
		l.Extents += len(ex)
		l.MaxExtents = max(l.MaxExtents, len(ex))
		if len(ex) > 1 {
			l.Fragmented++
		}
		for _, x := range ex {
			n := (x.length + blockSize - 1) / blockSize
			if !first && x.physical != prevEnd {
				breaks++
			}
			first = false
			blocks += n
			prevEnd = x.physical + x.length
		}
		return nil
	})
	if err != nil {
		return l, fmt.Errorf("measuring the layout of %s: %w", dir, err)
	}
	if l.Mapped > 0 {
		l.ExtentsPerFile = float64(l.Extents) / float64(l.Mapped)
		l.Fragmented /= float64(l.Mapped)
	}
	if blocks > 1 {
		l.Score = 1 - float64(breaks)/float64(blocks-1)
	}
	return l, nil
}
