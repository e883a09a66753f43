package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/dataset"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/suite"
)

// Scaling of the generated data to a block device: the 5 copies of the tree fill ~42 % of it and
// the 5 video copies (written after the tree is removed) ~62 %, leaving room for journals,
// metadata and the reserves of copy-on-write filesystems. A well-filled device is the harder
// and more realistic case for flash (less free space for the FTL and the filesystem's cleaner).
// On raw NAND the dataset and the video are each plan.FlashDataPercent of the partition, and
// stored once.
const (
	datasetShare = 12 // device size / datasetShare = dataset size
	videoShare   = 8  // device size / videoShare = video size
	copies       = 5
)

// userData is the user's own tree (--dataset), described before anything is made.
type userData struct {
	dir   string
	stats dataset.Stats
}

func describeUserData(ctx context.Context, dir string) (*userData, error) {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return nil, plan.Refusef("--dataset %s: not a directory (%v): give the root of a tree, such as an unpacked root filesystem", dir, err)
	}
	st, err := dataset.Describe(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("reading the dataset %s: %w", dir, err)
	}
	return &userData{dir: dir, stats: st}, nil
}

// checkFits refuses a tree whose copies cannot fit on the device (the write test would fail
// with ENOSPC after the tree was staged in RAM), and warns when they fill most of it.
func (u *userData) checkFits(size uint64, logf func(string, ...any)) error {
	total := uint64(copies) * u.stats.Bytes
	switch {
	case total > size*9/10:
		return plan.Refusef("--dataset %s holds %s: its %d copies (%s) cannot fit on the %s device: use a larger --size or a smaller tree",
			u.dir, bytesize.Format(u.stats.Bytes), copies, bytesize.Format(total), bytesize.Format(size))
	case total > size*6/10:
		logf("warning: %d copies of %s (%s) fill more than 60 %% of the %s device: the write test may fail with ENOSPC; use a larger --size",
			copies, u.dir, bytesize.Format(u.stats.Bytes), bytesize.Format(size))
	}
	return nil
}

// dataNeed is what one group's data takes in RAM.
type dataNeed struct {
	datasetBytes, videoBytes uint64
	// tmpfs is the size of the tmpfs holding the data and the scratch space for images.
	tmpfs uint64
	// ram is what the group needs in RAM in all (nandsim keeps the written chip in RAM too).
	ram   uint64
	share uint64 // percent of MemAvailable the group may take
	flash bool
	part  uint64 // the device or partition size the data is scaled to
	user  *userData
}

// dataNeeds sizes a group's data: generated and scaled to size, or the user's tree.
func dataNeeds(cfg plan.Config, size uint64, rawFlash bool, user *userData) dataNeed {
	n := dataNeed{flash: rawFlash, part: size, user: user, share: 50}
	switch {
	case rawFlash:
		n.datasetBytes, n.videoBytes = size*plan.FlashDataPercent/100, size*plan.FlashDataPercent/100
	case user != nil:
		n.datasetBytes, n.videoBytes = user.stats.Bytes, max(size/videoShare, 1<<20)
	default:
		n.datasetBytes, n.videoBytes = max(size/datasetShare, 1<<20), max(size/videoShare, 1<<20)
	}
	if cfg.DatasetSize > 0 && user == nil {
		n.datasetBytes = cfg.DatasetSize
	}
	if cfg.VideoSize > 0 {
		n.videoBytes = cfg.VideoSize
	}
	// tmpfs accounting: file data rounds up to pages; directories and inodes cost a little. The
	// scratch space holds a read-only image built from the tree (at most the tree's size) or,
	// on raw NAND, an image as large as the partition.
	image := n.datasetBytes
	if rawFlash {
		image = size
	}
	n.tmpfs = n.datasetBytes + n.datasetBytes/8 + n.videoBytes + image + 32<<20
	n.ram = n.tmpfs
	if rawFlash {
		n.ram += size // nandsim keeps the chip's written pages in RAM: up to the partition's size
		n.share = 75
	}
	return n
}

// checkRAM refuses data that would not fit in RAM, before it is staged.
func (n dataNeed) checkRAM() error {
	mi, err := measure.ReadMeminfo()
	if err != nil {
		return err
	}
	avail := mi["MemAvailable"]
	if n.ram <= avail*n.share/100 {
		return nil
	}
	if n.flash {
		return plan.Refusef("a %s partition needs %s of RAM (the data, the image and the simulated chip) but only %s is available: leave out the largest --nand-sizes",
			bytesize.Format(n.part), bytesize.Format(n.ram), bytesize.Format(avail))
	}
	if n.user != nil {
		return plan.Refusef("--dataset %s (%s) and the video need %s of RAM (tmpfs) but only %s is available: use a smaller tree",
			n.user.dir, bytesize.Format(n.user.stats.Bytes), bytesize.Format(n.ram), bytesize.Format(avail))
	}
	return plan.Refusef("the dataset and video need %s of RAM (tmpfs) but only %s is available: use a smaller --dataset-size/--video-size or --size",
		bytesize.Format(n.ram), bytesize.Format(avail))
}

// staged is a group's data in RAM: a private tmpfs with the tree, the video and scratch space.
type staged struct {
	dir, tree, video, scratch string
	stats                     dataset.Stats
	desc                      results.Dataset
	copies                    int
}

// stage makes a tmpfs in the session's work directory and fills it: the dataset in RAM, as
// Bootlin copied it from a ramfs, so that the source is never the bottleneck nor puts I/O on
// any device.
func stage(ctx context.Context, s *session.Session, cfg plan.Config, g group, logf func(string, ...any)) (*staged, error) {
	n := g.need
	d := &staged{dir: filepath.Join(s.Work, "data-"+bytesize.Label(g.size)), copies: copies}
	if n.flash {
		d.copies = 1
	}
	if err := s.Mountpoint(d.dir); err != nil {
		return nil, err
	}
	if err := fs.MountTmpfs(d.dir, n.tmpfs); err != nil {
		return nil, err
	}
	s.OnClose("tmpfs "+d.dir, func() error { return fs.UnmountTmpfs(d.dir) })
	d.tree, d.video, d.scratch = filepath.Join(d.dir, "rootfs"), filepath.Join(d.dir, "video.bin"), filepath.Join(d.dir, "scratch")
	if err := os.Mkdir(d.scratch, 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	if n.user != nil {
		if _, err := dataset.CopyTree(ctx, n.user.dir, d.tree, dataset.CopyOptions{}); err != nil {
			return nil, fmt.Errorf("copying the dataset into RAM: %w", err)
		}
		d.stats = n.user.stats
		d.desc = results.Dataset{Kind: "directory", Path: n.user.dir}
	} else {
		if err := os.Mkdir(d.tree, 0o755); err != nil {
			return nil, err
		}
		st, err := dataset.Generate(ctx, d.tree, dataset.Spec{Seed: cfg.Seed, TargetBytes: n.datasetBytes})
		if err != nil {
			return nil, fmt.Errorf("generating the dataset: %w", err)
		}
		d.stats = st
		d.desc = results.Dataset{Kind: "generated", Seed: cfg.Seed}
	}
	if err := dataset.WriteVideo(ctx, d.video, n.videoBytes, cfg.Seed); err != nil {
		return nil, fmt.Errorf("generating the video file: %w", err)
	}
	st := d.stats
	d.desc.Files, d.desc.Dirs, d.desc.Symlinks, d.desc.Bytes = st.Files, st.Dirs, st.Symlinks, st.Bytes
	d.desc.LargestFile, d.desc.MedianFile = st.LargestFile, st.MedianFile
	d.desc.Compressibility, d.desc.SampledBytes = st.Compressibility, st.SampledBytes
	d.desc.Copies, d.desc.VideoBytes, d.desc.VideoCopies = d.copies, n.videoBytes, d.copies
	where := ""
	if n.flash {
		where = bytesize.Format(g.size) + " partition: "
	}
	logf("%sdataset: %d files, %d dirs, %d symlinks, %s (compresses to %.0f %%), video %s; staged in RAM in %.1f s",
		where, st.Files, st.Dirs, st.Symlinks, bytesize.Format(st.Bytes), 100*st.Compressibility, bytesize.Format(n.videoBytes), time.Since(start).Seconds())
	return d, nil
}

// fill points a repetition's environment at the staged data.
func (d *staged) fill(env *suite.Env) {
	env.Source, env.Video, env.WorkDir, env.Dataset = d.tree, d.video, d.scratch, d.stats
	env.Copies, env.VideoCopies, env.VideoBytes = d.copies, d.copies, d.desc.VideoBytes
}

// unstage frees the RAM of a group's data once its repetitions are done (raw NAND stages one
// partition size after the other); the session's cleanup does it otherwise.
func (d *staged) unstage() error {
	if err := fs.UnmountTmpfs(d.dir); err != nil {
		return err
	}
	return os.Remove(d.dir)
}
