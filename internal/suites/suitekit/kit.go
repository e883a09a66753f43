// Package suitekit is what the rate suites (bonnie, smallfiles, randio) share to run their
// tests: file operations behind an interface (OS does them for real; a test's fake counts
// them), timed phases with their per-operation latencies, the rate figure a phase becomes, and
// the lean system-call paths their loops take.
//
// It is a package of its own rather than more methods of suites.Rep because none of it needs
// the repetition in progress: Rep is what only the engine can do (the measurement span, the
// clearing that knows what the engine keeps, the unmount), and a suite that measures something
// else than a rate (powercut, a new one) should not see a rate's vocabulary in its contract.
// The kit imports no suite and no engine, so a suite takes what it uses and nothing else
// changes; the engine itself uses it only for the two things it shares with the suites
// (Syncfs, PatternBuf).
package suitekit

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/measure"
)

// File is an open file as the suites' loops use it; *os.File is one.
type File interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.WriterAt
	Sync() error
	Close() error
}

// FileOps are the filesystem operations of the rate suites' tests. OS does them for real;
// the tests' fake (internal/testkit/fakefs) counts them.
type FileOps interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	Mkdir(name string) error
	ReadDirNames(dir string) ([]string, error)
	// SyncDir fsyncs a directory, making the entries created in it durable.
	SyncDir(dir string) error
	// Syncfs makes every dirty page and inode of the filesystem holding dir durable.
	Syncfs(dir string) error
	// DropCaches writes everything back and empties the page, dentry and inode caches.
	DropCaches() error
}

// OS does the file operations on the real filesystem.
type OS struct{}

// OpenFile opens name as os.OpenFile does.
func (OS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Remove removes a file or an empty directory.
func (OS) Remove(name string) error { return os.Remove(name) }

// Mkdir makes a directory (0755).
func (OS) Mkdir(name string) error { return os.Mkdir(name, 0o755) }

// ReadDirNames lists dir in directory order, as bonnie++'s readdir loop sees it.
func (OS) ReadDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// SyncDir fsyncs dir.
func (OS) SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync of directory %s: %w", dir, err)
	}
	return nil
}

// Syncfs syncs the filesystem holding dir (see Syncfs).
func (OS) Syncfs(dir string) error { return Syncfs(dir) }

// DropCaches empties the caches (measure.DropCaches).
func (OS) DropCaches() error { return measure.DropCaches() }

// Syncfs makes the dirty data of the filesystem mounted on dir durable: syncfs(2), which
// waits for that filesystem alone, where sync(2) would wait for every filesystem of the
// machine (other users' builds, other loop devices).
func Syncfs(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}

// FreeSpace is the free space of the filesystem mounted on dir: bytes an unprivileged writer
// may use and free inodes (0 when the filesystem does not count them, as btrfs).
func FreeSpace(dir string) (avail, inodes uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Ffree), nil
}

// PatternBuf is 1 MiB of incompressible bytes: chunks are cut from it in turn, so that no
// 128 KiB compression extent repeats (btrfs, f2fs) and compressing filesystems store it as is.
func PatternBuf(seed uint64) []byte {
	b := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	for i := 0; i < len(b); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

// FDFile is an open file with a descriptor (*os.File is one): the lean loops make their
// system calls on it directly.
type FDFile interface{ Fd() uintptr }

// Descriptor is f's file descriptor, or -1 when f has none (the tests' fake).
func Descriptor(f File) int {
	if ff, ok := f.(FDFile); ok {
		return int(ff.Fd())
	}
	return -1
}

// Positional does one pread or pwrite of all of buf at off: on the descriptor when there is
// one (fd >= 0), skipping os.File's descriptor locking and its retry loop, as a raw system
// call when raw (see randio's rawIO: only for a loop that allocates nothing and whose requests
// are short), else through f (the tests' fake). A short transfer is an error: with O_DIRECT
// and block-aligned requests inside the file, the kernel transfers all or nothing.
func Positional(f File, fd int, buf []byte, off int64, write, raw bool) error {
	var n int
	var err error
	for {
		switch {
		case fd < 0 && write:
			n, err = f.WriteAt(buf, off)
		case fd < 0:
			n, err = f.ReadAt(buf, off)
		case raw:
			n, err = rawPositional(fd, buf, off, write)
		case write:
			n, err = unix.Pwrite(fd, buf, off)
		default:
			n, err = unix.Pread(fd, buf, off)
		}
		// Go installs its signal handlers with SA_RESTART, but a syscall can still return
		// EINTR on some kernels and filesystems (FUSE, NFS): try again, as os.File does.
		if err != unix.EINTR {
			break
		}
	}
	if err == nil && n != len(buf) {
		err = fmt.Errorf("%d of %d bytes transferred: %w", n, len(buf), io.ErrUnexpectedEOF)
	}
	return err
}

// rawPositional is pread64/pwrite64 as a raw system call (64-bit only: 32-bit ARM passes the
// offset in an aligned register pair, which unix.Pread knows and this does not).
func rawPositional(fd int, buf []byte, off int64, write bool) (int, error) {
	trap := uintptr(unix.SYS_PREAD64)
	if write {
		trap = unix.SYS_PWRITE64
	}
	n, _, errno := unix.RawSyscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(off), 0, 0)
	if errno != 0 {
		return int(n), errno
	}
	return int(n), nil
}
