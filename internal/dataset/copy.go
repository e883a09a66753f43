package dataset

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// CopyOptions tune CopyTree.
type CopyOptions struct {
	NoSymlinks bool // target fs has no symlinks (vfat): skip them and count them as skipped
	// ReadWrite moves every byte through read and write, never copy_file_range: within one
	// xfs or btrfs filesystem copy_file_range makes a reflink (the blocks are shared, nothing is
	// written), so a test meant to read and write data would measure a clone instead.
	ReadWrite bool
	// NoModes leaves permission bits as the target filesystem makes them (vfat has none, and
	// refuses a chmod to modes it cannot represent, such as the sticky bit of /tmp).
	NoModes bool
}

// CopyStats counts what CopyTree did. Dirs does not count dst itself.
type CopyStats struct {
	Files, Dirs, Symlinks, SkippedSymlinks int
	// HardLinks counts regular files recreated as hard links to a file copied earlier (cp -a
	// preserves hard links within the tree); they are not counted in Files or Bytes.
	HardLinks int
	// Special counts device nodes, FIFOs and sockets recreated with mknod.
	Special int
	Bytes   uint64 // regular-file bytes copied
}

// copyBuf is the read/write buffer of CopyTree. From one tmpfs to another (the read/write
// path, see TestCopyReadVsTools with FSBENCH_BENCH=1) 128 KiB and 1 MiB measured the same
// within noise (~260-300 ms for 200 MB, against ~460 ms for cp -a); 128 KiB is kept because
// it stays in L2 cache on small ARM boards and it is what cp uses (coreutils' io_blksize).
const copyBuf = 128 << 10

// CopyTree copies src into dst (dst is created; must not exist) like `cp -a`: regular files,
// directories, symlinks (not followed), permission bits and mtimes (and atimes), hard links
// within the tree, device nodes and FIFOs. Ownership and extended attributes are not copied:
// the benchmark measures data and metadata writes, and vfat refuses chown. Returns at the
// first error, wrapped with the path (so ENOSPC says where). Honours ctx between files and
// between 1 MiB chunks of large files.
//
// Data is moved with copy_file_range where the kernel allows it and with read/write through
// a reused 128 KiB buffer otherwise, as cp does. Since Linux 5.19 copy_file_range between
// different filesystems (the benchmark's case: tmpfs source, target fs destination) fails
// with EXDEV; the first such failure switches the rest of the copy to read/write. Either
// way the writes land in the page cache: the caller times the sync.
func CopyTree(ctx context.Context, src, dst string, opt CopyOptions) (CopyStats, error) {
	c := &copier{opt: opt, useCFR: !opt.ReadWrite, bufSize: copyBuf}
	return c.copyTree(ctx, src, dst)
}

// chmod runs set unless the target has no permission bits.
func (c *copier) chmod(set func() error) error {
	if c.opt.NoModes {
		return nil
	}
	return set()
}

type copier struct {
	opt     CopyOptions
	useCFR  bool // copy_file_range not yet refused
	bufSize int
	d       *dirReader
	buf     []byte
	st      CopyStats
	dstFd   int               // dst root, for linkat
	links   map[devIno]string // first copy of multiply-linked files, relative to dst
}

type devIno struct{ dev, ino uint64 }

func (c *copier) copyTree(ctx context.Context, src, dst string) (CopyStats, error) {
	c.d = newDirReader()
	c.buf = make([]byte, c.bufSize)
	sfd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return CopyStats{}, fmt.Errorf("dataset: copy: open source %s: %w", src, err)
	}
	defer unix.Close(sfd)
	var st unix.Stat_t
	if err := unix.Fstat(sfd, &st); err != nil {
		return CopyStats{}, fmt.Errorf("dataset: copy: stat %s: %w", src, err)
	}
	if err := unix.Mkdir(dst, 0o700); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return CopyStats{}, fmt.Errorf("dataset: copy: destination %s already exists: remove it or choose a new path", dst)
		}
		return CopyStats{}, wrapPathErr("copy: mkdir", dst, err)
	}
	dfd, err := openDir(unix.AT_FDCWD, dst)
	if err != nil {
		return CopyStats{}, fmt.Errorf("dataset: copy: open %s: %w", dst, err)
	}
	defer unix.Close(dfd)
	c.dstFd = dfd
	if err := c.dir(ctx, sfd, dfd, "", dst); err != nil {
		return c.st, err
	}
	if err := c.chmod(func() error { return unix.Fchmod(dfd, st.Mode&0o7777) }); err != nil {
		return c.st, wrapPathErr("copy: chmod", dst, err)
	}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dst, []unix.Timespec{st.Atim, st.Mtim}, 0); err != nil {
		return c.st, wrapPathErr("copy: set times", dst, err)
	}
	return c.st, nil
}

// dir copies the contents of the open directory sfd into dfd. rel is the path relative to
// the destination root (for hard links), dpath the destination path (for messages).
func (c *copier) dir(ctx context.Context, sfd, dfd int, rel, dpath string) error {
	ents, err := c.d.read(sfd)
	if err != nil {
		return fmt.Errorf("dataset: copy: reading directory for %s: %w", dpath, err)
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("dataset: copy to %s: %w", dpath, err)
		}
		name := e.name
		switch e.typ {
		case unix.DT_REG:
			err = c.file(ctx, sfd, dfd, name, rel, dpath)
		case unix.DT_DIR:
			err = c.subdir(ctx, sfd, dfd, name, rel, dpath)
		case unix.DT_LNK:
			err = c.symlink(sfd, dfd, name, dpath)
		default:
			err = c.special(sfd, dfd, name, dpath)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *copier) subdir(ctx context.Context, sfd, dfd int, name, rel, dpath string) error {
	p := joinPath(dpath, name)
	ssub, err := openDir(sfd, name)
	if err != nil {
		return fmt.Errorf("dataset: copy: open source directory for %s: %w", p, err)
	}
	defer unix.Close(ssub)
	var st unix.Stat_t
	if err := unix.Fstat(ssub, &st); err != nil {
		return fmt.Errorf("dataset: copy: stat source of %s: %w", p, err)
	}
	// 0700 while filling it; the real mode is set afterwards (a 0555 directory could not be
	// filled otherwise).
	if err := unix.Mkdirat(dfd, name, 0o700); err != nil {
		return wrapPathErr("copy: mkdir", p, err)
	}
	dsub, err := openDir(dfd, name)
	if err != nil {
		return wrapPathErr("copy: open", p, err)
	}
	defer unix.Close(dsub)
	c.st.Dirs++
	if err := c.dir(ctx, ssub, dsub, joinPath(rel, name), p); err != nil {
		return err
	}
	if err := c.chmod(func() error { return unix.Fchmod(dsub, st.Mode&0o7777) }); err != nil {
		return wrapPathErr("copy: chmod", p, err)
	}
	// Times last: creating the entries changed the directory's mtime.
	if err := unix.UtimesNanoAt(dfd, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return wrapPathErr("copy: set times", p, err)
	}
	return nil
}

func (c *copier) file(ctx context.Context, sfd, dfd int, name, rel, dpath string) error {
	in, err := unix.Openat(sfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("dataset: copy: open source of %s: %w", joinPath(dpath, name), err)
	}
	defer unix.Close(in)
	var st unix.Stat_t
	if err := unix.Fstat(in, &st); err != nil {
		return fmt.Errorf("dataset: copy: stat source of %s: %w", joinPath(dpath, name), err)
	}
	if st.Nlink > 1 {
		key := devIno{uint64(st.Dev), uint64(st.Ino)}
		if first, ok := c.links[key]; ok {
			if err := unix.Linkat(c.dstFd, first, dfd, name, 0); err != nil {
				return wrapPathErr("copy: link", joinPath(dpath, name), err)
			}
			c.st.HardLinks++
			return nil
		}
		if c.links == nil {
			c.links = make(map[devIno]string)
		}
		c.links[key] = joinPath(rel, name)
	}
	out, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return wrapPathErr("copy: create", joinPath(dpath, name), err)
	}
	n, err := c.data(ctx, in, out, uint64(st.Size))
	c.st.Bytes += n
	if err == nil {
		// Explicit chmod: open's mode is filtered by the umask.
		if err = c.chmod(func() error { return unix.Fchmod(out, st.Mode&0o7777) }); err != nil {
			err = fmt.Errorf("chmod: %w", err)
		}
	}
	if cerr := unix.Close(out); err == nil && cerr != nil {
		err = fmt.Errorf("close: %w", cerr)
	}
	if err == nil {
		if err = unix.UtimesNanoAt(dfd, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			err = fmt.Errorf("set times: %w", err)
		}
	}
	if err != nil {
		return wrapPathErr("copy: writing", joinPath(dpath, name), err)
	}
	c.st.Files++
	return nil
}

// cfrChunk bounds one copy_file_range call so that ctx is checked every 1 MiB.
const cfrChunk = 1 << 20

// data copies in to out and returns the bytes copied. size (from fstat) only lets the
// read/write loop skip the final read that would return 0.
func (c *copier) data(ctx context.Context, in, out int, size uint64) (uint64, error) {
	var done uint64
	for c.useCFR {
		if done > 0 {
			if err := ctx.Err(); err != nil {
				return done, err
			}
		}
		n, err := unix.CopyFileRange(in, nil, out, nil, cfrChunk, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			// Not possible between these files (EXDEV: different filesystems; ENOSYS, EOPNOTSUPP,
			// EINVAL: old kernels, special files): read/write from here on.
			if done == 0 && (err == unix.EXDEV || err == unix.ENOSYS || err == unix.EOPNOTSUPP || err == unix.EINVAL) {
				c.useCFR = false
				break
			}
			return done, err
		}
		if n == 0 {
			return done, nil
		}
		done += uint64(n)
	}
	for {
		if done > 0 {
			if err := ctx.Err(); err != nil {
				return done, err
			}
		}
		n, err := unix.Read(in, c.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, fmt.Errorf("read source: %w", err)
		}
		if n == 0 {
			return done, nil
		}
		if err := writeAll(out, c.buf[:n]); err != nil {
			return done, err
		}
		done += uint64(n)
		if n < len(c.buf) && done == size {
			return done, nil // a short read at the known size: the next read would return 0
		}
	}
}

func (c *copier) symlink(sfd, dfd int, name, dpath string) error {
	p := joinPath(dpath, name)
	if c.opt.NoSymlinks {
		c.st.SkippedSymlinks++
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("dataset: copy: stat source of %s: %w", p, err)
	}
	target := c.buf[:min(len(c.buf), int(st.Size)+1)]
	n, err := unix.Readlinkat(sfd, name, target)
	if err != nil {
		return fmt.Errorf("dataset: copy: readlink source of %s: %w", p, err)
	}
	if n >= len(target) {
		return fmt.Errorf("dataset: copy: source of %s changed while being copied", p)
	}
	if err := unix.Symlinkat(string(target[:n]), dfd, name); err != nil {
		return wrapPathErr("copy: symlink", p, err)
	}
	if err := unix.UtimesNanoAt(dfd, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return wrapPathErr("copy: set times", p, err)
	}
	c.st.Symlinks++
	return nil
}

func (c *copier) special(sfd, dfd int, name, dpath string) error {
	p := joinPath(dpath, name)
	var st unix.Stat_t
	if err := unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("dataset: copy: stat source of %s: %w", p, err)
	}
	if err := unix.Mknodat(dfd, name, st.Mode, int(st.Rdev)); err != nil {
		return wrapPathErr("copy: mknod (device nodes need root and a filesystem that supports them)", p, err)
	}
	if err := c.chmod(func() error { return unix.Fchmodat(dfd, name, st.Mode&0o7777, 0) }); err != nil {
		return wrapPathErr("copy: chmod", p, err)
	}
	if err := unix.UtimesNanoAt(dfd, name, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return wrapPathErr("copy: set times", p, err)
	}
	c.st.Special++
	return nil
}
