package aging

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"

	"golang.org/x/sys/unix"
)

// Options are the inputs of Age beyond the spec.
type Options struct {
	// Seed makes the churn: the same seed, spec and capacity give the same tree.
	Seed uint64
	// Capacity is what the filesystem holds for files, in bytes: the free space statfs shows on
	// the freshly made filesystem (its total less what mkfs itself took: f2fs keeps 22 % of a
	// 512 MiB device as overprovision, ext4 its journal). Fullness and churn are shares of it,
	// so that "80 % full" leaves every filesystem the same fifth of its own room, and a
	// filesystem whose statfs total it could never fill is not full before any churn. Passing it in (rather than asking statfs during the churn) keeps the tree a
	// function of the seed: free space as statfs sees it varies with delayed allocation.
	Capacity uint64
	// Log receives a line now and then; may be nil.
	Log func(format string, args ...any)
	// Reclaim, when set, gives back the space the filesystem still holds for deleted data
	// (fs.Reclaimer: nilfs2's checkpoints). The churn calls it when a write finds the
	// filesystem full, then tries that write once more, and before it removes anything to
	// make room for the tests.
	Reclaim func(context.Context) error
}

// Result is what an aging did.
type Result struct {
	Spec string
	// Seconds is the wall time of the whole aging, fill and churn.
	Seconds float64
	// FillBytes were written to reach the fullness, ChurnBytes after it.
	FillBytes  uint64
	ChurnBytes uint64
	// Files and TreeBytes are the aged tree's regular files and their logical size at the end.
	Files     int
	TreeBytes uint64
	// Fsyncs counts fsync, fdatasync and syncfs calls.
	Fsyncs  int
	Renames int
	Deletes int
	// Reclaims counts the calls of Options.Reclaim.
	Reclaims int
	// EndedEarly says why the churn stopped before its amount (the filesystem was full); "" when
	// it completed. Trimmed says what was removed afterwards to leave the tests their room.
	EndedEarly, Trimmed string
}

// blockSize is what a file is accounted for: its size rounded up to 4 KiB blocks, the block of
// every filesystem fsbench makes on a block device. Fullness is reckoned this way rather than
// from statfs so that the tree does not depend on the filesystem's metadata or timing.
const blockSize = 4096

func blocks(size int64) uint64 { return uint64((size + blockSize - 1) / blockSize * blockSize) }

// Age ages the tree under dir (made if missing) with spec's churn. The filesystem stays as the
// churn leaves it; the tree is deterministic in (spec, opt.Seed, opt.Capacity). A full
// filesystem ends the churn early (Result.EndedEarly), which is not an error.
func Age(ctx context.Context, dir string, spec Spec, opt Options) (Result, error) {
	if opt.Capacity < 1<<20 {
		return Result{}, fmt.Errorf("aging needs a capacity of at least 1 MiB (got %d bytes)", opt.Capacity)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, err
	}
	a := &ager{ctx: ctx, dir: dir, r: rand.New(rand.NewPCG(opt.Seed, 0x616765)), seed: opt.Seed,
		capacity: opt.Capacity, target: uint64(spec.Fullness * float64(opt.Capacity)),
		churnTarget: uint64(spec.Churn * float64(opt.Capacity)), log: opt.Log, dirs: map[string]bool{}, reclaim: opt.Reclaim}
	a.res.Spec = spec.String()
	if a.log == nil {
		a.log = func(string, ...any) {}
	}
	// No file larger than 1/64 of the capacity: on a small device one 100 MiB library would be
	// the whole tree, where on a board's card it is one file among thousands.
	a.maxFile = int64(opt.Capacity / 64)
	start := time.Now()
	var err error
	switch spec.Profile {
	case Updates:
		err = a.updates()
	case Logs:
		err = a.logs()
	case Database:
		err = a.database()
	case Geriatrix:
		err = a.geriatrix()
	default:
		err = fmt.Errorf("unknown aging profile %q", spec.Profile)
	}
	if errors.Is(err, unix.ENOSPC) {
		a.res.EndedEarly = fmt.Sprintf("the filesystem was full after %d of %d churn bytes (%v)", a.res.ChurnBytes, a.churnTarget, err)
		err = nil
	}
	if err == nil {
		// The tests that follow need the space the fullness leaves them. A filesystem whose
		// metadata takes more than the 4 KiB blocks reckoned here (f2fs's inode is a block of
		// its own; btrfs duplicates its metadata) can be fuller than the spec by statfs: give
		// the space back the way a full system's owner would, removing the newest packages
		// (or files). The tree then differs from another filesystem's, and Trimmed says so.
		need := uint64(float64(opt.Capacity) * (1 - spec.Fullness) * 0.9)
		var n int
		if n, err = a.makeRoom(need); n > 0 {
			a.res.Trimmed = fmt.Sprintf("%d packages or files were removed after the churn so that the tests have the %s the fullness leaves", n, bytesize.Format(need))
		}
	}
	if err == nil {
		err = a.syncfs()
	}
	a.res.Seconds = time.Since(start).Seconds()
	if err != nil {
		return a.res, fmt.Errorf("aging %s: %w", dir, err)
	}
	l, lerr := List(dir)
	if lerr != nil {
		return a.res, lerr
	}
	for _, e := range l {
		if !e.Dir {
			a.res.Files++
			a.res.TreeBytes += uint64(e.Size)
		}
	}
	return a.res, nil
}

// makeRoom removes packages, newest first, or Geriatrix files until statfs shows need bytes
// available; it returns how many it removed.
func (a *ager) makeRoom(need uint64) (int, error) {
	n := 0
	reclaimed := false
	for {
		if err := a.syncfs(); err != nil {
			return n, err
		}
		var st unix.Statfs_t
		if err := unix.Statfs(a.dir, &st); err != nil {
			return n, err
		}
		// Bfree, not Bavail: fsbench runs as root, which may use ext4's reserved blocks.
		if st.Bfree*uint64(st.Bsize) >= need {
			return n, nil
		}
		if !reclaimed && a.reclaim != nil {
			// Space the filesystem still holds for deleted data first: removing packages
			// would change the tree for nothing.
			reclaimed = true
			if err := a.doReclaim(); err != nil {
				return n, err
			}
			continue
		}
		for range 8 {
			switch {
			case len(a.pkgs) > 0:
				p := a.pkgs[len(a.pkgs)-1]
				a.pkgs = a.pkgs[:len(a.pkgs)-1]
				for _, f := range p.files {
					os.Remove(filepath.Join(a.dir, f.rel) + ".dpkg-new")
				}
				if err := a.purge(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					return n, err
				}
			case len(a.gfiles) > 0:
				f := a.gfiles[len(a.gfiles)-1]
				a.gfiles = a.gfiles[:len(a.gfiles)-1]
				if err := a.remove(f.path, f.size); err != nil {
					return n, err
				}
			default:
				return n, nil
			}
			n++
		}
	}
}

type ager struct {
	ctx         context.Context
	dir         string
	r           *rand.Rand
	seed        uint64
	capacity    uint64
	target      uint64 // accounted bytes at the fullness
	churnTarget uint64
	maxFile     int64
	used        uint64  // accounted bytes of the tree now
	filling     bool    // writes count as fill, not churn
	versions    uint64  // content streams handed out
	packages    int     // packages made
	pkgs        []*pkg  // the packages installed
	gfiles      []gfile // the Geriatrix files
	dirs        map[string]bool
	log         func(string, ...any)
	res         Result
	buf         []byte
	reclaim     func(context.Context) error
	// sinceReclaim is what was written since the last reclaim: a write that finds the
	// filesystem full right after one has nothing more to gain from another.
	sinceReclaim uint64
}

func (a *ager) doReclaim() error {
	a.res.Reclaims++
	a.sinceReclaim = 0
	if err := a.reclaim(a.ctx); err != nil {
		return fmt.Errorf("reclaiming deleted data's space: %w", err)
	}
	return nil
}

// wrote counts n bytes written.
func (a *ager) wrote(n int64) {
	a.sinceReclaim += uint64(n)
	if a.filling {
		a.res.FillBytes += uint64(n)
	} else {
		a.res.ChurnBytes += uint64(n)
	}
}

func (a *ager) churnLeft() bool { return a.res.ChurnBytes < a.churnTarget && a.ctx.Err() == nil }

// content fills b with the next content stream: incompressible bytes, as most of a rootfs's
// bytes are once packed (libraries and executables compress to about half; that share is left
// to the dataset's tree, the aged tree is for layout).
func (a *ager) content(b []byte) {
	a.versions++
	var key [32]byte
	for i := range 8 {
		key[i] = byte(a.seed >> (8 * i))
		key[8+i] = byte(a.versions >> (8 * i))
	}
	rand.NewChaCha8(key).Read(b)
}

// writeFile creates path (replacing nothing) with size bytes of new content; fsync when asked.
func (a *ager) writeFile(path string, size int64, fsync bool) error {
	if int64(cap(a.buf)) < size {
		a.buf = make([]byte, size)
	}
	b := a.buf[:size]
	a.content(b)
	return a.writeBytes(path, b, fsync)
}

// writeBytes writes b to path; when the filesystem is full and Options.Reclaim can give space
// back, it reclaims and writes once more.
func (a *ager) writeBytes(path string, b []byte, fsync bool) error {
	return a.retry(func() error { return a.writeOnce(path, b, fsync) })
}

// retry runs op; when the filesystem is full and Options.Reclaim can give space back (a
// log-structured filesystem fills with old metadata on fsyncs and renames too, not only on
// writes), it reclaims and runs op once more. Not right after a reclaim: nothing was written
// since, so another would give nothing back.
func (a *ager) retry(op func() error) error {
	err := op()
	if errors.Is(err, unix.ENOSPC) && a.reclaim != nil && a.sinceReclaim > 0 {
		if rerr := a.doReclaim(); rerr != nil {
			return rerr
		}
		err = op()
	}
	return err
}

func (a *ager) writeOnce(path string, b []byte, fsync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	a.wrote(int64(len(b)))
	if fsync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		a.res.Fsyncs++
	}
	return f.Close()
}

func (a *ager) fsyncPath(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	a.res.Fsyncs++
	return f.Sync()
}

func (a *ager) remove(path string, size int64) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	a.res.Deletes++
	a.used -= blocks(size)
	return nil
}

func (a *ager) syncfs() error {
	f, err := os.Open(a.dir)
	if err != nil {
		return err
	}
	defer f.Close()
	a.res.Fsyncs++
	return unix.Syncfs(int(f.Fd()))
}

// ---- updates: packages replaced release after release, the dpkg way ----

type pkgFile struct {
	rel  string
	size int64
}

type pkg struct {
	name    string
	version int
	dirs    []string // where its files lie
	files   []pkgFile
}

var topDirs = []string{"bin", "lib", "lib", "share", "share", "share", "sbin", "libexec", "include"}

// filesPerDir is how many files a Debian directory holds on average: 143,540 files in 17,563
// directories on the system the distributions come from.
const filesPerDir = 8

// newPackage draws a package: its number of files, its directories (one per filesPerDir files,
// each as deep as the Debian distribution of file depths says), and each file's size. Files
// beyond budget bytes are left out (one file at least), so that one package is never more
// than the budget: a firmware package of thousands of files would otherwise be the whole tree
// of a small device, and its upgrade (old and new side by side until the renames) would need
// twice its space.
func (a *ager) newPackage(n int, budget uint64) *pkg {
	p := &pkg{name: fmt.Sprintf("pkg%04d", n), version: 1}
	nf := packageFiles(a.r)
	for range max(1, nf/filesPerDir) {
		p.dirs = append(p.dirs, a.pkgDir(p.name))
	}
	var b uint64
	for i := range nf {
		f := pkgFile{rel: a.pkgPath(p, i), size: fileSize(a.r, a.maxFile)}
		if b += blocks(f.size); i > 0 && b > budget {
			break
		}
		p.files = append(p.files, f)
	}
	return p
}

// pkgDir draws a directory of a package, as deep as a file's depth less one:
// usr/<top>/<package>/...
func (a *ager) pkgDir(name string) string {
	depth := fileDepth(a.r) - 1
	parts := []string{"usr", topDirs[a.r.IntN(len(topDirs))]}
	if a.r.IntN(20) == 0 {
		parts = []string{"etc"}
	}
	if depth > len(parts) {
		parts = append(parts, name)
	}
	for len(parts) < depth {
		parts = append(parts, fmt.Sprintf("d%d", a.r.IntN(4)))
	}
	return filepath.Join(parts...)
}

// pkgPath places file i of a package in one of its directories.
func (a *ager) pkgPath(p *pkg, i int) string {
	return filepath.Join(p.dirs[a.r.IntN(len(p.dirs))], fmt.Sprintf("%s.%d", p.name, i))
}

// mkdirs makes the directories of rel's parent, accounting a block for each new one (a
// directory takes at least a block on ext4, xfs and f2fs).
func (a *ager) mkdirs(rel string) error {
	d := filepath.Dir(rel)
	if a.dirs[d] {
		return nil
	}
	if err := a.retry(func() error { return os.MkdirAll(filepath.Join(a.dir, d), 0o755) }); err != nil {
		return err
	}
	for ; d != "." && d != "/" && !a.dirs[d]; d = filepath.Dir(d) {
		a.dirs[d] = true
		a.used += blockSize
	}
	return nil
}

func (p *pkg) bytes() uint64 {
	var n uint64
	for _, f := range p.files {
		n += blocks(f.size)
	}
	return n
}

// unpack writes a package's files the way dpkg does: every file to <name>.dpkg-new, then each
// of them fsynced, then each renamed over the old one (an atomic replacement), then the files
// the new release dropped removed. old is the release being replaced (nil on install).
func (a *ager) unpack(p, old *pkg) error {
	for _, f := range p.files {
		if err := a.mkdirs(f.rel); err != nil {
			return err
		}
		if err := a.writeFile(filepath.Join(a.dir, f.rel)+".dpkg-new", f.size, false); err != nil {
			// dpkg's rollback: the new files go, the old release stays.
			for _, g := range p.files {
				os.Remove(filepath.Join(a.dir, g.rel) + ".dpkg-new")
			}
			return err
		}
	}
	for _, f := range p.files {
		if err := a.retry(func() error { return a.fsyncPath(filepath.Join(a.dir, f.rel) + ".dpkg-new") }); err != nil {
			return err
		}
	}
	for _, f := range p.files {
		path := filepath.Join(a.dir, f.rel)
		if err := a.retry(func() error { return os.Rename(path+".dpkg-new", path) }); err != nil {
			return err
		}
		a.res.Renames++
	}
	a.used += p.bytes()
	if old != nil {
		a.used -= old.bytes()
		for _, f := range old.files {
			if !slices.ContainsFunc(p.files, func(g pkgFile) bool { return g.rel == f.rel }) {
				if err := os.Remove(filepath.Join(a.dir, f.rel)); err != nil {
					return err
				}
				a.res.Deletes++
			}
		}
	}
	return nil
}

// release draws the next release of p: sizes move by -10 % to +15 %, one file in twenty goes and
// about as many come.
func (a *ager) release(p *pkg) *pkg {
	q := &pkg{name: p.name, version: p.version + 1, dirs: p.dirs}
	next := 0
	for _, f := range p.files {
		next = max(next, 1+fileIndex(f.rel))
		if len(p.files) > 1 && a.r.IntN(20) == 0 {
			continue
		}
		s := min(int64(float64(f.size)*(0.9+0.25*a.r.Float64())), a.maxFile)
		q.files = append(q.files, pkgFile{rel: f.rel, size: s})
	}
	for a.r.IntN(20) == 0 {
		q.files = append(q.files, pkgFile{rel: a.pkgPath(q, next), size: fileSize(a.r, a.maxFile)})
		next++
	}
	return q
}

func fileIndex(rel string) int {
	var n int
	fmt.Sscanf(rel[strings.LastIndexByte(rel, '.')+1:], "%d", &n)
	return n
}

// purge removes a package's files (apt autoremove).
func (a *ager) purge(p *pkg) error {
	for _, f := range p.files {
		if err := a.remove(filepath.Join(a.dir, f.rel), f.size); err != nil {
			return err
		}
	}
	return nil
}

// install fills the tree with new packages up to target accounted bytes.
func (a *ager) install(pkgs *[]*pkg, target uint64) error {
	for a.used < target {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		a.packages++
		p := a.newPackage(a.packages, min(target-a.used, a.target/16))
		if err := a.unpack(p, nil); err != nil {
			return err
		}
		*pkgs = append(*pkgs, p)
	}
	return nil
}

func (a *ager) updates() error {
	a.filling = true
	if err := a.install(&a.pkgs, a.target); err != nil {
		return err
	}
	a.filling = false
	for a.churnLeft() {
		switch {
		case a.used > a.target+a.target/50 && len(a.pkgs) > 1:
			// Grown past the fullness: a package is removed, as autoremove does.
			i := a.r.IntN(len(a.pkgs))
			if err := a.purge(a.pkgs[i]); err != nil {
				return err
			}
			a.pkgs = slices.Delete(a.pkgs, i, i+1)
		case a.used < a.target-a.target/50:
			if err := a.install(&a.pkgs, a.target); err != nil {
				return err
			}
		default:
			i := a.r.IntN(len(a.pkgs))
			q := a.release(a.pkgs[i])
			if err := a.unpack(q, a.pkgs[i]); err != nil {
				return err
			}
			a.pkgs[i] = q
		}
	}
	return a.ctx.Err()
}

// ---- logs: appends, rotations, compressions ----

var logNames = []string{"syslog", "syslog", "syslog", "auth.log", "kern.log", "daemon.log", "dpkg.log", "messages"}

var logWords = strings.Fields("started stopped session opened closed for user root by uid connection from port accepted publickey failed link up down eth0 carrier dhcp lease renewed kernel usb new device number using driver mmc0 card inserted")

func (a *ager) logs() error {
	// Six logs, each at most rotateAt plain, as much again in .1, and three small .gz: about
	// fifteen times rotateAt when the rotation has come round.
	rotateAt := int64(max(16<<10, a.capacity/200))
	reserve := 15 * uint64(rotateAt)
	a.filling = true
	if err := a.install(&a.pkgs, a.target-min(reserve, a.target/2)); err != nil {
		return err
	}
	a.filling = false
	logDir := filepath.Join(a.dir, "var", "log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	sizes := map[string]int64{}
	var line bytes.Buffer
	for batch := 0; a.churnLeft(); batch++ {
		name := logNames[a.r.IntN(len(logNames))]
		line.Reset()
		for range 1 + a.r.IntN(50) {
			t := uint64(batch)*7 + uint64(a.r.IntN(7))
			fmt.Fprintf(&line, "Nov %2d %02d:%02d:%02d board %s[%d]:", 1+t/86400%28, t/3600%24, t/60%60, t%60, strings.TrimSuffix(name, ".log"), 100+a.r.IntN(900))
			for range 3 + a.r.IntN(12) {
				line.WriteString(" " + logWords[a.r.IntN(len(logWords))])
			}
			line.WriteByte('\n')
		}
		path := filepath.Join(logDir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			return err
		}
		_, err = f.Write(line.Bytes())
		if err == nil && batch%10 == 0 {
			// journald and rsyslog's sync: a log's appends reach the card now and then.
			err = unix.Fdatasync(int(f.Fd()))
			a.res.Fsyncs++
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		a.wrote(int64(line.Len()))
		a.used += blocks(sizes[name]+int64(line.Len())) - blocks(sizes[name])
		sizes[name] += int64(line.Len())
		if sizes[name] >= rotateAt {
			if err := a.rotate(path); err != nil {
				return err
			}
			sizes[name] = 0
		}
	}
	return a.ctx.Err()
}

// rotate does what logrotate does with compress, delaycompress and rotate 4: the oldest goes,
// each .N.gz becomes .N+1.gz, .1 is compressed to .2.gz, the log becomes .1, and a new log starts.
func (a *ager) rotate(path string) error {
	const keep = 4
	oldest := fmt.Sprintf("%s.%d.gz", path, keep)
	if fi, err := os.Stat(oldest); err == nil {
		if err := a.remove(oldest, fi.Size()); err != nil {
			return err
		}
	}
	for i := keep - 1; i >= 2; i-- {
		if err := os.Rename(fmt.Sprintf("%s.%d.gz", path, i), fmt.Sprintf("%s.%d.gz", path, i+1)); err == nil {
			a.res.Renames++
		} else if !os.IsNotExist(err) {
			return err
		}
	}
	if raw, err := os.ReadFile(path + ".1"); err == nil {
		var z bytes.Buffer
		w := gzip.NewWriter(&z) // no name, no time: the same bytes every run
		w.Write(raw)
		w.Close()
		if err := a.writeBytes(path+".2.gz", z.Bytes(), true); err != nil {
			return err
		}
		a.used += blocks(int64(z.Len()))
		if err := a.remove(path+".1", int64(len(raw))); err != nil {
			return err
		}
	} else if !os.IsNotExist(err) {
		return err
	}
	if err := os.Rename(path, path+".1"); err != nil {
		return err
	}
	a.res.Renames++
	return nil
}

// ---- database: a write-ahead log and checkpoints ----

const (
	dbPage      = 4096
	walFrame    = 24 + dbPage // SQLite's WAL frame: a 24-byte header and the page
	checkpoints = 1000        // SQLite's default wal_autocheckpoint, in pages
)

// walLimit is the pages the log holds before a checkpoint: SQLite's 1000, or a quarter of the
// database's pages on a device too small for a 4 MiB log.
func walLimit(pages int) int { return max(1, min(checkpoints, pages/4)) }

func (a *ager) database() error {
	dbBytes := max(a.capacity/16/dbPage*dbPage, 16*dbPage)
	a.filling = true
	walBytes := uint64(walLimit(int(dbBytes/dbPage))+8) * walFrame
	if err := a.install(&a.pkgs, a.target-min(dbBytes+walBytes, a.target/2)); err != nil {
		return err
	}
	dir := filepath.Join(a.dir, "var", "lib", "db")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dbPath, walPath := filepath.Join(dir, "data.db"), filepath.Join(dir, "data.db-wal")
	if err := a.writeFile(dbPath, int64(dbBytes), true); err != nil {
		return err
	}
	a.used += blocks(int64(dbBytes))
	a.filling = false
	db, err := os.OpenFile(dbPath, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer db.Close()
	wal, err := os.OpenFile(walPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer wal.Close()
	pages := int(dbBytes / dbPage)
	hot := max(pages/5, 1)
	frame := make([]byte, walFrame)
	walUsed := a.used // the log is accounted at its largest, as its file stays that large
	var walOff int64
	dirty := map[int]bool{}
	for a.churnLeft() {
		// A transaction: 1 to 8 pages, four in five of them among the hottest fifth.
		for range 1 + a.r.IntN(8) {
			pg := a.r.IntN(pages)
			if a.r.IntN(5) > 0 {
				pg = a.r.IntN(hot)
			}
			a.content(frame)
			if _, err := wal.WriteAt(frame, walOff); err != nil {
				return err
			}
			walOff += walFrame
			a.wrote(walFrame)
			dirty[pg] = true
		}
		if err := unix.Fdatasync(int(wal.Fd())); err != nil {
			return err
		}
		a.res.Fsyncs++
		a.used = max(a.used, walUsed+blocks(walOff))
		if walOff/walFrame >= int64(walLimit(pages)) {
			// Checkpoint: the pages go to their place in the database, which is synced; the
			// log starts over from its beginning, overwritten in place as SQLite does.
			keys := make([]int, 0, len(dirty))
			for pg := range dirty {
				keys = append(keys, pg)
			}
			slices.Sort(keys)
			for _, pg := range keys {
				a.content(frame[:dbPage])
				if _, err := db.WriteAt(frame[:dbPage], int64(pg)*dbPage); err != nil {
					return err
				}
				a.wrote(dbPage)
			}
			if err := db.Sync(); err != nil {
				return err
			}
			a.res.Fsyncs++
			clear(dirty)
			walOff = 0
		}
	}
	return a.ctx.Err()
}

// ---- geriatrix: random creates and deletes at a fullness ----

type gfile struct {
	path string
	size int64
}

// syncEvery bounds how much the Geriatrix churn leaves in the page cache: without a sync, a file
// created and deleted within one writeback interval would never reach the device.
const syncEvery = 4 << 20

func (a *ager) geriatrix() error {
	// Directories as deep as a rootfs's files lie, as many as a Debian tree of this size has
	// (filesPerDir files each; 44 KiB is the mean file size of the distribution's system).
	var dirs []string
	for i := range max(4, int(a.target/(filesPerDir*44<<10))) {
		parts := []string{fmt.Sprintf("g%d", i%16)}
		for len(parts) < fileDepth(a.r)-1 {
			parts = append(parts, fmt.Sprintf("d%d", a.r.IntN(8)))
		}
		dirs = append(dirs, filepath.Join(parts...))
	}
	n := 0
	create := func() error {
		rel := filepath.Join(dirs[a.r.IntN(len(dirs))], fmt.Sprintf("f%d", n))
		if err := a.mkdirs(rel); err != nil {
			return err
		}
		f := gfile{path: filepath.Join(a.dir, rel), size: fileSize(a.r, a.maxFile)}
		n++
		if err := a.writeFile(f.path, f.size, false); err != nil {
			return err
		}
		a.used += blocks(f.size)
		a.gfiles = append(a.gfiles, f)
		return nil
	}
	a.filling = true
	for a.used < a.target {
		if err := create(); err != nil {
			return err
		}
	}
	if err := a.syncfs(); err != nil {
		return err
	}
	a.filling = false
	var sinceSync uint64
	for a.churnLeft() {
		if a.used >= a.target && len(a.gfiles) > 0 {
			i := a.r.IntN(len(a.gfiles))
			if err := a.remove(a.gfiles[i].path, a.gfiles[i].size); err != nil {
				return err
			}
			a.gfiles[i] = a.gfiles[len(a.gfiles)-1]
			a.gfiles = a.gfiles[:len(a.gfiles)-1]
			continue
		}
		before := a.res.ChurnBytes
		if err := create(); err != nil {
			return err
		}
		if sinceSync += a.res.ChurnBytes - before; sinceSync >= syncEvery {
			if err := a.syncfs(); err != nil {
				return err
			}
			sinceSync = 0
		}
	}
	return a.ctx.Err()
}
