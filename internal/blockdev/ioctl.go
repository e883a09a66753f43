package blockdev

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SizeBytes returns the size of the block device open as f, from the BLKGETSIZE64 ioctl. The
// kernel always stores a u64 there, although the ioctl number is declared with size_t (4
// bytes on 32-bit ARM): the result must be read into a uint64, never an int. For a regular
// file (an image not yet attached) it returns the file's size.
func SizeBytes(f *os.File) (uint64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", f.Name(), err)
	}
	if fi.Mode().IsRegular() {
		return uint64(fi.Size()), nil
	}
	var size uint64
	if err := ioctlPtr(f, unix.BLKGETSIZE64, unsafe.Pointer(&size)); err != nil {
		return 0, fmt.Errorf("size of %s (BLKGETSIZE64; is it a block device?): %w", f.Name(), err)
	}
	return size, nil
}

// Discard tells the device that length bytes from off hold no data (BLKDISCARD). On a flash
// device the FTL may erase them in the background; on a loop device the kernel punches a hole
// in the backing file. off and length must be multiples of the logical block size (else
// EINVAL); f must be open for writing and not be mounted (the kernel refuses discards while
// a filesystem holds the device exclusively, EBUSY).
func Discard(f *os.File, off, length uint64) error {
	r := [2]uint64{off, length}
	if err := ioctlPtr(f, unix.BLKDISCARD, unsafe.Pointer(&r)); err != nil {
		return fmt.Errorf("discard %d bytes at %d on %s: %w", length, off, f.Name(), err)
	}
	return nil
}

// ioctlPtr issues an ioctl whose argument is a pointer, through SyscallConn so that f stays
// in the runtime's poller state (f.Fd() would switch it to blocking mode).
func ioctlPtr(f *os.File, req uintptr, arg unsafe.Pointer) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno unix.Errno
	cerr := rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, req, uintptr(arg))
	})
	if cerr != nil {
		return cerr
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// FlushBuffers writes back and drops the block device's own page cache (BLKFLSBUF, as
// blockdev --flushbufs): after the device changed underneath it (a simulated card restored
// from a snapshot), a read must reach the device, not a stale cached page.
func FlushBuffers(f *os.File) error {
	if err := unix.IoctlSetInt(int(f.Fd()), unix.BLKFLSBUF, 0); err != nil {
		return fmt.Errorf("BLKFLSBUF %s: %w", f.Name(), err)
	}
	return nil
}
