package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/dataset"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/nand"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/target"
)

// Share of each partition the flash suite's data takes, in raw bytes: the dataset (compressible,
// written by write_time and stored for mount/read/remove) and the video file (incompressible,
// written by video_write_time into the emptied filesystem) are each 40 % of the partition. The
// 2010 study filled its partitions about half (ubifs and jffs2 used 52–55 % at 8 MB after
// compression); 40 % raw leaves ubifs's index and journal room on the smallest partition.
const flashDataPercent = 40

// SizeLabel names a partition size compactly for variant names: "8M", "252M", "1G".
func SizeLabel(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	default:
		return fmt.Sprintf("%dK", n>>10)
	}
}

// runFlash carries out a run of the free-electrons suite on a simulated NAND chip (nandsim):
// for every partition size, every variant and every repetition, a fresh chip.
func runFlash(ctx context.Context, opt Options, sel suite.Selection) (out *Outcome, err error) {
	logf := opt.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cfg := opt.Config
	sizes := cfg.NANDSizes
	if len(sizes) == 0 {
		sizes = plan.DefaultNANDSizes
	}
	chip, timings := nand.DefaultChip, nand.DefaultTimings
	if opt.NANDNoDelays {
		timings = nand.Timings{}
	}
	for _, s := range sizes {
		if err := nand.CheckPartition(chip, s); err != nil {
			return nil, fmt.Errorf("--nand-sizes: %w", err)
		}
	}
	sys, err := fs.HostSystem()
	if err != nil {
		return nil, err
	}
	if !sys.HasModule("nandsim") {
		return nil, fmt.Errorf("this kernel (%s) has no nandsim module, which simulates the NAND chip: use --target vm, which boots a guest kernel that has it", sys.KernelRelease)
	}

	ses, out, err := openSession(opt, logf)
	if err != nil {
		return out, err
	}
	defer ses.close(&err)
	ledger, dir, work := ses.ledger, ses.dir, ses.work

	run := newRun(opt)
	out.Run = run
	save := func() error { return results.Save(dir, run) }
	run.Target = results.Target{Kind: "nandsim", Device: chip.Name, SizeBytes: chip.Size}
	delete(run.Methods, "freshness")
	delete(run.Methods, "device")
	delete(run.Methods, "cold")
	delete(run.Methods, "copy")
	run.Methods["nandsim"] = nandsimMethod(chip, timings)
	run.Methods["freshness"] = "each repetition loads a fresh nandsim chip (all blocks erased), stores the dataset on it as an image (mkfs.jffs2 + nandwrite; ubiformat, ubiattach, ubimkvol, mkfs.ubifs or mksquashfs + ubiupdatevol), then unloads every driver it loaded, so that init_time loads them as a board's boot does; at the end the chip is removed, as the 2010 study reset its board between filesystems"
	run.Methods["ubi_bad_block_reserve"] = "ubiattach --max-beb-per1024 scaled to the partition (extra.ubi_max_beb_per1024 of init_time): since Linux 3.7 UBI reserves 20 per 1024 erase blocks of the whole chip, which on a 256 MiB chip would take 40 of an 8 MiB partition's 64 blocks; scaled, each partition keeps the reserve a chip of its own size would have (2010 kernels reserved 1 % of the partition)"
	run.Methods["flash_dataset"] = fmt.Sprintf("per partition size: a generated rootfs-like tree and an incompressible video file of %d %% of the partition each (raw bytes), staged in RAM; dataset in results.json is the first size's", flashDataPercent)
	run.Methods["cold"] = "init_time, mount_time, read_time, remove_time, write_time and video_write_time start after sync and echo 3 > /proc/sys/vm/drop_caches"
	run.Methods["cpu"] = "user_s and sys_s: getrusage of fsbench and of the programs it waited for (modprobe, ubiattach); kernel threads (jffs2's garbage collector, ubi's background thread) are not included. MTD devices have no I/O counters, so no device bytes are recorded"

	// Which variants run, per partition size.
	type job struct {
		v    plan.Variant
		k    fs.Kind
		size uint64
	}
	var jobs []job
	kinds := map[string]fs.Kind{}
	for _, size := range sizes {
		for _, v := range cfg.Variants {
			k, ok := fs.Lookup(v.FS)
			if !ok {
				return out, fmt.Errorf("variant %s: unknown filesystem %q", v.Name, v.FS)
			}
			ev := v
			ev.Name = v.Name + "-" + SizeLabel(size)
			rv := results.Variant{Name: ev.Name, FS: v.FS, MkfsArgs: v.MkfsArgs, MountOptions: v.MountOptions, ReadOnly: k.ReadOnly,
				Base: v.Name, PartitionBytes: size}
			av := sys.Check(k)
			rv.Kernel = av.Kernel
			switch {
			case !k.Flash && k.Name != "squashfs":
				rv.Status, rv.Reason = results.Skipped, fmt.Sprintf("%s is a block-device filesystem: the free-electrons suite runs raw-flash filesystems (jffs2, ubifs) and squashfs on UBI; run it with the bootlin suite", k.Name)
			case !av.Runs:
				rv.Status, rv.Reason = results.Skipped, av.Reason
			case k.Name == "squashfs" && !sys.HasModule("ubi"):
				rv.Status, rv.Reason = results.Skipped, "this kernel has no ubi module, which squashfs on UBI needs"
			default:
				rv.Status = results.OK
				jobs = append(jobs, job{ev, k, size})
				kinds[k.Name] = k
			}
			if rv.Status == results.Skipped && size == sizes[0] {
				logf("skipping %s: %s", v.Name, rv.Reason)
			}
			run.Variants = append(run.Variants, rv)
		}
	}
	for _, k := range kinds {
		if ver, err := fs.ToolVersion(ctx, fs.DefaultRunner, k); err == nil {
			run.Tools[k.Tool] = ver
		} else {
			run.Tools[k.Tool] = "unknown: " + err.Error()
		}
	}
	if err := save(); err != nil {
		return out, err
	}
	mnt := filepath.Join(work, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return out, err
	}
	if err := ledger.AddMountpoint(mnt); err != nil {
		return out, err
	}

	first := 1
	if cfg.Warmup {
		first = 0
	}
	total := len(jobs) * (cfg.Repetitions - first + 1)
	done := 0
	started := time.Now()
	emit := func(m results.Measurement) error {
		run.Measurements = append(run.Measurements, m)
		return save()
	}
	for si, size := range sizes {
		var sized []job
		for _, j := range jobs {
			if j.size == size {
				sized = append(sized, j)
			}
		}
		if len(sized) == 0 {
			continue
		}
		st, unstage, err := stageFlashData(ctx, cfg, size, filepath.Join(work, "data-"+SizeLabel(size)), ledger, logf)
		if err != nil {
			return out, err
		}
		if si == 0 || run.Dataset.Files == 0 {
			run.Dataset = st.desc
		}
		env := &suite.FlashEnv{
			Chip: chip, Timings: timings, Mountpoint: mnt, WorkDir: st.scratch, Source: st.tree, Video: st.video,
			Dataset: st.stats, VideoBytes: st.desc.VideoBytes, Timeout: cfg.Timeout.Duration, Selection: sel,
			Run: fs.DefaultRunner, Log: logf,
		}
		for _, j := range sized {
			for n := first; n <= cfg.Repetitions; n++ {
				if opt.Progress != nil {
					p := Progress{Variant: j.v.Name, Rep: n, Reps: cfg.Repetitions, Done: done, Total: total}
					if done > 0 {
						p.ETA = time.Duration(float64(time.Since(started)) / float64(done) * float64(total-done))
					}
					env.OnTest = func(test string) { p.Test = test; opt.Progress(p) }
				}
				if err := suite.RunFlashRepetition(ctx, env, j.v, j.k, size, n, n == 0, emit); err != nil {
					unstage()
					return out, stopped(ctx, run, save, j.v.Name, n, err)
				}
				done++
			}
		}
		if err := unstage(); err != nil {
			return out, err
		}
	}
	run.Status, run.Finished = results.RunComplete, time.Now()
	run.Tool.PeakRSSBytes = measure.PeakRSS()
	return out, save()
}

// nandsimMethod describes the simulated chip for results.json.
func nandsimMethod(chip nand.Chip, t nand.Timings) string {
	s := fmt.Sprintf("%s, OOB %d bytes per page; each partition starts at block 0 of the chip", chip.Name, chip.OOBSize)
	if !t.Enabled {
		return s + "; no simulated delays (nandsim do_delays=0): times are the kernel's and the CPU's work only"
	}
	return s + fmt.Sprintf("; nandsim do_delays=1 busy-waits %d µs per page read (tR), %d µs per page program (tPROG), %d ms per block erase (tBERS), %d ns per byte out and %d ns per byte in: a 2 KiB-page SLC chip's datasheet figures", t.AccessUs, t.ProgramUs, t.EraseMs, t.OutputNs, t.InputNs)
}

// flashData is one partition size's data, in RAM.
type flashData struct {
	tree, video, scratch string
	stats                dataset.Stats
	desc                 results.Dataset
}

// stageFlashData generates the dataset and video for a partition of size bytes in a tmpfs at
// dir, with room for the filesystem image built from them. The returned function unmounts it.
func stageFlashData(ctx context.Context, cfg plan.Config, size uint64, dir string, ledger *target.Ledger, logf func(string, ...any)) (*flashData, func() error, error) {
	dsSize := cfg.DatasetSize
	if dsSize == 0 {
		dsSize = size * flashDataPercent / 100
	}
	videoSize := cfg.VideoSize
	if videoSize == 0 {
		videoSize = size * flashDataPercent / 100
	}
	// The tree, the video and an image as large as the partition, plus tmpfs's own overhead.
	need := dsSize + dsSize/8 + videoSize + size + 32<<20
	mi, err := measure.ReadMeminfo()
	if err != nil {
		return nil, nil, err
	}
	// nandsim keeps the chip's written pages in RAM too: up to the partition's size.
	if avail := mi["MemAvailable"]; need+size > avail*3/4 {
		return nil, nil, fmt.Errorf("a %s partition needs %s of RAM (the data, the image and the simulated chip) but only %s is available: leave out the largest --nand-sizes", plan.FormatSize(size), plan.FormatSize(need+size), plan.FormatSize(avail))
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, nil, err
	}
	if err := ledger.AddMountpoint(dir); err != nil {
		return nil, nil, err
	}
	if err := fs.MountTmpfs(dir, need); err != nil {
		return nil, nil, err
	}
	unstage := func() error {
		if err := fs.UnmountTmpfs(dir); err != nil {
			return err
		}
		return os.Remove(dir)
	}
	fail := func(err error) (*flashData, func() error, error) {
		unstage()
		return nil, nil, err
	}
	d := &flashData{tree: filepath.Join(dir, "rootfs"), video: filepath.Join(dir, "video.bin"), scratch: filepath.Join(dir, "scratch")}
	for _, p := range []string{d.tree, d.scratch} {
		if err := os.Mkdir(p, 0o755); err != nil {
			return fail(err)
		}
	}
	start := time.Now()
	st, err := dataset.Generate(ctx, d.tree, dataset.Spec{Seed: cfg.Seed, TargetBytes: dsSize})
	if err != nil {
		return fail(fmt.Errorf("generating the dataset: %w", err))
	}
	if err := dataset.WriteVideo(ctx, d.video, videoSize, cfg.Seed); err != nil {
		return fail(fmt.Errorf("generating the video file: %w", err))
	}
	d.stats = st
	d.desc = results.Dataset{Kind: "generated", Seed: cfg.Seed, Files: st.Files, Dirs: st.Dirs, Symlinks: st.Symlinks, Bytes: st.Bytes,
		LargestFile: st.LargestFile, MedianFile: st.MedianFile, Compressibility: st.Compressibility, SampledBytes: st.SampledBytes,
		Copies: 1, VideoBytes: videoSize, VideoCopies: 1}
	logf("%s partition: dataset of %d files, %s (compresses to %.0f %%), video %s; staged in RAM in %.1f s",
		plan.FormatSize(size), st.Files, plan.FormatSize(st.Bytes), 100*st.Compressibility, plan.FormatSize(videoSize), time.Since(start).Seconds())
	return d, unstage, nil
}

// CheckTarget refuses, before anything starts, a --target and suite list that cannot go
// together: the free-electrons suite on a block device, a block suite on nandsim, or the two
// kinds of suites mixed. vm is accepted with either: the guest runs them.
func CheckTarget(target, suites string) error {
	if target == "vm" || strings.HasPrefix(target, "vm:") {
		if !suite.IsFlashSuite(suites) && strings.Contains(suites, plan.FlashSuite) {
			return fmt.Errorf("suite %s cannot be combined with block-device suites: run it on its own", plan.FlashSuite)
		}
		return nil
	}
	kind, _, err := ParseTarget(target)
	if err != nil {
		return err
	}
	_, err = flashTarget(kind, suites)
	return err
}

// flashTarget reports whether a run goes to the raw-flash path, and refuses the mixes that
// cannot work: the free-electrons suite on a block device, or a block suite on nandsim.
func flashTarget(kind string, suites string) (bool, error) {
	flashSuite := suite.IsFlashSuite(suites)
	switch {
	case kind == "nandsim" && !flashSuite:
		return false, fmt.Errorf("--target nandsim runs the free-electrons suite only (raw flash has no block device for suite %s): add --suite free-electrons", suites)
	case kind != "nandsim" && flashSuite:
		return false, fmt.Errorf("the free-electrons suite runs on raw NAND, not on a block device: use --target vm (a guest kernel with nandsim) or --target nandsim on a kernel that has it")
	case kind != "nandsim" && strings.Contains(suites, plan.FlashSuite):
		return false, fmt.Errorf("suite %s cannot be combined with block-device suites: run it on its own", plan.FlashSuite)
	}
	return flashSuite, nil
}
