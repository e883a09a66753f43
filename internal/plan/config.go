package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
)

// Variant is one filesystem configuration to benchmark (after matrix expansion).
type Variant struct {
	Name         string   `json:"name"`                    // unique; e.g. "ext4", "ext4-nojournal", "ext4/noatime"
	FS           string   `json:"fs"`                      // filesystem type: "ext4", "xfs", "squashfs", ...
	MkfsArgs     []string `json:"mkfs_args,omitempty"`     // extra arguments for mkfs (or mksquashfs/mkfs.erofs)
	MountOptions string   `json:"mount_options,omitempty"` // comma-separated, as for mount -o; "" = defaults
	Line         int      `json:"line,omitempty"`          // line of its [[variant]] table in the config file, 0 for defaults
	// PartitionStart puts the filesystem in a partition starting this many bytes into the
	// device (the rest of the device, less the largest start of the matrix): the Pandaboard
	// study's misaligned (63 sectors) against aligned (4 MiB) partition. 0: the whole device.
	PartitionStart uint64 `json:"partition_start_bytes,omitempty"`
	// Age, set on the aged twin of a variant (--age), is the aging spec its repetitions run
	// before their measured tests.
	Age string `json:"age,omitempty"`
}

// Config is a fully resolved run configuration.
type Config struct {
	Size        uint64 `json:"size_bytes"`  // image/device size to use; default 1 GiB
	Repetitions int    `json:"repetitions"` // default 3, >= 1
	Warmup      bool   `json:"warmup"`      // one extra discarded first repetition
	// Scheduler is the I/O scheduler to set on the device for the run ("none", "mq-deadline",
	// "bfq", ...); "" leaves the device's own.
	Scheduler   string   `json:"scheduler,omitempty"`
	Suite       Suites   `json:"suite"`                        // default "bootlin"; several: "bonnie,smallfiles"
	Tests       []string `json:"tests,omitempty"`              // empty = every test of the suite
	Dataset     string   `json:"dataset,omitempty"`            // "" = generated tree; else a directory
	DatasetSize uint64   `json:"dataset_size_bytes,omitempty"` // 0 = scaled to Size
	VideoSize   uint64   `json:"video_size_bytes,omitempty"`   // 0 = scaled to Size
	Seed        uint64   `json:"seed"`                         // default 1
	Timeout     Duration `json:"timeout"`                      // per test; default 10m
	ResultsDir  string   `json:"results_dir"`                  // default "./fsbench-results"
	// NANDSizes are the MTD partition sizes of the free-electrons suite, each run as its own
	// variant; default DefaultNANDSizes.
	NANDSizes []uint64  `json:"nand_sizes,omitempty"`
	Variants  []Variant `json:"variants"`

	// Params are the suites' sizes, each set in the suite's own table ([bonnie] files = 2048);
	// results.json records those of the suites that ran.
	Params SuiteParams `json:"params,omitzero"`
	// UntilStable, when > 0, repeats each variant beyond Repetitions until the confidence
	// interval of the median of every timed test is within ±UntilStable of the median (0.03 =
	// ±3 %), up to MaxRepetitions.
	UntilStable    float64 `json:"until_stable,omitempty"`
	MaxRepetitions int     `json:"max_repetitions,omitempty"`
	// KeepTraces writes each test's block-request trace to <results>/traces/.
	KeepTraces bool `json:"keep_traces,omitempty"`
	// Card is a card profile (name or file) to rate flash wear on, replayed besides the
	// built-ins.
	Card string `json:"card,omitempty"`
	// NANDNoDelays turns off nandsim's simulated chip timings: times are then the kernel's and
	// the CPU's work only.
	NANDNoDelays bool `json:"nand_no_delays,omitempty"`
	// Order is how repetitions are scheduled: OrderInterleaved (the default: repetition n of
	// every variant in a shuffled order, then n+1, so that slow drift of the machine spreads
	// over every variant) or OrderGrouped (every repetition of a variant, then the next one).
	Order string `json:"order,omitempty"`
	// Age (--age) runs every variant twice: fresh, and aged by this spec (aging.Parse) before
	// the measured tests of each repetition.
	Age string `json:"age,omitempty"`
	// CardState (--card-state) is the state of the card at each repetition's mkfs: CardFresh
	// (the default: the whole device discarded) or CardUsed (every block written, nothing
	// discarded, mkfs told not to discard).
	CardState string `json:"card_state,omitempty"`
}

// Card states (Config.CardState).
const (
	CardFresh = "fresh"
	CardUsed  = "used"
)

// CardStates are the values Config.CardState takes.
var CardStates = []string{CardFresh, CardUsed}

// Repetition orders (Config.Order).
const (
	OrderGrouped     = "grouped"
	OrderInterleaved = "interleaved"
)

// DefaultNANDSizes are the 2010 study's partition sizes: 8, 32, 128 and 252 MiB (252 because
// its boards kept 4 MB of the 256 MB chip for the bootloader and kernel).
var DefaultNANDSizes = []uint64{8 << 20, 32 << 20, 128 << 20, 252 << 20}

// FlashSuite is the suite that runs on raw NAND (nandsim) instead of a block device.
const FlashSuite = "free-electrons"

// FlashVariants are the filesystems of the 2010 study as they stand today: jffs2, ubifs,
// squashfs on a UBI volume (ubiblock: the read-only reference) and yaffs2, which is listed so
// that the study's third column is accounted for, and skipped with the reason.
func FlashVariants() []Variant {
	return []Variant{
		{Name: "jffs2", FS: "jffs2"},
		{Name: "ubifs", FS: "ubifs"},
		{Name: "squashfs-ubi", FS: "squashfs", MkfsArgs: []string{"-comp", "lzo"}},
		{Name: "yaffs2", FS: "yaffs2"},
	}
}

// ParseSizeList parses sizes such as "8M", "252M" (see bytesize.Parse), refusing duplicates.
func ParseSizeList(list []string) ([]uint64, error) {
	var out []uint64
	for _, s := range list {
		n, err := bytesize.Parse(s)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("size %s is given twice", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// Duration wraps time.Duration, JSON-encoded as a string like "10m0s" (and TOML "10m").
// It implements encoding.TextMarshaler and TextUnmarshaler, which both encoding/json and
// BurntSushi/toml use, so results files and configuration files spell it the same way.
type Duration struct{ time.Duration }

// MarshalText encodes d as time.Duration.String does ("10m0s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText parses a Go duration such as "10m", "90s" or "1h30m".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf(`bad duration %q: write a number with a unit, e.g. "90s", "10m", "1h30m"`, b)
	}
	d.Duration = v
	return nil
}

// Options says which names are valid (the caller passes the filesystem and test registries,
// so this package depends on neither). A nil list means "do not check".
type Options struct {
	KnownFS     []string
	KnownTests  []string
	KnownSuites []string
	// CheckMkfs and CheckMount, when set, judge a variant's mkfs words and mount options for
	// its filesystem (fs.CheckMkfsArgs, fs.CheckMountOptions): words that name another device
	// or a file are refused here, with the line, before anything runs.
	CheckMkfs  func(fs string, args []string) error
	CheckMount func(fs, options string) error
}

// Defaults, and the floor under which no variant of the default matrix could be made.
const (
	DefaultSize = 1 << 30 // bytes
	// DefaultRepetitions is 5: with the Mann-Whitney U test, 3 against 3 can never reach p <= 0.05
	// (the smallest p is 0.1), so a default run could never say a difference is real; 5 against 5
	// reaches p = 0.008 when every repetition of one beats every one of the other.
	DefaultRepetitions = 5
	DefaultSuite       = "bootlin"
	DefaultSeed        = 1
	DefaultTimeout     = 10 * time.Minute
	DefaultResultsDir  = "./fsbench-results"
	// MinSize is the smallest accepted Size. Below it even small filesystems leave no
	// room for a test tree; mkfs.xfs (xfsprogs >= 5.19) refuses less than 300 MiB and
	// mkfs.btrfs less than 114294784 bytes (109 MiB) unless it uses mixed block groups.
	MinSize = 64 << 20
)

// Default returns the configuration used when no file and no flag says otherwise, with
// DefaultVariants.
func Default() Config {
	return Config{
		Size:        DefaultSize,
		Repetitions: DefaultRepetitions,
		Suite:       Suites{DefaultSuite},
		Seed:        DefaultSeed,
		Timeout:     Duration{DefaultTimeout},
		ResultsDir:  DefaultResultsDir,
		Variants:    DefaultVariants(),
		Params:      DefaultSuiteParams(),
		Order:       OrderInterleaved,
	}
}

// DefaultVariants returns the filesystems benchmarked when the configuration names none:
// those of the Bootlin (EOSS 2023) and Pandora SD-card (2012) studies, each with the
// tuning those authors settled on: ext4 with and without journal (the Pandora study),
// btrfs with unduplicated metadata ("-m single", about 3.5 % less space and faster in
// Bootlin's runs), squashfs with lzo and erofs with lz4hc (Bootlin's picks for read-only).
// The product's documentation uses these names; do not rename them.
func DefaultVariants() []Variant {
	return []Variant{
		{Name: "ext4", FS: "ext4"},
		{Name: "ext4-nojournal", FS: "ext4", MkfsArgs: []string{"-O", "^has_journal"}},
		{Name: "ext2", FS: "ext2"},
		{Name: "ext3", FS: "ext3"},
		{Name: "xfs", FS: "xfs"},
		{Name: "btrfs", FS: "btrfs", MkfsArgs: []string{"-m", "single"}},
		{Name: "f2fs", FS: "f2fs"},
		{Name: "nilfs2", FS: "nilfs2"},
		{Name: "vfat", FS: "vfat"},
		{Name: "squashfs-lzo", FS: "squashfs", MkfsArgs: []string{"-comp", "lzo"}},
		{Name: "erofs-lz4hc", FS: "erofs", MkfsArgs: []string{"-zlz4hc"}},
	}
}

// Validate checks a configuration, for values set by flags after loading (Parse already
// validates what it returns). It returns an *Error, or several joined, saying what to do.
func (c Config) Validate(opt Options) error {
	p := &problems{}
	if len(c.Variants) == 0 {
		// Not in validate: in a file, a [[variant]] table that makes no variant has
		// already been reported, with its line.
		p.add(0, "no variants to benchmark; add a [[variant]] table with fs = \"...\"")
	}
	validate(c, opt, p, nil)
	return p.err()
}

// locator gives the configuration-file line of a top-level key (variant < 0) or of a key
// of Variants[variant]; 0 when unknown.
type locator func(key string, variant int) int

// line is the configuration-file line of key, or 0 when loc is nil or does not know it.
func (loc locator) line(key string, variant int) int {
	if loc == nil {
		return 0
	}
	return loc(key, variant)
}

// validate adds to p every problem of c. loc, when not nil, places them in the file. The
// order of the checks is the order of the messages for values that have no line (flags).
func validate(c Config, opt Options, p *problems, loc locator) {
	at := loc.line
	if c.Size < MinSize {
		p.add(at("size", -1), "size %s is too small: use at least %s (mkfs.xfs refuses less than 300 MiB "+
			"and mkfs.btrfs less than 114 MB; 1 GiB, the default, suits every filesystem)",
			bytesize.Format(c.Size), bytesize.Format(MinSize))
	}
	if c.Repetitions < 1 {
		p.add(at("repetitions", -1), "repetitions must be at least 1, not %d", c.Repetitions)
	}
	validateSelection(c, opt, p, at)
	validateFit(c, p, at)
	if c.Timeout.Duration <= 0 {
		p.add(at("timeout", -1), "timeout must be positive, not %s; e.g. \"10m\"", c.Timeout)
	}
	if c.Order != "" && c.Order != OrderGrouped && c.Order != OrderInterleaved {
		p.add(at("order", -1), "order %q: use %q or %q", c.Order, OrderGrouped, OrderInterleaved)
	}
	if strings.TrimSpace(c.ResultsDir) == "" {
		p.add(at("results", -1), "results directory is empty; e.g. %q", DefaultResultsDir)
	}
	validateVariants(c, opt, p, at)
}

// validateFit checks that the dataset and the video fit in the device.
func validateFit(c Config, p *problems, at locator) {
	if c.DatasetSize > c.Size {
		p.add(at("dataset_size", -1), "dataset_size %s is larger than size %s: the tree could not fit; "+
			"make it smaller or size larger", bytesize.Format(c.DatasetSize), bytesize.Format(c.Size))
	}
	if c.VideoSize > c.Size {
		p.add(at("video_size", -1), "video_size %s is larger than size %s: the video could not fit; "+
			"make it smaller or size larger", bytesize.Format(c.VideoSize), bytesize.Format(c.Size))
	}
}

// validateSelection checks the suites and tests chosen against the known ones.
func validateSelection(c Config, opt Options, p *problems, at locator) {
	if len(c.Suite) == 0 {
		p.add(at("suite", -1), "suite is empty%s", knownSuffix(opt.KnownSuites))
	} else if opt.KnownSuites != nil {
		// Several suites run one after the other on the same fresh filesystem: "a,b".
		for _, name := range c.Suite {
			if !slices.Contains(opt.KnownSuites, name) {
				p.add(at("suite", -1), "unknown suite %q%s (known: %s)",
					name, didYouMean(name, opt.KnownSuites), knownList(opt.KnownSuites))
			}
		}
	}
	seen := map[string]bool{}
	for _, t := range c.Tests {
		switch {
		case opt.KnownTests != nil && !slices.Contains(opt.KnownTests, t):
			p.add(at("tests", -1), "unknown test %q%s (known: %s)",
				t, didYouMean(t, opt.KnownTests), knownList(opt.KnownTests))
		case seen[t]:
			p.add(at("tests", -1), "test %q is listed twice; list each test once", t)
		}
		seen[t] = true
	}
}

// validateVariants checks each variant and that no two share a name.
func validateVariants(c Config, opt Options, p *problems, at locator) {
	first := map[string]int{} // name → index of the first variant with it
	for i, v := range c.Variants {
		// Without a line, say which variant; with one, do not: the variants expanded from
		// one table share their lines, and identical messages are then reported once.
		prefix := ""
		if at("fs", i) == 0 {
			prefix = fmt.Sprintf("variant %q: ", v.Name)
		}
		validateVariant(c, i, opt, p, at, prefix)
		if j, dup := first[v.Name]; dup {
			duplicateVariant(v, c.Variants[j].Line, p)
		} else {
			first[v.Name] = i
		}
	}
}

// validateVariant checks variant i's name, filesystem, mount options, mkfs arguments and
// partition; prefix names the variant where the message has no line to point at.
func validateVariant(c Config, i int, opt Options, p *problems, at locator, prefix string) {
	v := c.Variants[i]
	if strings.TrimSpace(v.Name) == "" {
		p.add(at("name", i), "%svariant name is empty; give a name or leave it out to use the fs", prefix)
	} else if strings.ContainsAny(v.Name, "\x00\n\r\t") {
		p.add(at("name", i), "%svariant name %q contains a control character", prefix, v.Name)
	}
	if v.FS == "" {
		p.add(at("fs", i), "%sfs is empty; give a filesystem type, e.g. fs = \"ext4\"%s", prefix, knownSuffix(opt.KnownFS))
	} else if opt.KnownFS != nil && !slices.Contains(opt.KnownFS, v.FS) {
		p.add(at("fs", i), "%sunknown filesystem %q%s (known: %s)",
			prefix, v.FS, didYouMean(v.FS, opt.KnownFS), knownList(opt.KnownFS))
	}
	if msg := checkMountOptions(v.MountOptions); msg != "" {
		p.add(at("mount", i), "%s%s", prefix, msg)
	} else if opt.CheckMount != nil && v.FS != "" {
		if err := opt.CheckMount(v.FS, v.MountOptions); err != nil {
			p.add(at("mount", i), "%s%v", prefix, err)
		}
	}
	if opt.CheckMkfs != nil && v.FS != "" && (opt.KnownFS == nil || slices.Contains(opt.KnownFS, v.FS)) {
		if err := opt.CheckMkfs(v.FS, v.MkfsArgs); err != nil {
			p.add(at("mkfs", i), "%s%v", prefix, err)
		}
	}
	if v.PartitionStart > 0 && (v.PartitionStart >= c.Size || c.Size-v.PartitionStart < MinSize) {
		p.add(at("partition_start", i), "%spartition_start %s leaves less than %s of the %s device for the partition: "+
			"start earlier or make size larger", prefix, bytesize.Format(v.PartitionStart), bytesize.Format(MinSize), bytesize.Format(c.Size))
	}
}

// duplicateVariant reports v's name as made twice, pointing at the other variant's line
// (other) where the file has one.
func duplicateVariant(v Variant, other int, p *problems) {
	switch {
	case v.Line > 0 && other == v.Line:
		p.add(v.Line, "duplicate variant name %q: this [[variant]] makes it twice; "+
			"remove the repeated value from its lists", v.Name)
	case v.Line > 0 && other > 0:
		p.add(v.Line, "duplicate variant name %q (the [[variant]] at line %d makes it too); "+
			"add name = \"...\" to one of them", v.Name, other)
	default:
		p.add(v.Line, "duplicate variant name %q; give each variant its own name", v.Name)
	}
}

// checkMountOptions returns what is wrong with a mount -o string, or "". Blanks are the
// usual mistake ("noatime, dirsync"): mount(8) would take " dirsync" as an unknown option.
func checkMountOptions(s string) string {
	if s == "" {
		return ""
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return fmt.Sprintf("mount options %q contain blanks; separate options with commas only, e.g. %q",
			s, strings.Join(strings.Fields(strings.ReplaceAll(s, ",", " ")), ","))
	}
	if slices.Contains(strings.Split(s, ","), "") {
		return fmt.Sprintf("mount options %q have an empty option (a doubled, leading or trailing comma)", s)
	}
	return ""
}

// knownSuffix is " (known: a, b)" or "" when there is no list.
func knownSuffix(known []string) string {
	if known == nil {
		return ""
	}
	return " (known: " + knownList(known) + ")"
}

// FlashSuite reports whether the run is the raw-flash suite (free-electrons), which runs on a
// simulated NAND chip instead of a block device.
func (c Config) FlashSuite() bool { return c.Suite.Only(FlashSuite) }

// CheckSuiteMix refuses the raw-flash suite combined with block-device suites: they need
// different devices.
func (c Config) CheckSuiteMix() error {
	if !c.FlashSuite() && c.Suite.Has(FlashSuite) {
		return Refusef("suite %s cannot be combined with block-device suites: run it on its own", FlashSuite)
	}
	return nil
}

// PartitionSizes are the raw-NAND partition sizes of the free-electrons suite: NANDSizes, or the
// 2010 study's.
func (c Config) PartitionSizes() []uint64 {
	if len(c.NANDSizes) > 0 {
		return c.NANDSizes
	}
	return DefaultNANDSizes
}

// FlashDataPercent is the share of each raw-NAND partition the free-electrons suite's data takes,
// in raw bytes: the dataset (compressible, written by write_time and stored for mount/read/remove)
// and the video file (incompressible, written by video_write_time into the emptied filesystem)
// are each 40 % of the partition. The 2010 study filled its partitions about half (ubifs and
// jffs2 used 52–55 % at 8 MB after compression); 40 % raw leaves ubifs's index and journal room on
// the smallest partition.
const FlashDataPercent = 40
