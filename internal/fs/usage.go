package fs

import (
	"fmt"
	"math"

	"golang.org/x/sys/unix"
)

// Usage is statfs of a mounted filesystem, as df shows it.
type Usage struct {
	TotalBytes uint64 `json:"total_bytes"`
	UsedBytes  uint64 `json:"used_bytes"`  // (blocks - free blocks) * block size
	FreeBytes  uint64 `json:"free_bytes"`  // free, including blocks reserved for root
	AvailBytes uint64 `json:"avail_bytes"` // free to ordinary users
	Files      uint64 `json:"files"`       // inodes; 0 where the filesystem has no fixed count (btrfs, erofs)
	FreeFiles  uint64 `json:"free_files"`
}

// StatUsage returns the usage of the filesystem mounted on dir.
func StatUsage(dir string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Usage{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return usageOf(&st), nil
}

// usageOf converts statfs results. Everything is uint64: on 32-bit ARM the block size field is an
// int32 and an int would overflow past 2 GiB.
func usageOf(st *unix.Statfs_t) Usage {
	// Block counts are in units of the fragment size, which statvfs(3) and so df use; Linux
	// filesystems set it equal to the block size, and very old kernels leave it 0.
	unit := uint64(st.Frsize)
	if st.Frsize <= 0 {
		unit = uint64(st.Bsize)
	}
	blocks, bfree := uint64(st.Blocks), uint64(st.Bfree)
	var used uint64
	if blocks > bfree {
		used = blocks - bfree
	}
	files, ffree := uint64(st.Files), uint64(st.Ffree)
	if files == math.MaxUint64 {
		// erofs reports f_files = ULLONG_MAX ("no limit") and f_ffree = ULLONG_MAX - inodes;
		// report no fixed count, as btrfs does with 0, rather than numbers no JSON reader
		// (float64) holds exactly.
		files, ffree = 0, 0
	}
	return Usage{
		TotalBytes: blocks * unit,
		UsedBytes:  used * unit,
		FreeBytes:  bfree * unit,
		AvailBytes: uint64(st.Bavail) * unit,
		Files:      files,
		FreeFiles:  ffree,
	}
}
