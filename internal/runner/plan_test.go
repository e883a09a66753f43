package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/targets"
)

// fakeFacts is a machine whose kernel has the filesystems in fs (and the modules in modules),
// with every tool installed.
type fakeFacts struct {
	fs      map[string]string // name → fs.Kernel* state; absent = missing
	modules map[string]bool
}

func (f fakeFacts) Check(k fs.Kind) fs.Availability {
	if k.NotMainline != "" {
		return fs.Availability{Kernel: fs.KernelNotMainline, Reason: k.NotMainline}
	}
	st, ok := f.fs[k.Name]
	if !ok {
		return fs.Availability{Kernel: fs.KernelMissing, Reason: "this kernel has no " + k.Name}
	}
	return fs.Availability{Runs: true, Kernel: st}
}

func (f fakeFacts) HasModule(m string) bool { return f.modules[m] }

// workstation is this kind of machine: no f2fs, nilfs2 or vfat, no MTD.
var workstation = fakeFacts{fs: map[string]string{
	"ext4": fs.KernelBuiltIn, "ext2": fs.KernelBuiltIn, "ext3": fs.KernelBuiltIn, "xfs": fs.KernelBuiltIn,
	"btrfs": fs.KernelBuiltIn, "squashfs": fs.KernelBuiltIn, "erofs": fs.KernelBuiltIn}}

// guest is Debian's kernel in the QEMU guest: everything as modules, nandsim and ubi too.
var guest = fakeFacts{fs: map[string]string{
	"ext4": fs.KernelModuleAvailable, "f2fs": fs.KernelModuleAvailable, "jffs2": fs.KernelModuleAvailable,
	"ubifs": fs.KernelModuleAvailable, "squashfs": fs.KernelModuleAvailable},
	modules: map[string]bool{"nandsim": true, "ubi": true}}

func TestMakePlan(t *testing.T) {
	tests := []struct {
		name    string
		target  string
		facts   fakeFacts
		config  func(*plan.Config)
		jobs    string // names of the jobs, in order
		skipped map[string]string
		total   int
		first   int
		methods []string // keys that must be there; "-key": must not
		wantErr string
	}{
		{name: "default run on a workstation", facts: workstation,
			jobs:    "ext4 ext4-nojournal ext2 ext3 xfs btrfs squashfs-lzo erofs-lz4hc",
			skipped: map[string]string{"f2fs": "--target vm runs it in a guest", "nilfs2": "no nilfs2", "vfat": "no vfat"},
			total:   40, first: 1, methods: []string{"mount_mem", "freshness", "copy", "-until_stable"}},
		{name: "warm-up and a subset", facts: workstation, config: func(c *plan.Config) {
			c.Warmup, c.Repetitions, c.Variants = true, 2, c.Variants[:2]
		}, jobs: "ext4 ext4-nojournal", total: 6, first: 0},
		{name: "until-stable starts at 6", facts: workstation, config: func(c *plan.Config) {
			c.Variants, c.UntilStable, c.MaxRepetitions = c.Variants[:1], 0.03, 9
		}, jobs: "ext4", total: 6, first: 1, methods: []string{"until_stable"}},
		{name: "raw NAND: one job per partition size", target: "nandsim", facts: guest, config: func(c *plan.Config) {
			c.Suite, c.Variants, c.NANDSizes = plan.Suites{plan.FlashSuite}, plan.FlashVariants(), []uint64{8 << 20, 32 << 20}
		}, jobs: "jffs2-8M ubifs-8M squashfs-ubi-8M jffs2-32M ubifs-32M squashfs-ubi-32M",
			skipped: map[string]string{"yaffs2-8M": "not in mainline", "yaffs2-32M": "not in mainline"},
			total:   30, first: 1, methods: []string{"nandsim", "ubi_bad_block_reserve", "-copy", "-device"}},
		{name: "raw NAND skips block filesystems", target: "nandsim", facts: guest, config: func(c *plan.Config) {
			c.Suite, c.Variants, c.NANDSizes = plan.Suites{plan.FlashSuite}, c.Variants[:1], []uint64{8 << 20}
		}, skipped: map[string]string{"ext4-8M": "block-device filesystem"}},
		{name: "squashfs on UBI needs ubi", target: "nandsim", facts: fakeFacts{fs: guest.fs, modules: map[string]bool{"nandsim": true}},
			config: func(c *plan.Config) {
				c.Suite, c.Variants, c.NANDSizes = plan.Suites{plan.FlashSuite}, plan.FlashVariants()[2:3], []uint64{8 << 20}
			}, skipped: map[string]string{"squashfs-ubi-8M": "no ubi module"}},
		{name: "known size limits, said in one line", facts: workstation, config: func(c *plan.Config) {
			c.Size, c.Variants = 100<<20, []plan.Variant{c.Variants[0], c.Variants[4], c.Variants[5], {Name: "btrfs-mixed", FS: "btrfs", MkfsArgs: []string{"--mixed"}}}
		}, jobs: "ext4 btrfs-mixed", skipped: map[string]string{
			"xfs":   "xfs needs a device of at least 300 MiB: mkfs.xfs (xfsprogs 5.19 and later) refuses smaller devices; this device is 100 MiB (use --size 300M or more)",
			"btrfs": "btrfs needs a device of at least 109 MiB"}},
		{name: "a partition window is smaller than the device", facts: workstation, config: func(c *plan.Config) {
			c.Size, c.Variants = 320<<20, []plan.Variant{{Name: "xfs", FS: "xfs"}, {Name: "xfs/start=64MiB", FS: "xfs", PartitionStart: 64 << 20}}
		}, jobs: "xfs", skipped: map[string]string{
			"xfs/start=64MiB": "xfs needs a device of at least 300 MiB: mkfs.xfs (xfsprogs 5.19 and later) refuses smaller devices; this partition (the device less its largest partition start) is 256 MiB (use --size 364M or more)"}},
		{name: "a test the suite lacks", facts: workstation, config: func(c *plan.Config) { c.Tests = []string{"init_time"} },
			wantErr: `suite bootlin has no test "init_time"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := plan.Default()
			if tc.config != nil {
				tc.config(&cfg)
			}
			spec, err := plan.ParseTarget(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			tg, err := targets.New(spec, targets.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := MakePlan(cfg, tg, tc.facts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				var ie *plan.InputError
				if !errors.As(err, &ie) {
					t.Errorf("%v is not an input error (exit 2)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var jobs []string
			for _, j := range p.Jobs {
				jobs = append(jobs, j.Variant.Name)
			}
			if got := strings.Join(jobs, " "); got != tc.jobs {
				t.Errorf("jobs %q, want %q", got, tc.jobs)
			}
			if len(p.Variants) != len(targets.Expand(tg, cfg)) {
				t.Errorf("%d variants recorded, %d expanded", len(p.Variants), len(targets.Expand(tg, cfg)))
			}
			for _, v := range p.Variants {
				want, skip := tc.skipped[v.Name]
				switch {
				case skip && (v.Status != results.Skipped || !strings.Contains(v.Reason, want)):
					t.Errorf("%s: %s %q, want skipped because %q", v.Name, v.Status, v.Reason, want)
				case !skip && v.Status != results.OK:
					t.Errorf("%s: skipped (%s)", v.Name, v.Reason)
				}
			}
			if tc.total > 0 && p.Total() != tc.total {
				t.Errorf("total %d, want %d", p.Total(), tc.total)
			}
			if p.First != tc.first && tc.total > 0 {
				t.Errorf("first repetition %d, want %d", p.First, tc.first)
			}
			for _, m := range tc.methods {
				if name, absent := strings.CutPrefix(m, "-"); absent {
					if _, ok := p.Methods[name]; ok {
						t.Errorf("method %s is there", name)
					}
				} else if p.Methods[m] == "" {
					t.Errorf("method %s is missing", m)
				}
			}
		})
	}
}
