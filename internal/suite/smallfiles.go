package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
)

// smallfilesSteps are how this package runs the suite's tests (Steps).
var smallfilesSteps = []suites.Test{{Test: catalog.Test{Name: SmallLarge}, Run: step((*rep).smallLarge)},
	{Test: catalog.Test{Name: SmallFsync}, Run: step((*rep).smallFsync)},
	{Test: catalog.Test{Name: SmallDirsync}, Run: step((*rep).smallDirsync)}}

// fitCount scales a count of equal pieces to 40 % of the free space (at least 1), with a note.
func fitCount(want int, each, avail uint64, what string) (int, string) {
	limit := avail / 10 * 4
	if uint64(want)*each <= limit {
		return want, ""
	}
	n := max(int(limit/each), 1)
	return n, fmt.Sprintf("%d %s instead of %d to fit on the device", n, what, want)
}

// writeLarge writes blocks × block bytes to path in block-sized writes, then syncfs (the
// timed sync of "dd ...; sync").
func writeLarge(ctx context.Context, ops fileOps, path string, block uint64, blocks int) (phase, error) {
	var p phase
	pat := patternBuf(3)
	start := time.Now()
	f, err := ops.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return p, err
	}
	for i := 0; i < blocks; i++ {
		if err := ctx.Err(); err != nil {
			f.Close()
			return p, err
		}
		at := (uint64(i) * block) % uint64(len(pat))
		buf := pat[at:min(at+block, uint64(len(pat)))]
		if err := p.timeOp(func() error { _, err := f.Write(buf); return err }); err != nil {
			f.Close()
			return p, fmt.Errorf("writing %s: %w", path, err)
		}
		p.ops++
		p.bytes += uint64(len(buf))
	}
	if err := f.Close(); err != nil {
		return p, err
	}
	p.work = time.Since(start)
	return p, ops.Syncfs(filepath.Dir(path))
}

// writeSmall writes n files of size bytes into dir, fsyncing each file before the next and,
// with dirsync, the directory after it. The latency of a file is its create, write, fsync(s)
// and close.
func writeSmall(ctx context.Context, ops fileOps, dir string, n int, size uint64, dirsync bool) (phase, error) {
	var p phase
	pat := patternBuf(4)
	if err := ops.Mkdir(dir); err != nil {
		return p, err
	}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		path := filepath.Join(dir, fmt.Sprintf("testing-%04d", i))
		err := p.timeOp(func() error {
			f, err := ops.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			for left := size; left > 0; {
				at := (uint64(i)*size + size - left) % uint64(len(pat))
				k := min(left, uint64(len(pat))-at)
				if _, err := f.Write(pat[at : at+k]); err != nil {
					f.Close()
					return err
				}
				left -= k
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if dirsync {
				return ops.SyncDir(dir)
			}
			return nil
		})
		if err != nil {
			return p, fmt.Errorf("small file %s: %w", path, err)
		}
		p.ops++
		p.bytes += size
	}
	return p, nil
}

func (r *rep) smallLarge(ctx context.Context) ([]results.Measurement, error) {
	if err := r.keepOnly(ctx); err != nil {
		return nil, err
	}
	avail, _, err := r.space()
	if err != nil {
		return nil, err
	}
	blocks, note := fitCount(r.smallfilesParams().Blocks, r.smallfilesParams().Block, avail, "blocks")
	var p phase
	logical := uint64(blocks) * r.smallfilesParams().Block
	m, err := r.timed(SmallLarge, logical, func() error {
		var err error
		p, err = writeLarge(ctx, osOps{}, filepath.Join(r.env.Mountpoint, "testing"), r.smallfilesParams().Block, blocks)
		return err
	})
	if err != nil {
		return nil, err
	}
	m = rate(m, p, float64(p.bytes)/1e6, catalog.MBps, note)
	m.Extra["block_bytes"], m.Extra["blocks"] = float64(r.smallfilesParams().Block), float64(blocks)
	return []results.Measurement{m}, nil
}

func (r *rep) smallFsync(ctx context.Context) ([]results.Measurement, error) {
	return r.smallFiles(ctx, SmallFsync, false)
}

func (r *rep) smallDirsync(ctx context.Context) ([]results.Measurement, error) {
	return r.smallFiles(ctx, SmallDirsync, true)
}

func (r *rep) smallFiles(ctx context.Context, test string, dirsync bool) ([]results.Measurement, error) {
	if err := r.keepOnly(ctx); err != nil {
		return nil, err
	}
	avail, _, err := r.space()
	if err != nil {
		return nil, err
	}
	// Each file also costs an inode and metadata blocks: count 4 KiB more per file.
	n, note := fitCount(r.smallfilesParams().Files, r.smallfilesParams().FileBytes+4096, avail, "files")
	var p phase
	m, err := r.timed(test, uint64(n)*r.smallfilesParams().FileBytes, func() error {
		var err error
		p, err = writeSmall(ctx, osOps{}, filepath.Join(r.env.Mountpoint, "small"), n, r.smallfilesParams().FileBytes, dirsync)
		return err
	})
	if err != nil {
		return nil, err
	}
	m = rate(m, p, float64(p.ops), catalog.FilesPerSec, note)
	m.Extra["files"], m.Extra["file_bytes"] = float64(n), float64(r.smallfilesParams().FileBytes)
	return []results.Measurement{m}, nil
}
