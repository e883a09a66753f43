package bonnie

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites/suitekit"
)

// The block I/O tests on one large file: write, rewrite, read and random seeks.

// ---- sizes ----

const bonnieDir = "bonnie-io" // the block I/O file's directory

// bonnieSizing is what the bonnie tests use on this filesystem, with the notes to record.
type bonnieSizing struct {
	fileSize uint64
	files    int
	note     string // about the file size
	fileNote string // about the file count
}

// ramBytes returns the machine's memory in bytes (MemTotal); a variable for tests.
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

func (r rep) sizing() (bonnieSizing, error) {
	avail, inodes, err := suitekit.FreeSpace(r.Mountpoint())
	if err != nil {
		return bonnieSizing{}, err
	}
	// The block I/O file lives in bonnie-io; count its space as free for the size decision.
	if fi, err := os.Stat(filepath.Join(r.Mountpoint(), bonnieDir, "file")); err == nil {
		avail += uint64(fi.Size())
	}
	ram, err := ramBytes()
	if err != nil {
		return bonnieSizing{}, err
	}
	s := bonnieSizing{}
	s.fileSize, s.note = bonnieSize(r.p.FileSize, avail, ram)
	s.files, s.fileNote = bonnieFiles(r.p.Files, inodes)
	return s, nil
}

// bonnieExtra records the parameters with each bonnie measurement, for the bonnie++ CSV export.
func bonnieExtra(m *results.Measurement, s bonnieSizing, p *Params) {
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

// ---- block I/O ----

// blockWrite writes size bytes to path in chunk-sized write(2) calls, then syncfs.
//
// The loop is as lean as bonnie++'s, whose write loop is a bare write(2) per chunk: at 8 KiB a
// call and 1 GB/s that is 8 µs a call, so every half microsecond shows in the figure. write(2)
// goes to the descriptor (fdWrite), not through os.File, whose descriptor locking and
// bookkeeping kept fsbench at 0.81-0.86 of bonnie++ (a plain unix.Write loop reached 0.97 of
// the same loop in C). One clock read per call, not two (a call's latency is the time since
// the previous one returned), the context checked every 64 calls, and the latency histogram
// allocated before the clock starts. The data stays incompressible: the chunks are cut in
// turn from one pre-generated MiB (suitekit.PatternBuf), so nothing is generated in the loop.
func blockWrite(ctx context.Context, ops suitekit.FileOps, path string, size, chunk uint64) (suitekit.Phase, error) {
	pat := suitekit.PatternBuf(1)
	p := suitekit.NewPhase()
	done := ctx.Done()
	start := time.Now()
	f, err := ops.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return p, err
	}
	fd := suitekit.Descriptor(f)
	last := time.Now()
	var off uint64
	for off < size {
		if suitekit.Stopped(done, p.Ops) {
			f.Close()
			return p, ctx.Err()
		}
		n := min(chunk, size-off)
		at := off % uint64(len(pat))
		buf := pat[at : at+min(n, uint64(len(pat))-at)]
		w, err := fdWrite(f, fd, buf)
		p.Lap(&last)
		if err != nil {
			f.Close()
			return p, fmt.Errorf("writing %s: %w", path, err)
		}
		off += uint64(w)
		p.Ops++
	}
	p.Bytes = off
	if err := f.Close(); err != nil {
		return p, err
	}
	p.Work = time.Since(start)
	return p, ops.Syncfs(filepath.Dir(path))
}

// openFD opens an existing file for a phase and returns its descriptor too (-1: none).
func openFD(ops suitekit.FileOps, path string, flag int) (suitekit.File, int, error) {
	f, err := ops.OpenFile(path, flag, 0)
	if err != nil {
		return nil, -1, err
	}
	return f, suitekit.Descriptor(f), nil
}

// fdWrite is one write(2) of buf on fd, or f.Write when fd < 0. It is unix.Write, not a raw
// system call: a write that waits for the card (or for reclaim) must let the Go scheduler run
// the other goroutines meanwhile, or a stop-the-world pause would wait for it.
func fdWrite(f suitekit.File, fd int, buf []byte) (int, error) {
	if fd < 0 {
		return f.Write(buf)
	}
	for {
		n, err := unix.Write(fd, buf)
		// As in suitekit.Positional: EINTR despite SA_RESTART on some filesystems.
		if err != unix.EINTR {
			return n, err
		}
	}
}

// blockRewrite reads each chunk, changes it, and writes it back in place, then syncfs. As in
// blockWrite, the system calls go to the descriptor, with one clock read per chunk.
func blockRewrite(ctx context.Context, ops suitekit.FileOps, path string, size, chunk uint64) (suitekit.Phase, error) {
	p := suitekit.NewPhase()
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
		if suitekit.Stopped(done, p.Ops) {
			return p, ctx.Err()
		}
		b := buf[:min(chunk, size-off)]
		// Not positional's raw system calls: a block test's request may wait for the card
		// (or for reclaim), and the Go scheduler must be free to run the other goroutines.
		err := suitekit.Positional(f, fd, b, int64(off), false, false)
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			b[0]++ // bonnie++ dirties each chunk before writing it back
			err = suitekit.Positional(f, fd, b, int64(off), true, false)
		}
		p.Lap(&last)
		if err != nil {
			return p, fmt.Errorf("rewriting %s at %d: %w", path, off, err)
		}
		p.Ops++
		p.Bytes += uint64(len(b))
	}
	if err := f.Close(); err != nil {
		return p, err
	}
	p.Work = time.Since(start)
	return p, ops.Syncfs(filepath.Dir(path))
}

// blockRead reads the file in chunk-sized read(2) calls, on the descriptor as blockWrite
// writes.
func blockRead(ctx context.Context, ops suitekit.FileOps, path string, chunk uint64) (suitekit.Phase, error) {
	p := suitekit.NewPhase()
	done := ctx.Done()
	f, fd, err := openFD(ops, path, os.O_RDONLY)
	if err != nil {
		return p, err
	}
	defer f.Close()
	buf := make([]byte, chunk)
	last := time.Now()
	for k := 0; ; k++ {
		if suitekit.Stopped(done, k) {
			return p, ctx.Err()
		}
		n, err := fdRead(f, fd, buf)
		p.Lap(&last)
		p.Bytes += uint64(n)
		if n > 0 {
			p.Ops++
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
func fdRead(f suitekit.File, fd int, buf []byte) (int, error) {
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
func seeks(ctx context.Context, ops suitekit.FileOps, path string, size, chunk uint64, total, workers int, seed uint64) (suitekit.Phase, error) {
	var p suitekit.Phase
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
			var mine suitekit.Phase
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
					err := mine.TimeOp(func() error {
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
					mine.Ops++
					mine.Bytes += chunk
				}
				return f.Close()
			}()
			mu.Lock()
			p.Ops += mine.Ops
			p.Bytes += mine.Bytes
			p.Lat.Merge(&mine.Lat)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return p, err
	}
	p.Work = time.Since(start)
	return p, ops.Syncfs(filepath.Dir(path))
}

func (r rep) file() string { return filepath.Join(r.Mountpoint(), bonnieDir, "file") }

func (r rep) writeTest(ctx context.Context) ([]results.Measurement, error) {
	return r.blockTest(ctx, Write, false, catalog.KiBps, func(s bonnieSizing) (suitekit.Phase, error) {
		return blockWrite(ctx, suitekit.OS{}, r.file(), s.fileSize, r.p.ChunkSize)
	})
}

// blockTest is the frame of bonnie's tests on its one large file: clear the filesystem of
// everything else, size the file (bonnie_write makes it; the others use what it left), drop
// the caches for the cold ones, run op inside the measurement, and turn its phase into a rate in
// unit (KiB/s of bytes moved, or seeks/s).
func (r rep) blockTest(ctx context.Context, test string, cold bool, unit string, op func(bonnieSizing) (suitekit.Phase, error)) ([]results.Measurement, error) {
	write := test == Write
	var keep []string
	if !write {
		keep = []string{bonnieDir}
	}
	if err := r.Clear(ctx, keep...); err != nil {
		return nil, err
	}
	var s bonnieSizing
	var err error
	if write {
		if s, err = r.sizing(); err == nil {
			err = os.Mkdir(filepath.Join(r.Mountpoint(), bonnieDir), 0o755)
		}
	} else {
		s, err = r.ioSize()
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
	var p suitekit.Phase
	m, err := r.Timed(test, logical, func() error {
		var err error
		p, err = op(s)
		return err
	})
	if err != nil {
		return nil, err
	}
	amount := float64(p.Ops)
	if unit == catalog.KiBps {
		amount = float64(p.Bytes) / 1024
	}
	m = suitekit.Rate(m, p, amount, unit, s.note)
	bonnieExtra(&m, s, r.p)
	return []results.Measurement{m}, nil
}

// ioSize is the size of the file bonnie_write left.
func (r rep) ioSize() (bonnieSizing, error) {
	s, err := r.sizing()
	if err != nil {
		return s, err
	}
	fi, err := os.Stat(r.file())
	if err != nil {
		return s, fmt.Errorf("the file of bonnie_write: %w", err)
	}
	s.fileSize = uint64(fi.Size())
	_, s.note = bonnieSize(s.fileSize, s.fileSize*2, mustRAM())
	return s, nil
}

// mustRAM is the machine's memory, 0 when it cannot be read (the note then leaves it out).
func mustRAM() uint64 {
	ram, _ := ramBytes()
	return ram
}

func (r rep) rewriteTest(ctx context.Context) ([]results.Measurement, error) {
	return r.blockTest(ctx, Rewrite, false, catalog.KiBps, func(s bonnieSizing) (suitekit.Phase, error) {
		return blockRewrite(ctx, suitekit.OS{}, r.file(), s.fileSize, r.p.ChunkSize)
	})
}

// readTest is cold, unlike bonnie++, which relies on the 2 × RAM size alone.
func (r rep) readTest(ctx context.Context) ([]results.Measurement, error) {
	return r.blockTest(ctx, Read, true, catalog.KiBps, func(bonnieSizing) (suitekit.Phase, error) {
		return blockRead(ctx, suitekit.OS{}, r.file(), r.p.ChunkSize)
	})
}

func (r rep) seekTest(ctx context.Context) ([]results.Measurement, error) {
	return r.blockTest(ctx, Seeks, true, catalog.SeeksPerSec, func(s bonnieSizing) (suitekit.Phase, error) {
		return seeks(ctx, suitekit.OS{}, r.file(), s.fileSize, r.p.ChunkSize, r.p.Seeks, r.p.Seekers, r.p.Seed)
	})
}
