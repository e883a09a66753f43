package dataset

import (
	"context"
	"fmt"
	"math/rand/v2"

	"golang.org/x/sys/unix"
)

// WriteVideo writes an incompressible file of exactly size bytes at path (created, or
// truncated if it exists), the stand-in for the "video" of Bootlin's method: compressing
// filesystems must store it as is. Contents are PCG output seeded by seed (the same seed and
// size give the same file); the mtime is fixed. Honours ctx between 256 KiB chunks. The
// writes land in the page cache: a caller that times this must sync.
func WriteVideo(ctx context.Context, path string, size uint64, seed uint64) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return wrapPathErr("video: create", path, err)
	}
	var rng rand.PCG
	rng.Seed(seed, 0x766964656f)
	buf := make([]byte, min(size, genChunk))
	for left := size; left > 0; {
		if err := ctx.Err(); err != nil {
			unix.Close(fd)
			return fmt.Errorf("dataset: writing video %s: %w", path, err)
		}
		chunk := buf[:min(left, uint64(len(buf)))]
		fillRandom(&rng, chunk)
		if err := writeAll(fd, chunk); err != nil {
			unix.Close(fd)
			return wrapPathErr("video: write", path, err)
		}
		left -= uint64(len(chunk))
	}
	if err := unix.Close(fd); err != nil {
		return wrapPathErr("video: close", path, err)
	}
	return setTimes(path, baseTime)
}
