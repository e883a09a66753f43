package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// How AttachLoop bound the device, recorded in Loop.Method.
const (
	MethodConfigure = "LOOP_CONFIGURE" // one atomic ioctl, Linux 5.8+
	MethodSetFD     = "LOOP_SET_FD"    // the old two-step: LOOP_SET_FD then LOOP_SET_STATUS64
)

var (
	loopControl = "/dev/loop-control"
	devRoot     = "/dev"
	sysfsRoot   = "/sys"

	// forceSetFD makes AttachLoop behave as on a kernel older than 5.8 (no LOOP_CONFIGURE),
	// so that tests exercise the fallback on a current kernel.
	forceSetFD = false
)

const (
	// attachAttempts bounds the retries when another process binds the free loop device
	// LOOP_CTL_GET_FREE gave us before we configure it.
	attachAttempts = 5
	// busyRetries × busyWait is how long LOOP_CLR_FD is retried on EBUSY. udev's blkid probe
	// (run on every change event of a loop device) opens the device for a moment.
	busyRetries = 20
	busyWait    = 50 * time.Millisecond
	// unbindTimeout is how long Detach waits for the kernel to finish detaching.
	unbindTimeout = 2 * time.Second
)

// LoopOptions says how to attach a loop device.
type LoopOptions struct {
	DirectIO  bool   // LO_FLAGS_DIRECT_IO: I/O reaches the backing file without the host page cache
	BlockSize uint32 // logical block size of the loop device; 0 = kernel default (512)
	ReadOnly  bool   // the device and its backing file are opened read-only
	// Offset and SizeLimit make the device a window of the backing file (0: from its start, to
	// its end): a partition at a chosen start, for the partition-alignment comparison.
	Offset, SizeLimit uint64
	// Device lets the backing be a block device (a real card the user named with --destroy),
	// for a partition window over it.
	Device bool
}

// Loop is an attached loop device that this process made.
//
// It keeps the device open until Detach. The device is attached with LO_FLAGS_AUTOCLEAR: the
// kernel detaches it by itself when its last opener closes it. Holding our own descriptor
// keeps that from happening between attach and mount (or between unmount and the next
// mount), while still guaranteeing that a process killed with SIGKILL does not leak the
// device: the kernel closes our descriptor, and the device goes away as soon as nothing else
// (a mount) holds it. The caller mounts by Path.
type Loop struct {
	Path     string // "/dev/loop3"
	Name     string // "loop3"
	Backing  string // absolute path of the image
	DirectIO bool   // what the kernel actually did (from sysfs), not what was asked
	Method   string // MethodConfigure, or MethodSetFD (pre-5.8 fallback)

	mu sync.Mutex
	f  *os.File // the held loop device; nil once detached
}

// AttachLoop binds a free loop device to the image file and returns it.
//
// If DirectIO is asked for but the kernel will not do it, the device is attached anyway with
// DirectIO false: the caller records what it got. The kernel refuses direct I/O when the
// backing file system cannot do O_DIRECT, or when the loop's logical block size is smaller
// than the backing file system's device block size (a 512-byte loop over a 4 KiB-sector disk)
// because every request must then be aligned to the larger size. Depending on the kernel
// version it says so with EINVAL or drops the flag silently, so the truth is read back from
// /sys/block/loopN/loop/dio.
func AttachLoop(image string, opt LoopOptions) (*Loop, error) {
	if bs := opt.BlockSize; bs != 0 && (bs < 512 || bs&(bs-1) != 0) {
		return nil, fmt.Errorf("attach loop device to %s: block size %d: want 0 (default) or a power of two of at least 512", image, bs)
	}
	abs, err := filepath.Abs(image)
	if err == nil {
		// sysfs reports the backing file by its real path; record the same string so that a
		// later comparison (Detach, CleanupStale) is meaningful.
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("attach loop device to %s: %w", image, err)
	}
	mode := os.O_RDWR
	if opt.ReadOnly {
		mode = os.O_RDONLY
	}
	backing, err := os.OpenFile(abs, mode, 0)
	if err != nil {
		return nil, fmt.Errorf("attach loop device: open image: %w", err)
	}
	// The kernel takes its own reference to the backing file while binding; ours is not
	// needed afterwards.
	defer backing.Close()
	if fi, err := backing.Stat(); err != nil {
		return nil, fmt.Errorf("attach loop device: %w", err)
	} else if !fi.Mode().IsRegular() && !(opt.Device && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0) {
		return nil, fmt.Errorf("attach loop device: %s is not a regular file", abs)
	}

	ctl, err := os.OpenFile(loopControl, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("attach loop device: open %s (needs root and a kernel with loop support): %w", loopControl, err)
	}
	defer ctl.Close()

	var lastErr error
	for range attachAttempts {
		var n int
		err := withFd(ctl, func(fd int) (err error) {
			n, err = unix.IoctlRetInt(fd, unix.LOOP_CTL_GET_FREE)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("attach loop device: LOOP_CTL_GET_FREE: %w", err)
		}
		name := fmt.Sprintf("loop%d", n)
		dev, err := os.OpenFile(filepath.Join(devRoot, name), os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("attach loop device: %w", err)
		}
		method, err := configure(dev, backing, abs, opt)
		if errors.Is(err, unix.EBUSY) {
			// LOOP_CTL_GET_FREE only names a device that was free a moment ago: another
			// process (losetup, another fsbench, a container runtime) may have bound it
			// since. Ask again for another one.
			dev.Close()
			lastErr = err
			continue
		}
		if err != nil {
			dev.Close()
			return nil, fmt.Errorf("attach %s to %s: %w", name, abs, err)
		}
		l := &Loop{Path: dev.Name(), Name: name, Backing: abs, Method: method, f: dev}
		dio, err := readLoopAttr(name, "dio")
		if err != nil {
			derr := l.Detach()
			return nil, errors.Join(fmt.Errorf("attach %s: read back direct I/O state: %w", name, err), derr)
		}
		l.DirectIO = dio == "1"
		return l, nil
	}
	return nil, fmt.Errorf("attach loop device to %s: other processes took the free loop device %d times in a row: %w", abs, attachAttempts, lastErr)
}

// configure binds dev to backing. It returns EBUSY (wrapped) when dev was already bound.
func configure(dev, backing *os.File, name string, opt LoopOptions) (string, error) {
	if !forceSetFD {
		err := loopConfigure(dev, backing, name, opt, opt.DirectIO)
		if err != nil && opt.DirectIO && errors.Is(err, unix.EINVAL) {
			// Newer kernels reject LO_FLAGS_DIRECT_IO with EINVAL when the backing file
			// cannot take it, older ones drop it silently. Try again without it.
			err = loopConfigure(dev, backing, name, opt, false)
		}
		if err == nil {
			return MethodConfigure, nil
		}
		// A kernel without LOOP_CONFIGURE (< 5.8) answers an unknown loop ioctl with EINVAL
		// (or ENOTTY from the block layer): fall back to the old two-step. LOOP_CONFIGURE
		// binds nothing when it fails, so retrying with the old calls is safe.
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOTTY) {
			return "", fmt.Errorf("LOOP_CONFIGURE: %w", err)
		}
	}
	return MethodSetFD, loopSetFD(dev, backing, name, opt)
}

// loopConfigure binds with LOOP_CONFIGURE, which sets the backing file, the flags
// (autoclear above all), the block size and direct I/O in one ioctl. The device is never
// visible bound-but-not-autoclear, so a kill at any moment cannot leak it, and udev sees a
// single change event with the final geometry.
func loopConfigure(dev, backing *os.File, name string, opt LoopOptions, dio bool) error {
	var cfg unix.LoopConfig
	cfg.Size = opt.BlockSize // the field is struct loop_config's block_size
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	if dio {
		cfg.Info.Flags |= unix.LO_FLAGS_DIRECT_IO
	}
	if opt.ReadOnly {
		cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
	}
	cfg.Info.Offset, cfg.Info.Sizelimit = opt.Offset, opt.SizeLimit
	setFileName(&cfg.Info, name)
	return withFd(backing, func(bfd int) error {
		cfg.Fd = uint32(bfd)
		return withFd(dev, func(fd int) error { return unix.IoctlLoopConfigure(fd, &cfg) })
	})
}

// loopSetFD binds the pre-5.8 way. LOOP_SET_FD binds the file with no flags; only the next
// call, LOOP_SET_STATUS64, sets autoclear. A process killed between the two leaves a bound
// loop device that nothing will detach until someone runs losetup -d: this window is the
// reason LOOP_CONFIGURE exists. The device is read-only when backing was opened read-only.
func loopSetFD(dev, backing *os.File, name string, opt LoopOptions) error {
	return withFd(dev, func(fd int) error {
		err := withFd(backing, func(bfd int) error {
			return unix.IoctlSetInt(fd, unix.LOOP_SET_FD, bfd)
		})
		if err != nil {
			return fmt.Errorf("LOOP_SET_FD: %w", err)
		}
		undo := func(err error) error {
			// We are the only opener, so LOOP_CLR_FD detaches when dev is closed.
			if cerr := unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0); cerr != nil && !errors.Is(cerr, unix.ENXIO) {
				return errors.Join(err, fmt.Errorf("undo LOOP_SET_FD: %w", cerr))
			}
			return err
		}
		info := unix.LoopInfo64{Flags: unix.LO_FLAGS_AUTOCLEAR, Offset: opt.Offset, Sizelimit: opt.SizeLimit}
		setFileName(&info, name)
		if err := unix.IoctlLoopSetStatus64(fd, &info); err != nil {
			return undo(fmt.Errorf("LOOP_SET_STATUS64: %w", err))
		}
		if opt.BlockSize != 0 {
			// LOOP_SET_BLOCK_SIZE exists since 4.14; its argument is the value itself.
			if err := unix.IoctlSetInt(fd, unix.LOOP_SET_BLOCK_SIZE, int(opt.BlockSize)); err != nil {
				return undo(fmt.Errorf("LOOP_SET_BLOCK_SIZE %d: %w", opt.BlockSize, err))
			}
		}
		if opt.DirectIO {
			// LOOP_SET_DIRECT_IO (4.4+) fails with EINVAL, or is silently ignored, when the
			// backing file cannot do direct I/O. Either way AttachLoop reads the outcome back
			// from sysfs and the caller records it; a refusal is not an error.
			_ = unix.IoctlSetInt(fd, unix.LOOP_SET_DIRECT_IO, 1)
		}
		return nil
	})
}

// setFileName fills lo_file_name, which losetup -l shows and which survives the image being
// renamed. The kernel keeps 63 bytes and a NUL; sysfs's backing_file has the full path.
func setFileName(info *unix.LoopInfo64, name string) {
	n := copy(info.File_name[:len(info.File_name)-1], name)
	info.File_name[n] = 0
}

// Detach detaches the loop device and releases it. It is idempotent: calling it again, or
// after the kernel already detached the device, returns nil.
//
// LOOP_CLR_FD does not detach at once when anyone else has the device open: it turns on
// autoclear and the kernel detaches when the last opener closes it (since 5.x our own
// descriptor counts too, so the detach happens at our close). Detach therefore closes its
// descriptor and then waits briefly until sysfs no longer shows the device bound to our
// image. If it still is (a mount, or another process, holds it), Detach returns an error
// saying so; the device will go away by itself when that holder closes it, and a later
// Detach call returns nil then.
func (l *Loop) Detach() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		err := clearFd(l.f)
		if err != nil && !errors.Is(err, unix.ENXIO) {
			// Keep the descriptor: a retry of Detach can try again.
			return fmt.Errorf("detach %s: LOOP_CLR_FD: %w", l.Path, err)
		}
		// ENXIO: not bound any more (autoclear already fired, or someone ran losetup -d).
		cerr := l.f.Close()
		l.f = nil
		if cerr != nil {
			return fmt.Errorf("detach %s: close: %w", l.Path, cerr)
		}
	}
	bound, err := waitUnbound(l.Name, l.Backing, unbindTimeout)
	if err != nil {
		return fmt.Errorf("detach %s: %w", l.Path, err)
	}
	if bound {
		return fmt.Errorf("detach %s: still bound to %s after %v: something still holds it open (is it mounted? see findmnt %s); the kernel detaches it when that is closed", l.Path, l.Backing, unbindTimeout, l.Path)
	}
	return nil
}

// clearFd issues LOOP_CLR_FD, retrying briefly on EBUSY (older kernels answer EBUSY while
// another opener such as udev's blkid probe holds the device).
func clearFd(f *os.File) error {
	var err error
	for range busyRetries {
		err = withFd(f, func(fd int) error { return unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0) })
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		time.Sleep(busyWait)
	}
	return err
}

// waitUnbound polls sysfs until loop device name is no longer bound to backing (it is
// unbound, or bound to some other file: then the number was reused and the device is no
// longer ours) or the timeout passes. It reports whether it is still bound to backing.
func waitUnbound(name, backing string, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		cur, err := readLoopAttr(name, "backing_file")
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if !sameBacking(cur, backing) {
			return false, nil
		}
		if time.Now().After(deadline) {
			return true, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sameBacking reports whether a sysfs backing_file value names path. The kernel appends
// " (deleted)" once the image has been unlinked while still attached.
func sameBacking(sysfsValue, path string) bool {
	return sysfsValue == path || sysfsValue == path+" (deleted)"
}

// readLoopAttr reads /sys/block/<name>/loop/<attr>; that directory exists only while the
// device is bound.
func readLoopAttr(name, attr string) (string, error) {
	b, err := os.ReadFile(filepath.Join(sysfsRoot, "block", name, "loop", attr))
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// withFd runs fn with f's descriptor, keeping f alive and in the runtime's poller state
// (f.Fd() would switch it to blocking mode).
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
