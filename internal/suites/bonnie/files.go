package bonnie

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites/suitekit"
)

// The create, stat and delete tests: empty files made in name order or in random order, then
// stat'ed and removed, each call timed.

// dirFDs names the files of the create, stat and delete tests relative to open descriptors
// of their directories (openat, fstatat, unlinkat), as bonnie++ does after chdir(2) into the
// test directory, and with the system calls alone: os.OpenFile also registers every file
// with the network poller (an epoll_ctl that fails for regular files) and allocates an
// os.File, and an absolute path makes the kernel walk every component of the mount point's
// path. At 20 µs per file, bonnie++'s create loop was 15 to 25 % faster than fsbench's
// before. Directories are opened on first use.
type dirFDs struct{ fds map[string]int }

// at returns the descriptor of path's directory and path's last element.
func (d *dirFDs) at(path string) (int, string, error) {
	dir, base := ".", path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		dir, base = path[:i], path[i+1:]
		if i == 0 {
			dir = "/"
		}
	}
	fd, ok := d.fds[dir]
	if !ok {
		var err error
		if fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			return -1, "", &os.PathError{Op: "open", Path: dir, Err: err}
		}
		if d.fds == nil {
			d.fds = map[string]int{}
		}
		d.fds[dir] = fd
	}
	return fd, base, nil
}

func (d *dirFDs) create(path string) error {
	dfd, base, err := d.at(path)
	if err != nil {
		return err
	}
	fd, err := unix.Openat(dfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := unix.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: path, Err: err}
	}
	return nil
}

func (d *dirFDs) unlink(path string) error {
	dfd, base, err := d.at(path)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dfd, base, 0); err != nil {
		return &os.PathError{Op: "unlink", Path: path, Err: err}
	}
	return nil
}

// close closes the directories; a directory must be closed before it is removed.
func (d *dirFDs) close() {
	for dir, fd := range d.fds {
		unix.Close(fd)
		delete(d.fds, dir)
	}
}

// realDirs returns a dirFDs when ops is the real filesystem (the tests' fake counts calls
// through ops instead).
func realDirs(ops suitekit.FileOps) *dirFDs {
	if _, ok := ops.(suitekit.OS); ok {
		return &dirFDs{}
	}
	return nil
}

const (
	bonnieSeqDir  = "bonnie-seq"
	bonnieRandDir = "bonnie-rand"
)

// fileSet is the files of a create test: their paths in creation order, in dirs directories.
type fileSet struct {
	dirs  []string
	paths []string
}

// makeFileSet names n files in d directories under root. Sequential names start with their
// number, so that name order is creation order (bonnie++: 7 digits then random letters);
// random names start with random letters and are created in a shuffled order.
func makeFileSet(root string, n, d int, random bool, seed uint64) fileSet {
	d = max(d, 1)
	rng := rand.New(rand.NewPCG(seed, 77))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	rnd := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	var fs fileSet
	for i := 0; i < d; i++ {
		fs.dirs = append(fs.dirs, filepath.Join(root, fmt.Sprintf("%05d", i)))
	}
	for i := 0; i < n; i++ {
		var dir, name string
		if random {
			dir, name = fs.dirs[rng.IntN(d)], rnd(12)+fmt.Sprintf("%07d", i)
		} else {
			dir, name = fs.dirs[i*d/n], fmt.Sprintf("%07d", i)+rnd(12)
		}
		fs.paths = append(fs.paths, filepath.Join(dir, name))
	}
	if random {
		rng.Shuffle(len(fs.paths), func(i, j int) { fs.paths[i], fs.paths[j] = fs.paths[j], fs.paths[i] })
	}
	return fs
}

// createFiles makes the directories (not timed per file) and the empty files, then syncfs.
func createFiles(ctx context.Context, ops suitekit.FileOps, root string, set fileSet) (suitekit.Phase, error) {
	var p suitekit.Phase
	start := time.Now()
	if err := ops.Mkdir(root); err != nil {
		return p, err
	}
	for _, d := range set.dirs {
		if err := ops.Mkdir(d); err != nil {
			return p, err
		}
	}
	create := func(path string) error {
		f, err := ops.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	if dirs := realDirs(ops); dirs != nil {
		defer dirs.close()
		create = dirs.create
	}
	if err := eachTimed(ctx, &p, set.paths, create); err != nil {
		return p, fmt.Errorf("creating the files: %w", err)
	}
	p.Work = time.Since(start)
	return p, ops.Syncfs(root)
}

// listFiles returns the files in readdir order, directory by directory (not timed).
func listFiles(ops suitekit.FileOps, set fileSet) ([]string, error) {
	var out []string
	for _, d := range set.dirs {
		names, err := ops.ReadDirNames(d)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out, nil
}

// A dirEntry is a file named relative to an open descriptor of its directory, resolved before
// the timing: the timed loop then does the system call alone.
type dirEntry struct {
	dfd  int
	name string
}

// resolve opens the directories of paths (kept in d) and returns the files as dirEntries, in
// the same order. bonnie++ sorts its random order before its timer starts; building and
// parsing paths inside fsbench's timing cost a fifth of a stat's time.
func (d *dirFDs) resolve(paths []string) ([]dirEntry, error) {
	out := make([]dirEntry, 0, len(paths))
	for _, path := range paths {
		fd, base, err := d.at(path)
		if err != nil {
			return nil, err
		}
		out = append(out, dirEntry{fd, base})
	}
	return out, nil
}

// statEntries stats each entry in order, timing each call.
func statEntries(ctx context.Context, ents []dirEntry) (suitekit.Phase, error) {
	var p suitekit.Phase
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		var st unix.Stat_t
		t := time.Now()
		err := unix.Fstatat(e.dfd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		p.Lat.Add(time.Since(t))
		if err != nil {
			return p, &os.PathError{Op: "stat", Path: e.name, Err: err}
		}
		p.Ops++
	}
	return p, nil
}

// statDirs stats every file of dirs in readdir order, reading each directory as it goes, as
// bonnie++'s readdir(3) loop does: a buffer of directory entries at a time from getdents64(2),
// each name stat'ed relative to the directory's descriptor. Listing every name first
// (Readdirnames) and joining paths cost fsbench a third of bonnie++'s rate on 262,144 files
// (316-369 k against 470 k stats/s on ext4 here); this loop did 460-520 k.
func statDirs(ctx context.Context, dirs []string) (suitekit.Phase, error) {
	var p suitekit.Phase
	buf := make([]byte, 64<<10)
	for _, d := range dirs {
		if err := statDir(ctx, &p, d, buf); err != nil {
			return p, err
		}
	}
	return p, nil
}

func statDir(ctx context.Context, p *suitekit.Phase, dir string, buf []byte) error {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	for {
		n, err := unix.Getdents(dfd, buf)
		if err != nil {
			return &os.PathError{Op: "getdents", Path: dir, Err: err}
		}
		if n <= 0 {
			return nil
		}
		for off := 0; off < n; {
			name, reclen, ok := direntName(buf[off:n])
			if !ok {
				return fmt.Errorf("getdents %s: a malformed entry at offset %d", dir, off)
			}
			off += reclen
			if name == "." || name == ".." {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			var st unix.Stat_t
			t := time.Now()
			err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
			p.Lat.Add(time.Since(t))
			if err != nil {
				return &os.PathError{Op: "stat", Path: filepath.Join(dir, name), Err: err}
			}
			p.Ops++
		}
	}
}

// direntName reads the linux_dirent64 at the start of b (d_ino u64, d_off s64, d_reclen u16,
// d_type u8, then the NUL-terminated name) and returns its name and length.
func direntName(b []byte) (string, int, bool) {
	const nameOff = 19
	if len(b) < nameOff {
		return "", 0, false
	}
	reclen := int(binary.NativeEndian.Uint16(b[16:18]))
	if reclen <= nameOff || reclen > len(b) {
		return "", 0, false
	}
	name := b[nameOff:reclen]
	if i := slices.Index(name, 0); i >= 0 {
		name = name[:i]
	}
	return string(name), reclen, true
}

// eachTimed runs op on every path in order, timing each call into p's latencies and counting
// the successful ones; it stops at the first error (wrapped with the path: the descriptor-
// relative calls return a bare errno) or when ctx is done.
func eachTimed(ctx context.Context, p *suitekit.Phase, paths []string, op func(string) error) error {
	for _, path := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := time.Now()
		err := op(path)
		p.Lat.Add(time.Since(t))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		p.Ops++
	}
	return nil
}

// deleteFiles unlinks each path in order, removes the directories and root, then syncfs.
func deleteFiles(ctx context.Context, ops suitekit.FileOps, root string, set fileSet, paths []string) (suitekit.Phase, error) {
	var p suitekit.Phase
	start := time.Now()
	op := ops.Remove
	dirs := realDirs(ops)
	if dirs != nil {
		op = dirs.unlink
	}
	err := eachTimed(ctx, &p, paths, op)
	if dirs != nil {
		dirs.close()
	}
	if err != nil {
		return p, err
	}
	for _, d := range set.dirs {
		if err := ops.Remove(d); err != nil {
			return p, err
		}
	}
	if err := ops.Remove(root); err != nil {
		return p, err
	}
	p.Work = time.Since(start)
	return p, ops.Syncfs(filepath.Dir(root))
}

// shuffled returns paths in a random order of its own (bonnie++ stats and deletes the random
// files in an order unrelated to their creation).
func shuffled(paths []string, seed uint64) []string {
	out := slices.Clone(paths)
	rng := rand.New(rand.NewPCG(seed, 99))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// createTest runs one of the six create/stat/delete tests.
func (r rep) createTest(ctx context.Context, test string) ([]results.Measurement, error) {
	random := test == RandCreate || test == RandStat || test == RandDelete
	dir := bonnieSeqDir
	if random {
		dir = bonnieRandDir
	}
	create := test == SeqCreate || test == RandCreate
	keep := []string{dir}
	if create {
		keep = nil
	}
	if err := r.Clear(ctx, keep...); err != nil {
		return nil, err
	}
	s, err := r.sizing()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(r.Mountpoint(), dir)
	if !create {
		// As many files as the create test made (the free inodes have changed since).
		n, err := countFiles(suitekit.OS{}, root)
		if err != nil {
			return nil, fmt.Errorf("the files of the create test: %w", err)
		}
		if s.files, s.fileNote = n, ""; n != r.p.Files {
			s.fileNote = fmt.Sprintf("%d files instead of %d (scaled to the free inodes)", n, r.p.Files)
		}
	}
	set := makeFileSet(root, s.files, r.p.Dirs, random, r.p.Seed)
	stat := test == SeqStat || test == RandStat
	// The random order is drawn, and the random stat's files resolved, before the timing, as
	// bonnie++ sorts its random order before its timer starts.
	var order []dirEntry
	if stat && random {
		dirs := &dirFDs{}
		defer dirs.close()
		if order, err = dirs.resolve(shuffled(set.paths, r.p.Seed+1)); err != nil {
			return nil, err
		}
	}
	var p suitekit.Phase
	m, err := r.timedRate(test, func() error {
		var err error
		switch {
		case create:
			p, err = createFiles(ctx, suitekit.OS{}, root, set)
		case stat && random:
			p, err = statEntries(ctx, order)
		case stat:
			p, err = statDirs(ctx, set.dirs)
		default:
			var paths []string
			if paths, err = r.orderFor(set, random); err == nil {
				p, err = deleteFiles(ctx, suitekit.OS{}, root, set, paths)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	m = suitekit.Rate(m, p, float64(p.Ops), catalog.FilesPerSec, s.fileNote)
	bonnieExtra(&m, s, r.p)
	return []results.Measurement{m}, nil
}

// countFiles counts the files in the directories under root (not timed).
func countFiles(ops suitekit.FileOps, root string) (int, error) {
	dirs, err := ops.ReadDirNames(root)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range dirs {
		names, err := ops.ReadDirNames(filepath.Join(root, d))
		if err != nil {
			return 0, err
		}
		n += len(names)
	}
	return n, nil
}

// orderFor is the order of the delete tests: readdir order for the sequential files (as
// bonnie++), a fresh random order for the random ones. Listing the directory is part of the
// timed work for the sequential test, as bonnie++'s readdir loop is. (The stat tests walk
// the directories themselves: statDirs, statEntries.)
func (r rep) orderFor(set fileSet, random bool) ([]string, error) {
	if random {
		return shuffled(set.paths, r.p.Seed+1), nil
	}
	return listFiles(suitekit.OS{}, set)
}

// timedRate is r.Timed for tests whose amount is counted in the phase, not known before.
func (r rep) timedRate(test string, fn func() error) (results.Measurement, error) {
	return r.Timed(test, 0, fn)
}
