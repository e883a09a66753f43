package probe

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/blockdev"
)

// Device is what the probe measures: timed, unbuffered I/O on a block device or an image.
// The probe only sees latencies through this interface, so that its logic can be tested
// against a flash.Model without real time passing.
type Device interface {
	// ReadAt reads len(p) bytes at off and returns how long the read took.
	ReadAt(p []byte, off uint64) (time.Duration, error)
	// WriteAt writes p at off, reaching the device before it returns (O_DIRECT), and returns
	// how long the write took.
	WriteAt(p []byte, off uint64) (time.Duration, error)
	// Discard tells the device that [off, off+n) holds no data.
	Discard(off, n uint64) error
	// Size is the device size in bytes.
	Size() uint64
	// BlockSize is the logical block size: every offset and length is a multiple of it.
	BlockSize() uint64
	// Direct reports whether I/O bypasses the host page cache.
	Direct() bool
}

// fileDevice is a Device over an open block device or image file.
type fileDevice struct {
	f      *os.File
	fd     int
	size   uint64
	bs     uint64
	direct bool
}

// OpenDevice opens path for the probe: O_DIRECT, so that every read reaches the device and
// its latency is the card's, not the page cache's. write opens it read-write (the caller has
// checked that it may). A regular file on a filesystem without O_DIRECT support (tmpfs:
// EINVAL) is opened buffered, and Direct says so; a block device must take O_DIRECT.
//
// The caller closes the returned closer.
func OpenDevice(path string, write bool) (Device, func() error, error) {
	flags := os.O_RDONLY
	if write {
		// O_EXCL on a block device claims it: the open fails while it is mounted, and nobody
		// can mount it while the probe writes.
		flags = os.O_RDWR | unix.O_EXCL
	}
	f, err := os.OpenFile(path, flags|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	direct := true
	if errors.Is(err, unix.EINVAL) {
		if st, serr := os.Stat(path); serr == nil && st.Mode().IsRegular() {
			f, err = os.OpenFile(path, flags|unix.O_CLOEXEC, 0)
			direct = false
		}
	}
	if errors.Is(err, unix.EBUSY) {
		return nil, nil, fmt.Errorf("open %s exclusively for writing: it is mounted or in use; unmount it first: %w", path, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	size, err := blockdev.SizeBytes(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	d := &fileDevice{f: f, fd: int(f.Fd()), size: size, bs: 512, direct: direct}
	if st, err := f.Stat(); err == nil && st.Mode()&os.ModeDevice != 0 {
		bs, err := unix.IoctlGetInt(d.fd, unix.BLKSSZGET)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("logical block size of %s (BLKSSZGET): %w", path, err)
		}
		d.bs = uint64(bs)
	} else if direct {
		// An image file: O_DIRECT needs the alignment of the filesystem's device; 4 KiB
		// satisfies every common one.
		d.bs = 4096
	}
	return d, f.Close, nil
}

func (d *fileDevice) ReadAt(p []byte, off uint64) (time.Duration, error) {
	t0 := time.Now()
	n, err := unix.Pread(d.fd, p, int64(off))
	el := time.Since(t0)
	if err != nil {
		return el, fmt.Errorf("read %d bytes at %d: %w", len(p), off, err)
	}
	if n != len(p) {
		return el, fmt.Errorf("short read at %d: %d of %d bytes", off, n, len(p))
	}
	return el, nil
}

func (d *fileDevice) WriteAt(p []byte, off uint64) (time.Duration, error) {
	t0 := time.Now()
	n, err := unix.Pwrite(d.fd, p, int64(off))
	if err == nil && !d.direct {
		err = unix.Fdatasync(d.fd) // buffered: the timing must include reaching the file
	}
	el := time.Since(t0)
	if err != nil {
		return el, fmt.Errorf("write %d bytes at %d: %w", len(p), off, err)
	}
	if n != len(p) {
		return el, fmt.Errorf("short write at %d: %d of %d bytes", off, n, len(p))
	}
	return el, nil
}

func (d *fileDevice) Discard(off, n uint64) error {
	st, err := d.f.Stat()
	if err != nil {
		return err
	}
	if st.Mode().IsRegular() {
		// A loop device punches a hole for BLKDISCARD; do the same for an image file.
		return unix.Fallocate(d.fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(n))
	}
	return blockdev.Discard(d.f, off, n)
}

func (d *fileDevice) Size() uint64      { return d.size }
func (d *fileDevice) BlockSize() uint64 { return d.bs }
func (d *fileDevice) Direct() bool      { return d.direct }

// alignedBuffer returns n bytes aligned to the page size, as O_DIRECT needs: an anonymous
// mapping is page-aligned, which a Go slice is not guaranteed to be. free unmaps it.
func alignedBuffer(n int) (buf []byte, free func(), err error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("allocate a %d-byte I/O buffer: %w", n, err)
	}
	return b, func() { _ = unix.Munmap(b) }, nil
}
