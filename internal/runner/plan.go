package runner

import (
	"fmt"
	"slices"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/targets"
)

// Plan is what a run will do, decided from the configuration, the target and what the machine
// has, before anything is made: the variants it runs and the ones it skips (with the reason),
// how many repetitions, and how the figures are measured. MakePlan is a pure function of its
// inputs, so the decisions are tested without root.
type Plan struct {
	// Variants are all the variants, in results.json's form: those that run with status OK,
	// the others skipped with the reason.
	Variants []results.Variant
	// Jobs are the variants that run, as the suite makes them.
	Jobs []suite.Job
	// Kinds are the filesystems the jobs use, whose tools' versions are recorded.
	Kinds []fs.Kind
	// First is the first repetition (0 with a warm-up), Reps the last of the planned ones and
	// MaxReps the last one --until-stable may add.
	First, Reps, MaxReps int
	// Order is how repetitions are scheduled (plan.OrderGrouped or plan.OrderInterleaved).
	Order string
	// Methods describes how the figures are measured (results.json's methods).
	Methods map[string]string
	// Selection is the tests the run records and performs.
	Selection suite.Selection
}

// Total is the number of repetitions planned (until-stable may add more).
func (p *Plan) Total() int { return len(p.Jobs) * (p.Reps - p.First + 1) }

// MakePlan decides what a run of cfg on t does on a machine with facts.
func MakePlan(cfg plan.Config, t targets.Target, facts targets.Facts) (*Plan, error) {
	sel, err := suite.Select(cfg.Suite, cfg.Tests)
	if err != nil {
		return nil, &plan.InputError{Err: err}
	}
	p := &Plan{Selection: sel, First: 1, Reps: cfg.Repetitions, Order: cfg.Order, Methods: baseMethods()}
	if p.Order == "" {
		p.Order = plan.OrderInterleaved
	}
	switch p.Order {
	case plan.OrderInterleaved:
		p.Methods["order"] = fmt.Sprintf("interleaved: repetition n of every variant, in an order shuffled with seed %d, then repetition n+1, so that slow drift of the machine spreads over every variant instead of landing on the last ones; the sequence is in order[]", cfg.Seed)
	default:
		p.Methods["order"] = "grouped: every repetition of a variant, then the next variant; the sequence is in order[]"
	}
	if cfg.Warmup {
		p.First = 0
	}
	p.MaxReps = p.Reps
	if cfg.UntilStable > 0 {
		// A distribution-free 95 % interval of a median needs at least stats.NeedForCI samples.
		p.Reps = max(p.Reps, stats.NeedForCI(stats.DefaultConfidence))
		p.MaxReps = max(cfg.MaxRepetitions, p.Reps)
		p.Methods["until_stable"] = fmt.Sprintf("each variant repeated until the 95 %% confidence interval of the median of every timed test (times and rates; module_load and byte figures excepted) is within ±%.3g %% of the median, from %d up to %d repetitions; see variants[].repetitions and .unstable", 100*cfg.UntilStable, p.Reps, p.MaxReps)
	}
	for k, v := range targets.Methods(t, cfg) {
		if v == "" {
			delete(p.Methods, k)
		} else {
			p.Methods[k] = v
		}
	}
	skipper, _ := t.(targets.Skipper)
	// Variants in a partition window get the device less the largest start (engine.partitionSize).
	var maxStart uint64
	for _, v := range cfg.Variants {
		maxStart = max(maxStart, v.PartitionStart)
	}
	for _, e := range targets.Expand(t, cfg) {
		v := e.Variant
		k, ok := fs.Lookup(v.FS)
		if !ok {
			return nil, &plan.InputError{Err: fmt.Errorf("variant %s: unknown filesystem %q", v.Name, v.FS)}
		}
		rv := results.Variant{Name: v.Name, FS: v.FS, MkfsArgs: v.MkfsArgs, MountOptions: v.MountOptions, ReadOnly: k.ReadOnly,
			Base: e.Base, PartitionBytes: e.PartitionBytes, PartitionStart: v.PartitionStart}
		av := facts.Check(k)
		rv.Kernel = av.Kernel
		reason := ""
		if skipper != nil {
			reason = skipper.Skip(k, facts)
		}
		switch {
		case reason != "":
		case !av.Runs:
			reason = av.Reason
			if av.Kernel == fs.KernelMissing {
				reason += "; fsbench run --target vm runs it in a guest kernel"
			}
		}
		// A real device's size is known once it is checked; the trial mkfs then skips what
		// does not fit (preflight).
		sizeKnown := !t.Caps().Has(targets.UserDevice) && e.PartitionBytes == 0
		size, what := cfg.Size, "device"
		if v.PartitionStart > 0 && maxStart < size {
			size, what = (size-maxStart)>>20<<20, "partition (the device less its largest partition start)"
		}
		if reason == "" && sizeKnown && k.MinBytes > 0 && size < k.MinBytes && !mixedBtrfs(v) {
			reason = fmt.Sprintf("%s needs a device of at least %s: %s; this %s is %s (use --size %s or more)",
				k.Name, bytesize.Format(k.MinBytes), k.MinWhy, what, bytesize.Format(size), bytesize.Label((k.MinBytes+cfg.Size-size+(1<<20)-1)>>20<<20))
		}
		if reason != "" {
			rv.Status, rv.Reason = results.Skipped, reason
		} else {
			rv.Status = results.OK
			p.Jobs = append(p.Jobs, suite.Job{Variant: v, Kind: k, PartitionBytes: e.PartitionBytes})
			if !slices.ContainsFunc(p.Kinds, func(x fs.Kind) bool { return x.Name == k.Name }) {
				p.Kinds = append(p.Kinds, k)
			}
		}
		p.Variants = append(p.Variants, rv)
	}
	if err := addAgedTwins(cfg, p); err != nil {
		return nil, err
	}
	if err := applyCardState(cfg, p); err != nil {
		return nil, err
	}
	return p, nil
}

// baseMethods are the methods of a run on a block device; targets replace or remove some.
func baseMethods() map[string]string {
	return map[string]string{
		catalog.MountMem: measure.KernelMemoryMethod,
		"cpu":            "user_s and sys_s: getrusage of fsbench and of the programs it waited for (mkfs, modprobe) over the measured span; kernel threads (writeback, compression workers, the loop worker) are not included",
		"device":         "device: change of /sys/block/<dev>/stat over the measured span (sectors are 512 bytes)",
		"cold":           "before mount, read and video_read: sync and echo 3 > /proc/sys/vm/drop_caches; read and video_read also unmount and mount first",
		"freshness":      "each repetition discards the whole device (BLKDISCARD) and makes a new filesystem",
		"copy":           "write, read_remove_write and video_write move every byte through read(2) and write(2) with a 128 KiB buffer (1 MiB for video): no copy_file_range, which on xfs and btrfs makes a reflink instead of writing",
	}
}

// mixedBtrfs reports whether a btrfs variant asks for mixed block groups, which lift mkfs.btrfs's
// minimum size.
func mixedBtrfs(v plan.Variant) bool {
	return v.FS == "btrfs" && (slices.Contains(v.MkfsArgs, "-M") || slices.Contains(v.MkfsArgs, "--mixed"))
}
