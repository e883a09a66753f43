package fs

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
)

// FreeSpace is how fragmented a filesystem's free space is: how many free extents it has and
// their mean size.
type FreeSpace struct {
	Extents  uint64
	AvgBytes float64
}

var (
	e2Extents = regexp.MustCompile(`(?m)^Num\. free extent: (\d+)`)
	e2Avg     = regexp.MustCompile(`(?m)^Avg\. free extent: (\d+) KB`)
	xfsBlock  = regexp.MustCompile(`(?m)^blocksize = (\d+)`)
	xfsTotal  = regexp.MustCompile(`(?m)^total free extents (\d+)`)
	xfsBlocks = regexp.MustCompile(`(?m)^total free blocks (\d+)`)
)

// MeasureFreeSpace reads the free-space fragmentation of the unmounted filesystem on dev with
// the filesystem's own tool: e2freefrag for ext2/3/4, xfs_db's freesp for xfs. ok is false for
// the filesystems whose tools give no such figure offline (btrfs, f2fs, nilfs2, ...).
func MeasureFreeSpace(ctx context.Context, run Runner, k Kind, dev string) (fs FreeSpace, ok bool, err error) {
	if err := checkDevice(ctx, dev); err != nil {
		return fs, false, err
	}
	// Read-only tools, confined like every program pointed at a device: dev is the only one
	// in their /dev.
	ctx = withJail(ctx, jail{devices: []string{dev}})
	switch k.Name {
	case "ext2", "ext3", "ext4":
		out, err := runner(run)(ctx, "e2freefrag", dev)
		if err != nil {
			return fs, false, fmt.Errorf("e2freefrag %s: %w (e2fsprogs)", dev, err)
		}
		n, avg := e2Extents.FindSubmatch(out), e2Avg.FindSubmatch(out)
		if n == nil || avg == nil {
			return fs, false, fmt.Errorf("e2freefrag %s: no free extent figures in its output", dev)
		}
		fs.Extents, _ = strconv.ParseUint(string(n[1]), 10, 64)
		kb, _ := strconv.ParseFloat(string(avg[1]), 64)
		fs.AvgBytes = kb * 1024
		return fs, true, nil
	case "xfs":
		out, err := runner(run)(ctx, "xfs_db", "-r", "-c", "sb 0", "-c", "print blocksize", "-c", "freesp -s", dev)
		if err != nil {
			return fs, false, fmt.Errorf("xfs_db freesp %s: %w (xfsprogs)", dev, err)
		}
		bs, n, blocks := xfsBlock.FindSubmatch(out), xfsTotal.FindSubmatch(out), xfsBlocks.FindSubmatch(out)
		if bs == nil || n == nil || blocks == nil {
			return fs, false, fmt.Errorf("xfs_db freesp %s: no free extent figures in its output", dev)
		}
		b, _ := strconv.ParseFloat(string(bs[1]), 64)
		fs.Extents, _ = strconv.ParseUint(string(n[1]), 10, 64)
		nb, _ := strconv.ParseFloat(string(blocks[1]), 64)
		if fs.Extents > 0 {
			fs.AvgBytes = nb * b / float64(fs.Extents)
		}
		return fs, true, nil
	}
	return fs, false, nil
}
