package smallfiles

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/suites/suitekit"
)

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
func writeLarge(ctx context.Context, ops suitekit.FileOps, path string, block uint64, blocks int) (suitekit.Phase, error) {
	var p suitekit.Phase
	pat := suitekit.PatternBuf(3)
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
		if err := p.TimeOp(func() error { _, err := f.Write(buf); return err }); err != nil {
			f.Close()
			return p, fmt.Errorf("writing %s: %w", path, err)
		}
		p.Ops++
		p.Bytes += uint64(len(buf))
	}
	if err := f.Close(); err != nil {
		return p, err
	}
	p.Work = time.Since(start)
	return p, ops.Syncfs(filepath.Dir(path))
}

// writeSmall writes n files of size bytes into dir, fsyncing each file before the next and,
// with dirsync, the directory after it. The latency of a file is its create, write, fsync(s)
// and close.
func writeSmall(ctx context.Context, ops suitekit.FileOps, dir string, n int, size uint64, dirsync bool) (suitekit.Phase, error) {
	var p suitekit.Phase
	pat := suitekit.PatternBuf(4)
	if err := ops.Mkdir(dir); err != nil {
		return p, err
	}
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return p, err
		}
		path := filepath.Join(dir, fmt.Sprintf("testing-%04d", i))
		err := p.TimeOp(func() error {
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
		p.Ops++
		p.Bytes += size
	}
	return p, nil
}

// largeTest writes the large file.
func largeTest(ctx context.Context, r suites.Rep, params *Params) ([]results.Measurement, error) {
	if err := r.Clear(ctx); err != nil {
		return nil, err
	}
	avail, _, err := suitekit.FreeSpace(r.Mountpoint())
	if err != nil {
		return nil, err
	}
	blocks, note := fitCount(params.Blocks, params.Block, avail, "blocks")
	var p suitekit.Phase
	logical := uint64(blocks) * params.Block
	m, err := r.Timed(Large, logical, func() error {
		var err error
		p, err = writeLarge(ctx, suitekit.OS{}, filepath.Join(r.Mountpoint(), "testing"), params.Block, blocks)
		return err
	})
	if err != nil {
		return nil, err
	}
	m = suitekit.Rate(m, p, float64(p.Bytes)/1e6, catalog.MBps, note)
	m.Extra["block_bytes"], m.Extra["blocks"] = float64(params.Block), float64(blocks)
	return []results.Measurement{m}, nil
}

// smallTest writes the small files, each fsync'ed and, with dirsync, its directory too.
func smallTest(test string, dirsync bool) func(context.Context, suites.Rep) ([]results.Measurement, error) {
	return suites.WithParams(Name, Default, func(ctx context.Context, r suites.Rep, params *Params) ([]results.Measurement, error) {
		if err := r.Clear(ctx); err != nil {
			return nil, err
		}
		avail, _, err := suitekit.FreeSpace(r.Mountpoint())
		if err != nil {
			return nil, err
		}
		// Each file also costs an inode and metadata blocks: count 4 KiB more per file.
		n, note := fitCount(params.Files, params.FileBytes+4096, avail, "files")
		var p suitekit.Phase
		m, err := r.Timed(test, uint64(n)*params.FileBytes, func() error {
			var err error
			p, err = writeSmall(ctx, suitekit.OS{}, filepath.Join(r.Mountpoint(), "small"), n, params.FileBytes, dirsync)
			return err
		})
		if err != nil {
			return nil, err
		}
		m = suitekit.Rate(m, p, float64(p.Ops), catalog.FilesPerSec, note)
		m.Extra["files"], m.Extra["file_bytes"] = float64(n), float64(params.FileBytes)
		return []results.Measurement{m}, nil
	})
}
