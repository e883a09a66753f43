package suite

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/aging"
	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
)

// MinMeasure is the shortest work a rate test gives a figure for: bonnie++ prints "+++++"
// instead of a figure for a test that took under 0.5 s.
const MinMeasure = 500 * time.Millisecond

// bonnieSteps are how this package runs the suite's tests (Steps).
var bonnieSteps = []suites.Test{{Test: catalog.Test{Name: BonnieWrite}, Run: step((*rep).bonnieWrite)},
	{Test: catalog.Test{Name: BonnieRewrite}, Needs: []string{BonnieWrite}, Run: step((*rep).bonnieRewrite)},
	{Test: catalog.Test{Name: BonnieRead}, Needs: []string{BonnieWrite}, Run: step((*rep).bonnieRead)},
	{Test: catalog.Test{Name: BonnieSeeks}, Needs: []string{BonnieWrite}, Run: step((*rep).bonnieSeeks)},
	{Test: catalog.Test{Name: BonnieSeqCreate}, Run: step((*rep).bonnieSeqCreate)},
	{Test: catalog.Test{Name: BonnieSeqStat}, Needs: []string{BonnieSeqCreate}, Run: step((*rep).bonnieSeqStat)},
	{Test: catalog.Test{Name: BonnieSeqDelete}, Needs: []string{BonnieSeqCreate}, Run: step((*rep).bonnieSeqDelete)},
	{Test: catalog.Test{Name: BonnieRandCreate}, Run: step((*rep).bonnieRandCreate)},
	{Test: catalog.Test{Name: BonnieRandStat}, Needs: []string{BonnieRandCreate}, Run: step((*rep).bonnieRandStat)},
	{Test: catalog.Test{Name: BonnieRandDelete}, Needs: []string{BonnieRandCreate}, Run: step((*rep).bonnieRandDelete)}}

// ---- file operations, behind an interface so that tests can count them ----

// opFile is an open file as the new suites use it; *os.File is one.
type opFile interface {
	io.Reader
	io.Writer
	io.ReaderAt
	io.WriterAt
	Sync() error
	Close() error
}

// fileOps are the filesystem operations of the bonnie, smallfiles and randio tests. osOps does
// them for real; the tests' fake counts them.
type fileOps interface {
	OpenFile(name string, flag int, perm os.FileMode) (opFile, error)
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

type osOps struct{}

func (osOps) OpenFile(name string, flag int, perm os.FileMode) (opFile, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

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
func realDirs(ops fileOps) *dirFDs {
	if _, ok := ops.(osOps); ok {
		return &dirFDs{}
	}
	return nil
}

func (osOps) Remove(name string) error { return os.Remove(name) }
func (osOps) Mkdir(name string) error  { return os.Mkdir(name, 0o755) }
func (osOps) ReadDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1) // directory order, as bonnie++'s readdir loop sees it
}
func (osOps) SyncDir(dir string) error {
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
func (osOps) Syncfs(dir string) error { return syncfsDir(dir) }
func (osOps) DropCaches() error       { return measure.DropCaches() }

// ---- latencies ----

// latencies is a histogram of operation times with better than 1 % resolution in constant
// memory (a 2 × RAM bonnie file is millions of chunks), plus the exact maximum, which bonnie++
// prints. Buckets are log-linear (as HdrHistogram's): a value is bucketed by its highest set
// bit and the latBits bits below it, so that add is a few integer instructions on the hot
// path of the 4 KiB random tests, not a logarithm and a map insert per request.
type latencies struct {
	counts *[latBuckets]uint64 // allocated on the first add
	n      uint64
	max    time.Duration
}

const (
	latBits    = 7 // bits kept below the leading one: buckets are at most 1/128 wide (< 1 %)
	latSub     = 1 << latBits
	latBuckets = (64 - latBits + 1) * latSub // the last: a leading one at bit 63
)

// latIndex is the bucket of a duration in nanoseconds (values below 2^(latBits+1) exactly).
func latIndex(ns uint64) int {
	e := bits.Len64(ns) // position of the leading one, 1-based
	if e <= latBits+1 {
		return int(ns)
	}
	shift := e - latBits - 1 // ns>>shift is in [latSub, 2·latSub)
	return shift*latSub + int(ns>>shift)
}

// latUpper is the largest duration in nanoseconds that falls into bucket i.
func latUpper(i int) uint64 {
	if i < 2*latSub {
		return uint64(i)
	}
	shift := i/latSub - 1
	mant := uint64(i%latSub + latSub)
	return (mant+1)<<shift - 1
}

func (l *latencies) add(d time.Duration) {
	if l.counts == nil {
		l.counts = new([latBuckets]uint64)
	}
	ns := uint64(max(d, 0))
	l.counts[latIndex(ns)]++
	l.n++
	l.max = max(l.max, d)
}

func (l *latencies) merge(o *latencies) {
	if o.counts != nil {
		if l.counts == nil {
			l.counts = new([latBuckets]uint64)
		}
		for i, c := range o.counts {
			l.counts[i] += c
		}
	}
	l.n += o.n
	l.max = max(l.max, o.max)
}

// quantile returns the q-quantile in seconds: the upper bound of its bucket, never above max.
func (l *latencies) quantile(q float64) float64 {
	if l.n == 0 || l.counts == nil {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(l.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range l.counts {
		seen += c
		if seen >= rank {
			return min(float64(latUpper(i))/1e9, l.max.Seconds())
		}
	}
	return l.max.Seconds()
}

// extra adds the latency figures to a measurement's Extra, in seconds.
func (l *latencies) extra(m map[string]float64) {
	if l.n == 0 {
		return
	}
	m["latency_p50_s"] = l.quantile(0.50)
	m["latency_p99_s"] = l.quantile(0.99)
	m["latency_p999_s"] = l.quantile(0.999)
	m["latency_max_s"] = l.max.Seconds()
}

// phase is what one timed piece of work did.
type phase struct {
	ops   int           // operations counted for the rate (chunks, seeks, files, requests)
	bytes uint64        // bytes written or read
	work  time.Duration // time up to the last operation, before any final sync
	lat   latencies
}

// timeOp runs op, adding its duration to the phase's latencies.
func (p *phase) timeOp(op func() error) error {
	t := time.Now()
	err := op()
	p.lat.add(time.Since(t))
	return err
}

// lap adds the time since *last to the latencies and moves *last to now: one clock read per
// operation, a request's latency being the time since the previous one returned (which adds
// the few tens of nanoseconds of the loop itself).
func (p *phase) lap(last *time.Time) {
	now := time.Now()
	p.lat.add(now.Sub(*last))
	*last = now
}

// stopped says whether done is closed, looking at every 64th operation n only: a channel
// check per 8 KiB chunk would cost a good part of what the lean loops save.
func stopped(done <-chan struct{}, n int) bool {
	if n%64 != 0 {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// ---- shared by the new suites' rep methods ----

// rate turns a timed measurement into a rate measurement: Value = amount ÷ wall seconds in
// unit, CPU % and latencies in Extra. Work that took less than MinMeasure gives no figure,
// as bonnie++ prints +++++: its rate would be mostly timer and scheduling noise.
func rate(m results.Measurement, p phase, amount float64, unit string, notes ...string) results.Measurement {
	if m.Extra == nil {
		m.Extra = map[string]float64{}
	}
	if m.WallSeconds > 0 {
		m.Extra["cpu_pct"] = 100 * (m.UserSeconds + m.SysSeconds) / m.WallSeconds
	}
	m.Extra["ops"] = float64(p.ops)
	if p.work > 0 && p.work.Seconds() < m.WallSeconds*0.999 {
		m.Extra["rate_before_sync"] = amount / p.work.Seconds()
	}
	p.lat.extra(m.Extra)
	m.Unit = unit
	var ns []string
	if m.WallSeconds < MinMeasure.Seconds() {
		m.Status, m.Value = results.NA, nil
		ns = append(ns, fmt.Sprintf("too fast to measure: took %.2f s", m.WallSeconds))
	} else {
		m.Value = results.Float(amount / m.WallSeconds)
	}
	for _, n := range notes {
		if n != "" {
			ns = append(ns, n)
		}
	}
	m.Note = strings.Join(ns, "; ")
	return m
}

// keepOnly removes every top-level entry of the mounted filesystem except keep (and ext's
// lost+found), then syncs: each test starts from the space it needs, whatever the tests or
// suites before it left. Not timed.
func (r *rep) keepOnly(ctx context.Context, keep ...string) error {
	if r.v.Age != "" {
		keep = append(keep, aging.Dir) // an aged variant's tests run beside its aged tree
	}
	entries, err := os.ReadDir(r.env.Mountpoint)
	if err != nil {
		return err
	}
	removed := false
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.Name() == "lost+found" || slices.Contains(keep, e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.env.Mountpoint, e.Name())); err != nil {
			return fmt.Errorf("clearing the filesystem before the test: %w", err)
		}
		removed = true
	}
	if removed {
		return r.syncfs()
	}
	return nil
}

// space is the free space of the mounted filesystem: bytes an unprivileged writer may use and
// free inodes (0 when the filesystem does not count them, as btrfs).
func (r *rep) space() (avail, inodes uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(r.env.Mountpoint, &st); err != nil {
		return 0, 0, fmt.Errorf("statfs %s: %w", r.env.Mountpoint, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Ffree), nil
}

// ---- bonnie: sizes ----

const bonnieDir = "bonnie-io" // the block I/O file's directory

// bonnieSizing is what the bonnie tests use on this filesystem, with the notes to record.
type bonnieSizing struct {
	fileSize uint64
	files    int
	note     string // about the file size
	fileNote string // about the file count
}

// RAM returns the machine's memory in bytes (MemTotal); a variable for tests.
var ramBytes = func() (uint64, error) {
	mi, err := measure.ReadMeminfo()
	if err != nil {
		return 0, err
	}
	return mi["MemTotal"], nil
}

// bonnieSize decides the file size: the configured FileSize, or 2 × RAM as bonnie++ does, capped to
// 60 % of the free space (the rest is for metadata, journals and copy-on-write reserves),
// rounded down to whole MiB (bonnie++ sizes are in MiB). Notes say when it was capped and warn
// when the file is smaller than RAM, since the page cache can then answer.
func bonnieSize(want, avail, ram uint64) (size uint64, note string) {
	size = want
	if size == 0 {
		size = 2 * ram
	}
	var ns []string
	if limit := avail / 10 * 6; size > limit {
		ns = append(ns, fmt.Sprintf("file capped to %s to fit on the device (wanted %s)", bytesize.Format(limit&^(1<<20-1)), bytesize.Format(size)))
		size = limit
	}
	size &^= 1<<20 - 1
	if size < 1<<20 {
		size = 1 << 20
	}
	if ram > 0 && size < ram {
		ns = append(ns, fmt.Sprintf("file (%s) smaller than RAM (%s): the page cache may answer", bytesize.Format(size), bytesize.Format(ram)))
	}
	return size, strings.Join(ns, "; ")
}

// bonnieFiles scales the file count of the create tests to the free inodes: at most 80 % of
// them, in whole units of 1024 as bonnie++ counts (-n), at least 1024 when possible.
func bonnieFiles(want int, freeInodes uint64) (int, string) {
	if freeInodes == 0 || uint64(want) <= freeInodes/10*8 {
		return want, ""
	}
	n := int(freeInodes / 10 * 8)
	if n >= 1024 {
		n &^= 1023
	}
	return n, fmt.Sprintf("%d files instead of %d: the filesystem has %d free inodes", n, want, freeInodes)
}

func (r *rep) bonnieSizing() (bonnieSizing, error) {
	avail, inodes, err := r.space()
	if err != nil {
		return bonnieSizing{}, err
	}
	// The block I/O file lives in bonnie-io; count its space as free for the size decision.
	if fi, err := os.Stat(filepath.Join(r.env.Mountpoint, bonnieDir, "file")); err == nil {
		avail += uint64(fi.Size())
	}
	ram, err := ramBytes()
	if err != nil {
		return bonnieSizing{}, err
	}
	s := bonnieSizing{}
	s.fileSize, s.note = bonnieSize(r.bonnieParams().FileSize, avail, ram)
	s.files, s.fileNote = bonnieFiles(r.bonnieParams().Files, inodes)
	return s, nil
}

// bonnieExtra records the parameters with each bonnie measurement, for the bonnie++ CSV export.
func bonnieExtra(m *results.Measurement, s bonnieSizing, p *BonnieParams) {
	if m.Extra == nil {
		m.Extra = map[string]float64{}
	}
	m.Extra["file_bytes"] = float64(s.fileSize)
	m.Extra["chunk_bytes"] = float64(p.ChunkSize)
	m.Extra["seeks"] = float64(p.Seeks)
	m.Extra["seekers"] = float64(p.Seekers)
	m.Extra["files"] = float64(s.files)
	m.Extra["dirs"] = float64(p.Dirs)
	m.Extra["seed"] = float64(p.Seed)
}

// ---- bonnie: block I/O ----

// patternBuf is 1 MiB of incompressible bytes: chunks are cut from it in turn, so that no
// 128 KiB compression extent repeats (btrfs, f2fs) and compressing filesystems store it as is.
func patternBuf(seed uint64) []byte {
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

// blockWrite writes size bytes to path in chunk-sized write(2) calls, then syncfs.
//
// The loop is as lean as bonnie++'s, whose write loop is a bare write(2) per chunk: at 8 KiB a
// call and 1 GB/s that is 8 µs a call, so every half microsecond shows in the figure. write(2)
// goes to the descriptor (fdWrite), not through os.File, whose descriptor locking and
// bookkeeping kept fsbench at 0.81-0.86 of bonnie++ (a plain unix.Write loop reached 0.97 of
// the same loop in C). One clock read per call, not two (a call's latency is the time since
// the previous one returned), the context checked every 64 calls, and the latency histogram
// allocated before the clock starts. The data stays incompressible: the chunks are cut in
// turn from one pre-generated MiB (patternBuf), so nothing is generated in the loop.
func blockWrite(ctx context.Context, ops fileOps, path string, size, chunk uint64) (phase, error) {
	pat := patternBuf(1)
	p := newPhase()
	done := ctx.Done()
	start := time.Now()
	f, err := ops.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return p, err
	}
	fd := descriptor(f)
	last := time.Now()
	var off uint64
	for off < size {
		if stopped(done, p.ops) {
			f.Close()
			return p, ctx.Err()
		}
		n := min(chunk, size-off)
		at := off % uint64(len(pat))
		buf := pat[at : at+min(n, uint64(len(pat))-at)]
		w, err := fdWrite(f, fd, buf)
		p.lap(&last)
		if err != nil {
			f.Close()
			return p, fmt.Errorf("writing %s: %w", path, err)
		}
		off += uint64(w)
		p.ops++
	}
	p.bytes = off
	if err := f.Close(); err != nil {
		return p, err
	}
	p.work = time.Since(start)
	return p, ops.Syncfs(filepath.Dir(path))
}

// newPhase is a phase of the block tests with its latency histogram allocated, which is done
// before the phase's clock starts.
func newPhase() phase {
	var p phase
	p.lat.counts = new([latBuckets]uint64)
	return p
}

// openFD opens an existing file for a phase and returns its descriptor too (-1: none).
func openFD(ops fileOps, path string, flag int) (opFile, int, error) {
	f, err := ops.OpenFile(path, flag, 0)
	if err != nil {
		return nil, -1, err
	}
	return f, descriptor(f), nil
}

// descriptor is f's file descriptor, or -1 when f has none (the tests' fake).
func descriptor(f opFile) int {
	if ff, ok := f.(fdFile); ok {
		return int(ff.Fd())
	}
	return -1
}

// fdWrite is one write(2) of buf on fd, or f.Write when fd < 0. It is unix.Write, not a raw
// system call: a write that waits for the card (or for reclaim) must let the Go scheduler run
// the other goroutines meanwhile, or a stop-the-world pause would wait for it.
func fdWrite(f opFile, fd int, buf []byte) (int, error) {
	if fd < 0 {
		return f.Write(buf)
	}
	for {
		n, err := unix.Write(fd, buf)
		// As in positional: EINTR despite SA_RESTART on some filesystems.
		if err != unix.EINTR {
			return n, err
		}
	}
}

// blockRewrite reads each chunk, changes it, and writes it back in place, then syncfs. As in
// blockWrite, the system calls go to the descriptor, with one clock read per chunk.
func blockRewrite(ctx context.Context, ops fileOps, path string, size, chunk uint64) (phase, error) {
	p := newPhase()
	done := ctx.Done()
	start := time.Now()
	f, fd, err := openFD(ops, path, os.O_RDWR)
	if err != nil {
		return p, err
	}
	defer f.Close()
	buf := make([]byte, chunk)
	last := time.Now()
	for off := uint64(0); off < size; off += chunk {
		if stopped(done, p.ops) {
			return p, ctx.Err()
		}
		b := buf[:min(chunk, size-off)]
		// Not positional's raw system calls: a block test's request may wait for the card
		// (or for reclaim), and the Go scheduler must be free to run the other goroutines.
		err := positional(f, fd, b, int64(off), false, false)
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			b[0]++ // bonnie++ dirties each chunk before writing it back
			err = positional(f, fd, b, int64(off), true, false)
		}
		p.lap(&last)
		if err != nil {
			return p, fmt.Errorf("rewriting %s at %d: %w", path, off, err)
		}
		p.ops++
		p.bytes += uint64(len(b))
	}
	if err := f.Close(); err != nil {
		return p, err
	}
	p.work = time.Since(start)
	return p, ops.Syncfs(filepath.Dir(path))
}

// blockRead reads the file in chunk-sized read(2) calls, on the descriptor as blockWrite
// writes.
func blockRead(ctx context.Context, ops fileOps, path string, chunk uint64) (phase, error) {
	p := newPhase()
	done := ctx.Done()
	f, fd, err := openFD(ops, path, os.O_RDONLY)
	if err != nil {
		return p, err
	}
	defer f.Close()
	buf := make([]byte, chunk)
	last := time.Now()
	for k := 0; ; k++ {
		if stopped(done, k) {
			return p, ctx.Err()
		}
		n, err := fdRead(f, fd, buf)
		p.lap(&last)
		p.bytes += uint64(n)
		if n > 0 {
			p.ops++
		}
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return p, fmt.Errorf("reading %s: %w", path, err)
		}
	}
}

// fdRead is one read(2) into buf on fd (f.Read when fd < 0), with io.EOF at the end of the
// file as f.Read has it.
func fdRead(f opFile, fd int, buf []byte) (int, error) {
	if fd < 0 {
		return f.Read(buf)
	}
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 && len(buf) > 0 {
			return 0, io.EOF
		}
		return n, err
	}
}

// seeks does bonnie++'s random seek test: workers share the seeks; each seek reads a random
// chunk, and one in ten is changed and written back. Each worker has its own descriptor and
// random sequence (bonnie++ forks SeekProcCount processes).
func seeks(ctx context.Context, ops fileOps, path string, size, chunk uint64, total, workers int, seed uint64) (phase, error) {
	var p phase
	chunks := size / chunk
	if chunks == 0 || total <= 0 || workers <= 0 {
		return p, fmt.Errorf("seek test needs a file of at least one chunk and at least one seek")
	}
	start := time.Now()
	var mu sync.Mutex
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		n := total / workers
		if w < total%workers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine phase
			errs[w] = func() error {
				f, err := ops.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				rng := rand.New(rand.NewPCG(seed, uint64(w)+1))
				buf := make([]byte, chunk)
				for i := 0; i < n; i++ {
					if err := ctx.Err(); err != nil {
						return err
					}
					off := int64(rng.Uint64N(chunks) * chunk)
					write := rng.IntN(10) == 0
					err := mine.timeOp(func() error {
						if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
							return err
						}
						if !write {
							return nil
						}
						buf[0]++
						_, err := f.WriteAt(buf, off)
						return err
					})
					if err != nil {
						return fmt.Errorf("seek %d of worker %d: %w", i, w, err)
					}
					mine.ops++
					mine.bytes += chunk
				}
				return f.Close()
			}()
			mu.Lock()
			p.ops += mine.ops
			p.bytes += mine.bytes
			p.lat.merge(&mine.lat)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return p, err
	}
	p.work = time.Since(start)
	return p, ops.Syncfs(filepath.Dir(path))
}

func (r *rep) bonnieFile() string { return filepath.Join(r.env.Mountpoint, bonnieDir, "file") }

func (r *rep) bonnieWrite(ctx context.Context) ([]results.Measurement, error) {
	return r.blockTest(ctx, BonnieWrite, false, catalog.KiBps, func(s bonnieSizing) (phase, error) {
		return blockWrite(ctx, osOps{}, r.bonnieFile(), s.fileSize, r.bonnieParams().ChunkSize)
	})
}

// blockTest is the frame of bonnie's tests on its one large file: clear the filesystem of
// everything else, size the file (bonnie_write makes it; the others use what it left), drop
// the caches for the cold ones, run op inside the measurement, and turn its phase into a rate
// in unit (KiB/s of bytes moved, or seeks/s).
func (r *rep) blockTest(ctx context.Context, test string, cold bool, unit string, op func(bonnieSizing) (phase, error)) ([]results.Measurement, error) {
	write := test == BonnieWrite
	var keep []string
	if !write {
		keep = []string{bonnieDir}
	}
	if err := r.keepOnly(ctx, keep...); err != nil {
		return nil, err
	}
	var s bonnieSizing
	var err error
	if write {
		if s, err = r.bonnieSizing(); err == nil {
			err = os.Mkdir(filepath.Join(r.env.Mountpoint, bonnieDir), 0o755)
		}
	} else {
		s, err = r.bonnieIOSize()
	}
	if err != nil {
		return nil, err
	}
	if cold {
		if err := measure.DropCaches(); err != nil {
			return nil, err
		}
	}
	logical := s.fileSize
	if unit != catalog.KiBps {
		logical = 0 // seeks move scattered chunks, not the file
	}
	var p phase
	m, err := r.timed(test, logical, func() error {
		var err error
		p, err = op(s)
		return err
	})
	if err != nil {
		return nil, err
	}
	amount := float64(p.ops)
	if unit == catalog.KiBps {
		amount = float64(p.bytes) / 1024
	}
	m = rate(m, p, amount, unit, s.note)
	bonnieExtra(&m, s, r.bonnieParams())
	return []results.Measurement{m}, nil
}

// bonnieIOSize is the size of the file bonnie_write left.
func (r *rep) bonnieIOSize() (bonnieSizing, error) {
	s, err := r.bonnieSizing()
	if err != nil {
		return s, err
	}
	fi, err := os.Stat(r.bonnieFile())
	if err != nil {
		return s, fmt.Errorf("the file of bonnie_write: %w", err)
	}
	s.fileSize = uint64(fi.Size())
	_, s.note = bonnieSize(s.fileSize, s.fileSize*2, mustRAM())
	return s, nil
}

func mustRAM() uint64 {
	ram, _ := ramBytes()
	return ram
}

func (r *rep) bonnieRewrite(ctx context.Context) ([]results.Measurement, error) {
	return r.blockTest(ctx, BonnieRewrite, false, catalog.KiBps, func(s bonnieSizing) (phase, error) {
		return blockRewrite(ctx, osOps{}, r.bonnieFile(), s.fileSize, r.bonnieParams().ChunkSize)
	})
}

// bonnieRead is cold, unlike bonnie++, which relies on the 2 × RAM size alone.
func (r *rep) bonnieRead(ctx context.Context) ([]results.Measurement, error) {
	return r.blockTest(ctx, BonnieRead, true, catalog.KiBps, func(bonnieSizing) (phase, error) {
		return blockRead(ctx, osOps{}, r.bonnieFile(), r.bonnieParams().ChunkSize)
	})
}

func (r *rep) bonnieSeeks(ctx context.Context) ([]results.Measurement, error) {
	return r.blockTest(ctx, BonnieSeeks, true, catalog.SeeksPerSec, func(s bonnieSizing) (phase, error) {
		return seeks(ctx, osOps{}, r.bonnieFile(), s.fileSize, r.bonnieParams().ChunkSize, r.bonnieParams().Seeks, r.bonnieParams().Seekers, r.bonnieParams().Seed)
	})
}

// ---- bonnie: file creation ----

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
func createFiles(ctx context.Context, ops fileOps, root string, set fileSet) (phase, error) {
	var p phase
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
	p.work = time.Since(start)
	return p, ops.Syncfs(root)
}

// listFiles returns the files in readdir order, directory by directory (not timed).
func listFiles(ops fileOps, set fileSet) ([]string, error) {
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
func statEntries(ctx context.Context, ents []dirEntry) (phase, error) {
	var p phase
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		var st unix.Stat_t
		t := time.Now()
		err := unix.Fstatat(e.dfd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW)
		p.lat.add(time.Since(t))
		if err != nil {
			return p, &os.PathError{Op: "stat", Path: e.name, Err: err}
		}
		p.ops++
	}
	return p, nil
}

// statDirs stats every file of dirs in readdir order, reading each directory as it goes, as
// bonnie++'s readdir(3) loop does: a buffer of directory entries at a time from getdents64(2),
// each name stat'ed relative to the directory's descriptor. Listing every name first
// (Readdirnames) and joining paths cost fsbench a third of bonnie++'s rate on 262,144 files
// (316-369 k against 470 k stats/s on ext4 here); this loop did 460-520 k.
func statDirs(ctx context.Context, dirs []string) (phase, error) {
	var p phase
	buf := make([]byte, 64<<10)
	for _, d := range dirs {
		if err := statDir(ctx, &p, d, buf); err != nil {
			return p, err
		}
	}
	return p, nil
}

func statDir(ctx context.Context, p *phase, dir string, buf []byte) error {
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
			p.lat.add(time.Since(t))
			if err != nil {
				return &os.PathError{Op: "stat", Path: filepath.Join(dir, name), Err: err}
			}
			p.ops++
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
func eachTimed(ctx context.Context, p *phase, paths []string, op func(string) error) error {
	for _, path := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := time.Now()
		err := op(path)
		p.lat.add(time.Since(t))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		p.ops++
	}
	return nil
}

// deleteFiles unlinks each path in order, removes the directories and root, then syncfs.
func deleteFiles(ctx context.Context, ops fileOps, root string, set fileSet, paths []string) (phase, error) {
	var p phase
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
	p.work = time.Since(start)
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
func (r *rep) createTest(ctx context.Context, test string) ([]results.Measurement, error) {
	random := test == BonnieRandCreate || test == BonnieRandStat || test == BonnieRandDelete
	dir := bonnieSeqDir
	if random {
		dir = bonnieRandDir
	}
	create := test == BonnieSeqCreate || test == BonnieRandCreate
	keep := []string{dir}
	if create {
		keep = nil
	}
	if err := r.keepOnly(ctx, keep...); err != nil {
		return nil, err
	}
	s, err := r.bonnieSizing()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(r.env.Mountpoint, dir)
	if !create {
		// As many files as the create test made (the free inodes have changed since).
		n, err := countFiles(osOps{}, root)
		if err != nil {
			return nil, fmt.Errorf("the files of the create test: %w", err)
		}
		if s.files, s.fileNote = n, ""; n != r.bonnieParams().Files {
			s.fileNote = fmt.Sprintf("%d files instead of %d (scaled to the free inodes)", n, r.bonnieParams().Files)
		}
	}
	set := makeFileSet(root, s.files, r.bonnieParams().Dirs, random, r.bonnieParams().Seed)
	stat := test == BonnieSeqStat || test == BonnieRandStat
	// The random order is drawn, and the random stat's files resolved, before the timing, as
	// bonnie++ sorts its random order before its timer starts.
	var order []dirEntry
	if stat && random {
		dirs := &dirFDs{}
		defer dirs.close()
		if order, err = dirs.resolve(shuffled(set.paths, r.bonnieParams().Seed+1)); err != nil {
			return nil, err
		}
	}
	var p phase
	m, err := r.timedRate(test, func() error {
		var err error
		switch {
		case create:
			p, err = createFiles(ctx, osOps{}, root, set)
		case stat && random:
			p, err = statEntries(ctx, order)
		case stat:
			p, err = statDirs(ctx, set.dirs)
		default:
			var paths []string
			if paths, err = r.orderFor(set, random); err == nil {
				p, err = deleteFiles(ctx, osOps{}, root, set, paths)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	m = rate(m, p, float64(p.ops), catalog.FilesPerSec, s.fileNote)
	bonnieExtra(&m, s, r.bonnieParams())
	return []results.Measurement{m}, nil
}

// countFiles counts the files in the directories under root (not timed).
func countFiles(ops fileOps, root string) (int, error) {
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
func (r *rep) orderFor(set fileSet, random bool) ([]string, error) {
	if random {
		return shuffled(set.paths, r.bonnieParams().Seed+1), nil
	}
	return listFiles(osOps{}, set)
}

// timedRate is r.timed for tests whose amount is counted in the phase, not known before.
func (r *rep) timedRate(test string, fn func() error) (results.Measurement, error) {
	return r.timed(test, 0, fn)
}

func (r *rep) bonnieSeqCreate(ctx context.Context) ([]results.Measurement, error) {
	return r.createTest(ctx, BonnieSeqCreate)
}
func (r *rep) bonnieSeqStat(ctx context.Context) ([]results.Measurement, error) {
	return r.createTest(ctx, BonnieSeqStat)
}
func (r *rep) bonnieSeqDelete(ctx context.Context) ([]results.Measurement, error) {
	return r.createTest(ctx, BonnieSeqDelete)
}
func (r *rep) bonnieRandCreate(ctx context.Context) ([]results.Measurement, error) {
	return r.createTest(ctx, BonnieRandCreate)
}
func (r *rep) bonnieRandStat(ctx context.Context) ([]results.Measurement, error) {
	return r.createTest(ctx, BonnieRandStat)
}
func (r *rep) bonnieRandDelete(ctx context.Context) ([]results.Measurement, error) {
	return r.createTest(ctx, BonnieRandDelete)
}
