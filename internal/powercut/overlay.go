package powercut

import (
	"fmt"
	"io"
)

// overlayBlock is the overlay's granularity: the filesystem block size every filesystem
// tested here uses, so that most writes replace whole blocks without reading the base.
const overlayBlock = 4096

// Overlay is a copy-on-write view of a base image: writes go to memory, block by block, and
// reads take the written blocks from memory and the rest from the base. A cut's image is an
// overlay of its outcome over the durable prefix, and fsck or a mount writing to it (journal
// replay, repair) changes only the overlay: dropping it gives the cut's state back without
// copying the card. Not safe for concurrent use.
type Overlay struct {
	base   io.ReaderAt
	size   int64
	blocks map[int64][]byte
}

// NewOverlay returns an empty overlay over base, an image of size bytes.
func NewOverlay(base io.ReaderAt, size int64) *Overlay {
	return &Overlay{base: base, size: size, blocks: map[int64][]byte{}}
}

// Size is the image size.
func (o *Overlay) Size() int64 { return o.size }

// Blocks is how many blocks the overlay holds (its memory is that times 4 KiB).
func (o *Overlay) Blocks() int { return len(o.blocks) }

// ReadAt reads from the overlay's blocks, or the base where it has none.
func (o *Overlay) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.size {
		return 0, io.EOF
	}
	n := 0
	want := min(int64(len(p)), o.size-off)
	for int64(n) < want {
		pos := off + int64(n)
		b, in := pos/overlayBlock, pos%overlayBlock
		k := int(min(overlayBlock-in, want-int64(n)))
		if blk, ok := o.blocks[b]; ok {
			copy(p[n:n+k], blk[in:])
		} else if err := o.readBase(p[n:n+k], pos); err != nil {
			return n, err
		}
		n += k
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (o *Overlay) readBase(p []byte, off int64) error {
	m, err := o.base.ReadAt(p, off)
	if err == io.EOF && m == len(p) {
		err = nil
	}
	if err == io.EOF {
		clear(p[m:]) // a sparse base shorter than the card: the rest reads as zeroes
		err = nil
	}
	return err
}

// WriteAt writes into the overlay's blocks, reading a block's base content first when the
// write covers only part of it.
func (o *Overlay) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > o.size {
		return 0, fmt.Errorf("overlay write %d+%d beyond the image's %d bytes", off, len(p), o.size)
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		b, in := pos/overlayBlock, pos%overlayBlock
		k := int(min(overlayBlock-in, int64(len(p)-n)))
		blk, ok := o.blocks[b]
		if !ok {
			blk = make([]byte, overlayBlock)
			if k < overlayBlock {
				if err := o.readBase(blk, b*overlayBlock); err != nil {
					return n, err
				}
			}
			o.blocks[b] = blk
		}
		copy(blk[in:], p[n:n+k])
		n += k
	}
	return n, nil
}
