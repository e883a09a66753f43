package nandsim

import (
	"context"
	"fmt"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/nand"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
)

func init() {
	plan.RegisterTargetForm(plan.TargetNandsim, plan.TargetForm{Usage: "nandsim (raw NAND, suite free-electrons)", Parse: plan.NoArg(plan.TargetNandsim)})
	targets.RegisterKind(plan.TargetNandsim, targets.LocalDevice|targets.RawFlash, func(b targets.Base) targets.Target { return &nandsimTarget{b} })
}

// nandsimTarget is a simulated raw NAND chip (the kernel's nandsim) for the free-electrons
// suite: every repetition loads a fresh chip with a partition of one of the configured sizes,
// so each configured variant runs once per partition size.
type nandsimTarget struct{ targets.Base }

// Check refuses a block-device suite and partition sizes the chip cannot hold.
func (t *nandsimTarget) Check(cfg plan.Config) error {
	if !cfg.FlashSuite() {
		return plan.Refusef("--target nandsim runs the free-electrons suite only (raw flash has no block device for suite %s): add --suite free-electrons", cfg.Suite)
	}
	for _, s := range cfg.PartitionSizes() {
		if err := nand.CheckPartition(nand.DefaultChip, s); err != nil {
			return &plan.InputError{Err: fmt.Errorf("--nand-sizes: %w", err)}
		}
	}
	return nil
}

// Expand makes one variant per configured variant and partition size, named after both
// ("jffs2-32M"), sizes first: the 2010 study's tables put one size per row.
func (t *nandsimTarget) Expand(cfg plan.Config) []targets.Expanded {
	var out []targets.Expanded
	for _, size := range cfg.PartitionSizes() {
		for _, v := range cfg.Variants {
			ev := v
			ev.Name = v.Name + "-" + bytesize.Label(size)
			out = append(out, targets.Expanded{Variant: ev, Base: v.Name, PartitionBytes: size})
		}
	}
	return out
}

// Skip says why a filesystem does not run on raw NAND here: block-device filesystems do not run
// on MTD at all, and squashfs needs UBI (its image sits on a UBI volume exposed by ubiblock).
func (t *nandsimTarget) Skip(k fs.Kind, facts targets.Facts) string {
	switch {
	case !k.Flash && k.Name != "squashfs":
		return fmt.Sprintf("%s is a block-device filesystem: the free-electrons suite runs raw-flash filesystems (jffs2, ubifs) and squashfs on UBI; run it with the bootlin suite", k.Name)
	case k.Name == "squashfs" && !facts.HasModule("ubi"):
		return "this kernel has no ubi module, which squashfs on UBI needs"
	}
	return ""
}

func (t *nandsimTarget) timings() nand.Timings {
	if t.Opt.Config.NANDNoDelays {
		return nand.Timings{}
	}
	return nand.DefaultTimings
}

// Methods replaces the block-device methods with the raw-flash ones.
func (t *nandsimTarget) Methods(cfg plan.Config) map[string]string {
	chip := nand.DefaultChip
	return map[string]string{
		"device":                "",
		"copy":                  "",
		"nandsim":               nandsimMethod(chip, t.timings()),
		"freshness":             "each repetition loads a fresh nandsim chip (all blocks erased), stores the dataset on it as an image (mkfs.jffs2 + nandwrite; ubiformat, ubiattach, ubimkvol, mkfs.ubifs or mksquashfs + ubiupdatevol), then unloads every driver it loaded, so that init_time loads them as a board's boot does; at the end the chip is removed, as the 2010 study reset its board between filesystems",
		"ubi_bad_block_reserve": "ubiattach --max-beb-per1024 scaled to the partition (extra.ubi_max_beb_per1024 of init_time): since Linux 3.7 UBI reserves 20 per 1024 erase blocks of the whole chip, which on a 256 MiB chip would take 40 of an 8 MiB partition's 64 blocks; scaled, each partition keeps the reserve a chip of its own size would have (2010 kernels reserved 1 % of the partition)",
		"flash_dataset":         fmt.Sprintf("per partition size: a generated rootfs-like tree and an incompressible video file of %d %% of the partition each (raw bytes), staged in RAM; dataset in results.json is the first size's", plan.FlashDataPercent),
		"cold":                  "init_time, mount_time, read_time, remove_time, write_time and video_write_time start after sync and echo 3 > /proc/sys/vm/drop_caches",
		"cpu":                   "user_s and sys_s: getrusage of fsbench and of the programs it waited for (modprobe, ubiattach); kernel threads (jffs2's garbage collector, ubi's background thread) are not included. MTD devices have no I/O counters, so no device bytes are recorded",
	}
}

// Prepare checks that this kernel has nandsim; the chip itself is loaded by each repetition.
func (t *nandsimTarget) Prepare(ctx context.Context, s *session.Session, cfg plan.Config) (*targets.Prepared, error) {
	sys, err := fs.HostSystem()
	if err != nil {
		return nil, err
	}
	if !sys.HasModule("nandsim") {
		return nil, fmt.Errorf("this kernel (%s) has no nandsim module, which simulates the NAND chip: use --target vm, which boots a guest kernel that has it", sys.KernelRelease)
	}
	chip := nand.DefaultChip
	return &targets.Prepared{Extra: NewChip(chip, t.timings()), Size: chip.Size,
		Result: results.Target{Kind: results.KindNandsim, Device: chip.Name, SizeBytes: chip.Size}}, nil
}

// Chip is what raw NAND yields instead of a block device (targets.Prepared.Extra): the chip
// each repetition loads afresh, which the engine asks for by an interface of its own
// (internal/runner/kinddata.go), so that package targets knows nothing of NAND.
type Chip struct {
	chip    nand.Chip
	timings nand.Timings
}

// NewChip is the yield of a chip with those timings (nand.Timings{}: no simulated delays).
func NewChip(chip nand.Chip, t nand.Timings) Chip { return Chip{chip: chip, timings: t} }

// FlashChip is the chip and the delays nandsim simulates.
func (c Chip) FlashChip() (nand.Chip, nand.Timings) { return c.chip, c.timings }

// nandsimMethod describes the simulated chip for results.json.
func nandsimMethod(chip nand.Chip, t nand.Timings) string {
	s := fmt.Sprintf("%s, OOB %d bytes per page; each partition starts at block 0 of the chip", chip.Name, chip.OOBSize)
	if !t.Enabled {
		return s + "; no simulated delays (nandsim do_delays=0): times are the kernel's and the CPU's work only"
	}
	return s + fmt.Sprintf("; nandsim do_delays=1 busy-waits %d µs per page read (tR), %d µs per page program (tPROG), %d ms per block erase (tBERS), %d ns per byte out and %d ns per byte in: a 2 KiB-page SLC chip's datasheet figures", t.AccessUs, t.ProgramUs, t.EraseMs, t.OutputNs, t.InputNs)
}
