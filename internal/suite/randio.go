package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
)

// randioDirName is the directory of the randio suite's file.
const randioDirName = "randio"

// AppClass is an SD Association application performance class (SD 5.1 / 6.0): minimum sequential write
// and 4 KiB random IOPS.
type AppClass struct {
	Name                string
	SeqMBps             float64
	WriteIOPS, ReadIOPS float64
}

// AppClasses are A1 and A2.
var AppClasses = []AppClass{
	{Name: "A1", SeqMBps: 10, WriteIOPS: 500, ReadIOPS: 1500},
	{Name: "A2", SeqMBps: 10, WriteIOPS: 2000, ReadIOPS: 4000},
}

// randioSteps are how this package runs the suite's tests (Steps).
var randioSteps = []suites.Test{{Test: catalog.Test{Name: RandSeqWrite}, Run: step((*rep).randSeqWrite)},
	{Test: catalog.Test{Name: RandWrite4K}, Needs: []string{RandSeqWrite}, Run: step((*rep).randWrite)},
	{Test: catalog.Test{Name: RandRead4K}, Needs: []string{RandSeqWrite}, Run: step((*rep).randRead)}}

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
func openDirect(ops fileOps, path string, flag int) (opFile, string, error) {
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
func layOutSeqFile(ops fileOps, path string, size uint64) error {
	if err := ops.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := ops.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if ff, ok := f.(fdFile); ok && size > 0 {
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
func seqWriteDirect(ctx context.Context, ops fileOps, path string, size, block uint64) (phase, string, error) {
	var p phase
	f, note, err := openDirect(ops, path, os.O_WRONLY)
	if err != nil {
		return p, note, err
	}
	defer f.Close()
	buf := alignedBuf(block)
	copy(buf, patternBuf(5))
	start := time.Now()
	for off := uint64(0); off+block <= size; off += block {
		if err := ctx.Err(); err != nil {
			return p, note, err
		}
		buf[0], buf[1] = byte(off>>20), byte(off>>28) // no two blocks alike (dedup, compression)
		if err := p.timeOp(func() error { _, err := f.Write(buf); return err }); err != nil {
			return p, note, fmt.Errorf("writing %s: %w", path, err)
		}
		p.ops++
		p.bytes += block
	}
	p.work = time.Since(start)
	if err := f.Sync(); err != nil {
		return p, note, err
	}
	return p, note, f.Close()
}

// fdFile is an open file with a descriptor (*os.File is one): the random tests call pread(2)
// and pwrite(2) on it directly.
type fdFile interface{ Fd() uintptr }

// positional does one pread or pwrite of all of buf at off: on the descriptor when there is
// one (fd >= 0), skipping os.File's descriptor locking and its retry loop, as a raw system
// call when raw (see rawIO), else through f (the tests' fake). A short transfer is an error:
// with O_DIRECT and block-aligned requests inside the file, the kernel transfers all or
// nothing.
func positional(f opFile, fd int, buf []byte, off int64, write, raw bool) error {
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

// rawIO says whether pread/pwrite bypass the Go scheduler's system call bookkeeping: true on
// 64-bit architectures, where the offset is one register. A system call made the ordinary
// way (entersyscall) that blocks for the ~100 µs of a flash request makes the runtime's
// monitor hand the goroutine's processor to another thread and take it back afterwards:
// strace showed about one futex wake-up and one sysmon nanosleep per request, a third more CPU
// than fio and a slower return to user space. A raw system call keeps the processor; the cost
// is that a stop-the-world pause of the garbage collector waits for the request in flight
// (the random loop itself allocates nothing, so only other goroutines can start one).
var rawIO = unsafe.Sizeof(uintptr(0)) == 8

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

// randomIO does 4 KiB-aligned random requests (reads, or writes) at iodepth 1 over the first
// size bytes of path until runtime has passed or maxOps are done, then (writes) fdatasync.
//
// The loop is kept as lean as fio's psync engine, since at thousands of IOPS every microsecond
// per request shows in the figure: one aligned buffer reused, pread/pwrite on the descriptor,
// no allocation (so the garbage collector never runs during the test), one clock read per
// request (a request's latency is the time since the previous one completed, which adds the
// few tens of nanoseconds of choosing the next offset), and the context checked every 64
// requests rather than every one.
func randomIO(ctx context.Context, ops fileOps, path string, size, block uint64, write bool, runtime time.Duration, maxOps int, seed uint64) (phase, string, error) {
	var p phase
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
	fd := descriptor(f)
	// Incompressible contents from the request stream's own generator: cutting them from the
	// 1 MiB patternBuf would spend milliseconds of the timed part generating bytes never used.
	rng := rand.New(rand.NewPCG(seed, 11))
	buf := alignedBuf(block)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	p.lat.counts = new([latBuckets]uint64) // allocated now, outside the timed loop
	done := ctx.Done()
	start := time.Now()
	last := start
	for p.ops < maxOps {
		if stopped(done, p.ops) {
			return p, note, ctx.Err()
		}
		off := int64(rng.Uint64N(blocks) * block)
		if write {
			buf[0]++
		}
		if err := positional(f, fd, buf, off, write, rawIO); err != nil {
			what := "reading"
			if write {
				what = "writing"
			}
			return p, note, fmt.Errorf("%s %s at %d: %w", what, path, off, err)
		}
		now := time.Now()
		p.lat.add(now.Sub(last))
		last = now
		p.ops++
		p.bytes += block
		if now.Sub(start) >= runtime {
			break
		}
	}
	p.work = last.Sub(start)
	if write {
		if err := f.Sync(); err != nil {
			return p, note, err
		}
	}
	return p, note, f.Close()
}

func (r *rep) randFile() string { return filepath.Join(r.env.Mountpoint, randioDirName, "file") }

func (r *rep) randSeqWrite(ctx context.Context) ([]results.Measurement, error) {
	if err := r.keepOnly(ctx); err != nil {
		return nil, err
	}
	avail, _, err := r.space()
	if err != nil {
		return nil, err
	}
	size, note := r.randioParams().FileSize, ""
	if limit := avail / 10 * 4; size > limit {
		size = limit / r.randioParams().SeqBlock * r.randioParams().SeqBlock
		note = fmt.Sprintf("file of %s instead of %s to fit on the device", bytesize.Format(size), bytesize.Format(r.randioParams().FileSize))
	}
	if err := os.Mkdir(filepath.Join(r.env.Mountpoint, randioDirName), 0o755); err != nil {
		return nil, err
	}
	if err := layOutSeqFile(osOps{}, r.randFile(), size); err != nil {
		return nil, err
	}
	var p phase
	var dnote string
	m, err := r.timed(RandSeqWrite, size, func() error {
		var err error
		p, dnote, err = seqWriteDirect(ctx, osOps{}, r.randFile(), size, r.randioParams().SeqBlock)
		return err
	})
	if err != nil {
		return nil, err
	}
	m = rate(m, p, float64(p.bytes)/1e6, catalog.MBps, note, dnote)
	classify(&m, RandSeqWrite)
	m.Extra["file_bytes"], m.Extra["block_bytes"] = float64(size), float64(r.randioParams().SeqBlock)
	return []results.Measurement{m}, nil
}

func (r *rep) randWrite(ctx context.Context) ([]results.Measurement, error) {
	return r.randTest(ctx, RandWrite4K, true)
}

func (r *rep) randRead(ctx context.Context) ([]results.Measurement, error) {
	return r.randTest(ctx, RandRead4K, false)
}

func (r *rep) randTest(ctx context.Context, test string, write bool) ([]results.Measurement, error) {
	if err := r.keepOnly(ctx, randioDirName); err != nil {
		return nil, err
	}
	fi, err := os.Stat(r.randFile())
	if err != nil {
		return nil, fmt.Errorf("the file of %s: %w", RandSeqWrite, err)
	}
	if !write {
		// Cold: with O_DIRECT the page cache is bypassed anyway, but a buffered fallback
		// must not start warm either.
		if err := osOps.DropCaches(osOps{}); err != nil {
			return nil, err
		}
	}
	size := uint64(fi.Size())
	var p phase
	var dnote string
	m, err := r.timed(test, 0, func() error {
		var err error
		p, dnote, err = randomIO(ctx, osOps{}, r.randFile(), size, r.randioParams().RandBlock, write, r.randioParams().Runtime.Duration, r.randioParams().MaxOps, r.randioParams().Seed)
		return err
	})
	if err != nil {
		return nil, err
	}
	m.LogicalBytes = p.bytes
	if m.WallSeconds > 0 {
		m.MBps = float64(p.bytes) / 1e6 / m.WallSeconds
	}
	m = rate(m, p, float64(p.ops), catalog.IOPS, dnote)
	classify(&m, test)
	m.Extra["file_bytes"], m.Extra["block_bytes"] = float64(size), float64(r.randioParams().RandBlock)
	return []results.Measurement{m}, nil
}

// classify records, for each application class, whether this test's figure meets the class's
// minimum: Extra "a1_pass"/"a2_pass" = 1 or 0, and a note. A card is in a class only when all
// three randio tests pass (the report combines them).
func classify(m *results.Measurement, test string) {
	if m.Value == nil {
		return
	}
	var parts []string
	for _, c := range AppClasses {
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

// ClassMinimum is the minimum figure of a randio test for a class, in the test's unit.
func ClassMinimum(c AppClass, test string) float64 {
	switch test {
	case RandSeqWrite:
		return c.SeqMBps
	case RandWrite4K:
		return c.WriteIOPS
	default:
		return c.ReadIOPS
	}
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
