package runner

import (
	"fmt"
	"slices"

	"github.com/fsbench/fsbench/internal/aging"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suite"
)

// addAgedTwins gives every variant that runs an aged twin when the run ages (--age): the same
// filesystem and options, aged before the measured tests of each repetition. Fresh and aged
// run in the same run, interleaved like any variants, so that the machine's drift lands on both
// and the report can say whether aging changed the ranking.
func addAgedTwins(cfg plan.Config, p *Plan) error {
	if cfg.Age == "" {
		return nil
	}
	sp, err := aging.Parse(cfg.Age)
	if err != nil {
		return &plan.InputError{Err: err}
	}
	if cfg.Suite.Has(plan.FlashSuite) {
		return plan.Refusef("--age ages a filesystem on a block device; the %s suite runs on raw NAND, where fsbench does not age yet", plan.FlashSuite)
	}
	var jobs []suite.Job
	for _, j := range p.Jobs {
		t := j
		t.Variant.Name = j.Variant.Name + "@" + sp.Label()
		t.Variant.Age = cfg.Age
		jobs = append(jobs, t)
		i := slices.IndexFunc(p.Variants, func(v results.Variant) bool { return v.Name == j.Variant.Name })
		rv := p.Variants[i]
		rv.Name, rv.Age, rv.Fresh = t.Variant.Name, sp.String(), j.Variant.Name
		p.Variants = slices.Insert(p.Variants, i+1, rv)
	}
	p.Jobs = append(p.Jobs, jobs...)
	p.Methods["aging"] = fmt.Sprintf("--age %s: every variant runs twice, fresh and aged (name@%s); an aged repetition makes and mounts the filesystem as a fresh one does (its mkfs and mount figures are a fresh filesystem's), then ages it: %s, into the directory %s/, with seed %d (the same tree in every repetition and run, listing digest in aging[].listing_sha256), fullness and churn reckoned in 4 KiB blocks of the filesystem's statfs capacity; then the layout (FIEMAP extents per file, Conway's layout score for a scan in directory order), an offline check (fsck, check only) and a cold mount of the aged filesystem are measured, all recorded in aging[] apart from the tests; the measured tests follow in the space left (the dataset and video are scaled to the space the fullness leaves, for fresh and aged alike, so both do the same work); remove leaves the aged tree; the block-trace replay through the card models does not see the aging's writes",
		cfg.Age, sp.Label(), sp.Describe(), aging.Dir, cfg.Seed)
	return nil
}

// dataBasis is the device size the generated data is scaled to: with --age, the share of the
// device the aged tree leaves free, so that the measured tests fit beside it.
func dataBasis(cfg plan.Config, size uint64) uint64 {
	if cfg.Age == "" {
		return size
	}
	sp, err := aging.Parse(cfg.Age)
	if err != nil {
		return size
	}
	return uint64(float64(size) * (1 - sp.Fullness) * 0.8)
}
