package randio

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/iodepth"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/suites/suitekit"
)

// The suite's jobs as fio runs them: one preallocated file written sequentially, then random
// 4 KiB requests in it, O_DIRECT, iodepth 1.

// randioDirName is the directory of the randio suite's file.
const randioDirName = "randio"

// alignedBuf returns n bytes aligned to 4096 in memory, as O_DIRECT requires (Go's heap does
// not move objects, so the alignment holds).
func alignedBuf(n uint64) []byte {
	const align = 4096
	b := make([]byte, n+align)
	off := (align - uint64(uintptr(unsafe.Pointer(&b[0])))%align) % align
	return b[off : off+n : off+n]
}

// openDirect opens path with O_DIRECT; when the filesystem refuses it (EINVAL: some do not
// implement direct I/O), it opens without and says so: the figures then include the page
// cache, and the note warns.
func openDirect(ops suitekit.FileOps, path string, flag int) (suitekit.File, string, error) {
	f, err := ops.OpenFile(path, flag|unix.O_DIRECT, 0o644)
	if err == nil {
		return f, "", nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return nil, "", err
	}
	f, err = ops.OpenFile(path, flag, 0o644)
	return f, "the filesystem refused O_DIRECT: buffered I/O, the page cache may answer", err
}

// layOutSeqFile makes path a new file of size bytes, allocated but never written, as fio lays
// out the file of a write job before its clock starts: it unlinks the file, creates it and
// calls fallocate(2) for the whole size (its default fallocate=native; a filesystem without
// fallocate, such as ext2, leaves an empty file, which fio ignores too). Without it the timed
// writes would also allocate the file's blocks, which fio's do not: on ext4 over a loop device
// that made fsbench's sequential write and fio's differ by up to a third from one run to the
// next. It is not timed (fio does not time it either).
func layOutSeqFile(ops suitekit.FileOps, path string, size uint64) error {
	if err := ops.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := ops.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if ff, ok := f.(suitekit.FDFile); ok && size > 0 {
		err := unix.Fallocate(int(ff.Fd()), 0, 0, int64(size))
		if err != nil && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
			f.Close()
			return fmt.Errorf("allocating %s: %w", path, err)
		}
	}
	return f.Close()
}

// seqWriteDirect writes size bytes in block-sized O_DIRECT writes over the file layOutSeqFile
// made, then fsync, as fio's end_fsync=1 does; the caller times the whole of it, as fio's
// bandwidth includes its end_fsync.
func seqWriteDirect(ctx context.Context, ops suitekit.FileOps, path string, size, block uint64) (suitekit.Phase, string, error) {
	var p suitekit.Phase
	f, note, err := openDirect(ops, path, os.O_WRONLY)
	if err != nil {
		return p, note, err
	}
	defer f.Close()
	buf := alignedBuf(block)
	copy(buf, suitekit.PatternBuf(5))
	start := time.Now()
	for off := uint64(0); off+block <= size; off += block {
		if err := ctx.Err(); err != nil {
			return p, note, err
		}
		buf[0], buf[1] = byte(off>>20), byte(off>>28) // no two blocks alike (dedup, compression)
		if err := p.TimeOp(func() error { _, err := f.Write(buf); return err }); err != nil {
			return p, note, fmt.Errorf("writing %s: %w", path, err)
		}
		p.Ops++
		p.Bytes += block
	}
	p.Work = time.Since(start)
	if err := f.Sync(); err != nil {
		return p, note, err
	}
	return p, note, f.Close()
}

// rawIO says whether pread/pwrite bypass the Go scheduler's system call bookkeeping: true on
// 64-bit architectures, where the offset is one register. A system call made the ordinary
// way (entersyscall) that blocks for the ~100 µs of a flash request makes the runtime's
// monitor hand the goroutine's processor to another thread and take it back afterwards:
// strace showed about one futex wake-up and one sysmon nanosleep per request, a third more CPU
// than fio and a slower return to user space. A raw system call keeps the processor; the cost
// is that a stop-the-world pause of the garbage collector waits for the request in flight
// (the random loop itself allocates nothing, so only other goroutines can start one).
var rawIO = unsafe.Sizeof(uintptr(0)) == 8

// randomIO does 4 KiB-aligned random requests (reads, or writes) at iodepth 1 over the first
// size bytes of path until runtime has passed or maxOps are done, then (writes) fdatasync.
//
// The loop is kept as lean as fio's psync engine, since at thousands of IOPS every microsecond
// per request shows in the figure: one aligned buffer reused, pread/pwrite on the descriptor,
// no allocation (so the garbage collector never runs during the test), one clock read per
// request (a request's latency is the time since the previous one completed, which adds the
// few tens of nanoseconds of choosing the next offset), and the context checked every 64
// requests rather than every one.
func randomIO(ctx context.Context, ops suitekit.FileOps, path string, size, block uint64, write bool, runtime time.Duration, maxOps int, seed uint64) (suitekit.Phase, string, error) {
	var p suitekit.Phase
	flag := os.O_RDONLY
	if write {
		flag = os.O_WRONLY
	}
	f, note, err := openDirect(ops, path, flag)
	if err != nil {
		return p, note, err
	}
	defer f.Close()
	blocks := size / block
	if blocks == 0 {
		return p, note, fmt.Errorf("the file %s is smaller than one %d-byte request", path, block)
	}
	fd := suitekit.Descriptor(f)
	// Incompressible contents from the request stream's own generator: cutting them from the
	// 1 MiB suitekit.PatternBuf would spend milliseconds of the timed part generating bytes never used.
	rng := rand.New(rand.NewPCG(seed, 11))
	buf := alignedBuf(block)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	p = suitekit.NewPhase() // its histogram allocated now, outside the timed loop
	done := ctx.Done()
	start := time.Now()
	last := start
	for p.Ops < maxOps {
		if suitekit.Stopped(done, p.Ops) {
			return p, note, ctx.Err()
		}
		off := int64(rng.Uint64N(blocks) * block)
		if write {
			buf[0]++
		}
		if err := suitekit.Positional(f, fd, buf, off, write, rawIO); err != nil {
			what := "reading"
			if write {
				what = "writing"
			}
			return p, note, fmt.Errorf("%s %s at %d: %w", what, path, off, err)
		}
		now := time.Now()
		p.Lat.Add(now.Sub(last))
		last = now
		p.Ops++
		p.Bytes += block
		if now.Sub(start) >= runtime {
			break
		}
	}
	p.Work = last.Sub(start)
	if write {
		if err := f.Sync(); err != nil {
			return p, note, err
		}
	}
	return p, note, f.Close()
}

// file is the suite's one file, which randio_seq_write lays out and writes and the random
// tests use.
func file(r suites.Rep) string { return filepath.Join(r.Mountpoint(), randioDirName, "file") }

// seqWriteTest is randio_seq_write: the file laid out, then written in SeqBlock O_DIRECT
// writes, fsync timed.
func seqWriteTest(ctx context.Context, r suites.Rep, params *Params) ([]results.Measurement, error) {
	if err := r.Clear(ctx); err != nil {
		return nil, err
	}
	avail, _, err := suitekit.FreeSpace(r.Mountpoint())
	if err != nil {
		return nil, err
	}
	size, note := params.FileSize, ""
	if limit := avail / 10 * 4; size > limit {
		size = limit / params.SeqBlock * params.SeqBlock
		note = fmt.Sprintf("file of %s instead of %s to fit on the device", bytesize.Format(size), bytesize.Format(params.FileSize))
	}
	if err := os.Mkdir(filepath.Join(r.Mountpoint(), randioDirName), 0o755); err != nil {
		return nil, err
	}
	if err := layOutSeqFile(suitekit.OS{}, file(r), size); err != nil {
		return nil, err
	}
	var p suitekit.Phase
	var dnote string
	m, err := r.Timed(SeqWrite, size, func() error {
		var err error
		p, dnote, err = seqWriteDirect(ctx, suitekit.OS{}, file(r), size, params.SeqBlock)
		return err
	})
	if err != nil {
		return nil, err
	}
	m = suitekit.Rate(m, p, float64(p.Bytes)/1e6, catalog.MBps, note, dnote)
	classify(&m, SeqWrite)
	m.Extra["file_bytes"], m.Extra["block_bytes"] = float64(size), float64(params.SeqBlock)
	return []results.Measurement{m}, nil
}

// randomTest is randio_rand_write (write) or randio_rand_read: random RandBlock requests in
// the file randio_seq_write left, for Runtime or MaxOps requests.
func randomTest(test string, write bool) func(context.Context, suites.Rep) ([]results.Measurement, error) {
	return suites.WithParams(Name, Default, func(ctx context.Context, r suites.Rep, params *Params) ([]results.Measurement, error) {
		return random(ctx, r, params, test, write)
	})
}

// random is randomTest with its sizes.
func random(ctx context.Context, r suites.Rep, params *Params, test string, write bool) ([]results.Measurement, error) {
	if err := r.Clear(ctx, randioDirName); err != nil {
		return nil, err
	}
	fi, err := os.Stat(file(r))
	if err != nil {
		return nil, fmt.Errorf("the file of %s: %w", SeqWrite, err)
	}
	if !write {
		// Cold: with O_DIRECT the page cache is bypassed anyway, but a buffered fallback
		// must not start warm either.
		if err := (suitekit.OS{}).DropCaches(); err != nil {
			return nil, err
		}
	}
	size := uint64(fi.Size())
	var p suitekit.Phase
	var dnote string
	m, err := r.Timed(test, 0, func() error {
		var err error
		if params.Depth > 1 {
			p, dnote, err = queuedIO(ctx, file(r), size, params, write)
			return err
		}
		p, dnote, err = randomIO(ctx, suitekit.OS{}, file(r), size, params.RandBlock, write, params.Runtime.Duration, params.MaxOps, params.Seed)
		return err
	})
	if err != nil {
		return nil, err
	}
	m.LogicalBytes = p.Bytes
	if m.WallSeconds > 0 {
		m.MBps = float64(p.Bytes) / 1e6 / m.WallSeconds
	}
	if params.Depth > 1 {
		dnote = joinNotes(fmt.Sprintf("queue depth %d (native AIO, as fio's libaio iodepth)", params.Depth), dnote)
	}
	m = suitekit.Rate(m, p, float64(p.Ops), catalog.IOPS, dnote)
	classify(&m, test)
	m.Extra["file_bytes"], m.Extra["block_bytes"], m.Extra["iodepth"] = float64(size), float64(params.RandBlock), float64(max(params.Depth, 1))
	return []results.Measurement{m}, nil
}

// queuedIO is randomIO with params.Depth requests in flight (internal/iodepth: one task keeps
// them outstanding, as fio's libaio engine at that iodepth), then (writes) fsync.
func queuedIO(ctx context.Context, path string, size uint64, params *Params, write bool) (suitekit.Phase, string, error) {
	p := suitekit.NewPhase()
	flag := os.O_RDONLY
	if write {
		flag = os.O_WRONLY
	}
	f, note, err := openDirect(suitekit.OS{}, path, flag)
	if err != nil {
		return p, note, err
	}
	defer f.Close()
	fd := suitekit.Descriptor(f)
	if fd < 0 {
		return p, note, fmt.Errorf("%s has no descriptor for asynchronous I/O", path)
	}
	res, err := iodepth.Run(ctx, fd, iodepth.Job{Write: write, Random: true, Block: params.RandBlock, Size: size / params.RandBlock * params.RandBlock,
		Depth: params.Depth, Runtime: params.Runtime.Duration, Bytes: uint64(params.MaxOps) * params.RandBlock, Seed: params.Seed, Observe: p.Lat.Add})
	p.Ops, p.Bytes, p.Work = res.Ops, res.Bytes, res.Elapsed
	if err != nil {
		return p, note, err
	}
	if write {
		if err := f.Sync(); err != nil {
			return p, note, err
		}
	}
	return p, note, f.Close()
}

// classify records, for each application class, whether this test's figure meets the class's
// minimum: Extra "a1_pass"/"a2_pass" = 1 or 0, and a note. A card is in a class only when all
// three randio tests pass (the report combines them).
func classify(m *results.Measurement, test string) {
	if m.Value == nil {
		return
	}
	var parts []string
	for _, c := range catalog.AppClasses {
		need := ClassMinimum(c, test)
		pass := *m.Value >= need
		key := strings.ToLower(c.Name) + "_pass"
		m.Extra[key] = 0
		verdict := "fail"
		if pass {
			m.Extra[key] = 1
			verdict = "pass"
		}
		parts = append(parts, fmt.Sprintf("%s %s (needs >= %g %s)", c.Name, verdict, need, m.Unit))
	}
	m.Note = joinNotes(m.Note, strings.Join(parts, ", "))
}

// joinNotes joins two notes with "; ", either of which may be empty.
func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
