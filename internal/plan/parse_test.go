package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testOpts are registries like the ones the fs and suite packages provide.
var testOpts = Options{
	KnownFS:     []string{"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "nilfs2", "vfat", "squashfs", "erofs"},
	KnownTests:  []string{"mkfs", "mount", "used-space", "read", "write", "read-remove-write", "remove", "video-write", "video-read"},
	KnownSuites: []string{"bootlin", "bonnie", "free-electrons"},
}

func TestDefault(t *testing.T) {
	c := Default()
	want := Config{
		Size:        1 << 30,
		Repetitions: 5,
		Suite:       Suites{"bootlin"},
		Seed:        1,
		Timeout:     Duration{10 * time.Minute},
		ResultsDir:  "./fsbench-results",
		Params:      DefaultSuiteParams(),
		Order:       OrderInterleaved,
		Variants: []Variant{
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
		},
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Default() (-want +got):\n%s", diff)
	}
	if err := c.Validate(testOpts); err != nil {
		t.Errorf("Default().Validate: %v", err)
	}
	// Each call returns fresh slices: a caller editing its copy must not change the defaults.
	c.Variants[5].MkfsArgs[1] = "dup"
	if got := DefaultVariants()[5].MkfsArgs[1]; got != "single" {
		t.Errorf("DefaultVariants shares its slices with earlier results: got %q", got)
	}

	// An empty file, or one with only comments, is the defaults.
	for _, in := range []string{"", "# nothing\n\n"} {
		got, err := Parse("empty.toml", []byte(in), testOpts)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if diff := cmp.Diff(Default(), got); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", in, diff)
		}
	}
}

// names returns the names of vs, for compact expectations.
func names(vs []Variant) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

func TestParseVariants(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Variant
	}{
		{
			name: "fs and mount matrix",
			in: `[[variant]]
fs = ["ext4", "xfs", "btrfs"]
mount = ["relatime", "noatime", "noatime,dirsync"]
`,
			want: []Variant{
				{Name: "ext4/relatime", FS: "ext4", MountOptions: "relatime", Line: 1},
				{Name: "ext4/noatime", FS: "ext4", MountOptions: "noatime", Line: 1},
				{Name: "ext4/noatime,dirsync", FS: "ext4", MountOptions: "noatime,dirsync", Line: 1},
				{Name: "xfs/relatime", FS: "xfs", MountOptions: "relatime", Line: 1},
				{Name: "xfs/noatime", FS: "xfs", MountOptions: "noatime", Line: 1},
				{Name: "xfs/noatime,dirsync", FS: "xfs", MountOptions: "noatime,dirsync", Line: 1},
				{Name: "btrfs/relatime", FS: "btrfs", MountOptions: "relatime", Line: 1},
				{Name: "btrfs/noatime", FS: "btrfs", MountOptions: "noatime", Line: 1},
				{Name: "btrfs/noatime,dirsync", FS: "btrfs", MountOptions: "noatime,dirsync", Line: 1},
			},
		},
		{
			name: "single values keep the plain name",
			in: `
[[variant]]
fs = "btrfs"
mkfs = "-m single"
mount = "compress=zstd"
`,
			want: []Variant{
				{Name: "btrfs", FS: "btrfs", MkfsArgs: []string{"-m", "single"}, MountOptions: "compress=zstd", Line: 2},
			},
		},
		{
			name: "fs x mkfs x mount order and defaults",
			in: `[[variant]]
fs = "btrfs"
mkfs = ["", "-m single"]
mount = ["", "noatime"]
`,
			want: []Variant{
				{Name: "btrfs/defaults/defaults", FS: "btrfs", Line: 1},
				{Name: "btrfs/defaults/noatime", FS: "btrfs", MountOptions: "noatime", Line: 1},
				{Name: "btrfs/-m single/defaults", FS: "btrfs", MkfsArgs: []string{"-m", "single"}, Line: 1},
				{Name: "btrfs/-m single/noatime", FS: "btrfs", MkfsArgs: []string{"-m", "single"}, MountOptions: "noatime", Line: 1},
			},
		},
		{
			name: "name with several fs appends the fs",
			in: `[[variant]]
name = "journal-less"
fs = ["ext2", "ext4"]
mkfs = '-O ^has_journal -L "no journal"'
`,
			want: []Variant{
				{Name: "journal-less/ext2", FS: "ext2", MkfsArgs: []string{"-O", "^has_journal", "-L", "no journal"}, Line: 1},
				{Name: "journal-less/ext4", FS: "ext4", MkfsArgs: []string{"-O", "^has_journal", "-L", "no journal"}, Line: 1},
			},
		},
		{
			name: "several tables keep file order and lines",
			in: `size = "2G"

[[variant]]
fs = "ext4"

[[variant]]
name = "ext4-nojournal"
fs = "ext4"
mkfs = "-O ^has_journal"

[[variant]]
name = "sq"
fs = "squashfs"
mkfs = ["-comp lzo", "-comp xz"]
`,
			want: []Variant{
				{Name: "ext4", FS: "ext4", Line: 3},
				{Name: "ext4-nojournal", FS: "ext4", MkfsArgs: []string{"-O", "^has_journal"}, Line: 6},
				{Name: "sq/-comp lzo", FS: "squashfs", MkfsArgs: []string{"-comp", "lzo"}, Line: 11},
				{Name: "sq/-comp xz", FS: "squashfs", MkfsArgs: []string{"-comp", "xz"}, Line: 11},
			},
		},
		{
			name: "inline array of tables",
			in:   `variant = [{fs = "xfs"}, {fs = "erofs", mkfs = "-zlz4hc"}]` + "\n",
			want: []Variant{
				{Name: "xfs", FS: "xfs", Line: 1},
				{Name: "erofs", FS: "erofs", MkfsArgs: []string{"-zlz4hc"}, Line: 1},
			},
		},
		{
			name: "partition starts: sectors, sizes and bytes, named as written",
			in: `[[variant]]
fs = ["ext3", "ext4"]
partition_start = ["63s", "4MiB", 1048576]
`,
			want: []Variant{
				{Name: "ext3/start=63s", FS: "ext3", Line: 1, PartitionStart: 63 * 512},
				{Name: "ext3/start=4MiB", FS: "ext3", Line: 1, PartitionStart: 4 << 20},
				{Name: "ext3/start=1048576", FS: "ext3", Line: 1, PartitionStart: 1 << 20},
				{Name: "ext4/start=63s", FS: "ext4", Line: 1, PartitionStart: 63 * 512},
				{Name: "ext4/start=4MiB", FS: "ext4", Line: 1, PartitionStart: 4 << 20},
				{Name: "ext4/start=1048576", FS: "ext4", Line: 1, PartitionStart: 1 << 20},
			},
		},
		{
			name: "a single partition start is named too",
			in:   "[[variant]]\nname = \"card\"\nfs = \"ext4\"\npartition_start = \"2048s\"\n",
			want: []Variant{{Name: "card/start=2048s", FS: "ext4", Line: 1, PartitionStart: 1 << 20}},
		},
		{
			name: "no variant tables: the defaults",
			in:   "repetitions = 5\n",
			want: DefaultVariants(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("matrix.toml", []byte(tt.in), testOpts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, c.Variants); diff != "" {
				t.Errorf("variants (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTopLevel(t *testing.T) {
	in := `size = 536870912
repetitions = 7
warmup = true
suite = "bonnie"
tests = "write"
timeout = "1h30m"
dataset = "rootfs"
dataset_size = "1.5M"
video_size = 1048576
seed = 42
results = "/tmp/r"
`
	c, err := Parse("matrix.toml", []byte(in), testOpts)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Config{
		Size:        512 << 20,
		Repetitions: 7,
		Warmup:      true,
		Suite:       Suites{"bonnie"},
		Tests:       []string{"write"},
		Dataset:     "rootfs",
		DatasetSize: 3 << 19,
		VideoSize:   1 << 20,
		Seed:        42,
		Timeout:     Duration{90 * time.Minute},
		ResultsDir:  "/tmp/r",
		Variants:    DefaultVariants(),
		Params:      DefaultSuiteParams(),
		Order:       OrderInterleaved,
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

// TestExampleFile parses the example of the package documentation and compares it with the
// expected variants and with a golden JSON rendering (go test -update rewrites it).
func TestExampleFile(t *testing.T) {
	path := filepath.Join("testdata", "example.toml")
	c, err := Load(path, testOpts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var want []Variant
	for _, fs := range []string{"ext4", "xfs", "btrfs"} {
		for _, m := range []string{"relatime", "noatime", "noatime,dirsync"} {
			want = append(want, Variant{Name: fs + "/" + m, FS: fs, MkfsArgs: []string{"-m", "single"}, MountOptions: m, Line: 14})
		}
	}
	want = append(want, Variant{
		Name: "ext4-tuned", FS: "ext4", MountOptions: "noatime", Line: 19,
		MkfsArgs: []string{"-O", "^has_journal", "-b", "4096", "-E", "stride=4,stripe-width=1024"},
	})
	if diff := cmp.Diff(want, c.Variants); diff != "" {
		t.Errorf("variants (-want +got):\n%s", diff)
	}
	if c.Size != 512<<20 || c.DatasetSize != 40<<20 || c.VideoSize != 60<<20 || c.Timeout.Duration != 10*time.Minute {
		t.Errorf("sizes/timeout = %d, %d, %d, %v", c.Size, c.DatasetSize, c.VideoSize, c.Timeout)
	}

	got, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "example.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wantJSON, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, wantJSON) {
		gotPath := golden + ".got"
		_ = os.WriteFile(gotPath, got, 0o644)
		t.Errorf("JSON differs from %s; see %s (-want +got):\n%s", golden, gotPath, cmp.Diff(string(wantJSON), string(got)))
	}

	// The JSON reads back into the same Config (Duration round-trips as a string).
	var back Config
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	if diff := cmp.Diff(c, back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.toml")
	_, err := Load(path, testOpts)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load(missing) error = %v, want one wrapping os.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
}

// errorList flattens an error from Parse or Validate into its *Error values.
func errorList(t *testing.T, err error) []*Error {
	t.Helper()
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*Error
	for _, e := range errs {
		pe, ok := e.(*Error)
		if !ok {
			t.Fatalf("error %T %q is not a *plan.Error", e, e)
		}
		out = append(out, pe)
	}
	return out
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// want are the expected messages, one per problem, in order; each must be a prefix
		// of the corresponding line of the error (the rest being the hint's tail).
		want []string
	}{
		{
			name: "unknown variant key",
			in: `size = "1G"

[[variant]]
fs = "ext4"

[[variant]]
mout = "noatime"
fs = "xfs"
`,
			want: []string{`matrix.toml:7: unknown key "mout" in [[variant]]; did you mean "mount"? (known keys: fs, mkfs, mount, name, partition_start)`},
		},
		{
			name: "unknown variant key by alias",
			in:   "[[variant]]\nfs = \"ext4\"\nmount_options = \"noatime\"\n",
			want: []string{`matrix.toml:3: unknown key "mount_options" in [[variant]]; did you mean "mount"?`},
		},
		{
			name: "unknown variant key without suggestion",
			in:   "[[variant]]\nfs = \"ext4\"\ncolour = \"blue\"\n",
			want: []string{`matrix.toml:3: unknown key "colour" in [[variant]] (known keys: fs, mkfs, mount, name, partition_start)`},
		},
		{
			name: "unknown top-level key",
			in:   "repetitions = 3\nsise = \"1G\"\n",
			want: []string{`matrix.toml:2: unknown key "sise" at the top level; did you mean "size"? (known keys: dataset, dataset_size,`},
		},
		{
			name: "top-level key in the wrong case",
			in:   "Size = \"1G\"\n",
			want: []string{`matrix.toml:1: unknown key "Size" at the top level; did you mean "size"?`},
		},
		{
			name: "results_dir as in the JSON",
			in:   "\n\nresults_dir = \"/tmp/x\"\n",
			want: []string{`matrix.toml:3: unknown key "results_dir" at the top level; did you mean "results"?`},
		},
		{
			name: "plural variants",
			in:   "[[variants]]\nfs = \"ext4\"\n",
			want: []string{`matrix.toml:1: unknown key "variants" at the top level; did you mean [[variant]] tables?`},
		},
		{
			name: "unknown table",
			in:   "seed = 2\n[mkfs]\next4 = \"-O ^has_journal\"\n",
			want: []string{`matrix.toml:2: unknown key "mkfs" at the top level (known keys:`},
		},
		{
			name: "subtable of a variant",
			in:   "[[variant]]\nfs = \"ext4\"\n[variant.extra]\nx = 1\n",
			want: []string{`matrix.toml:3: unknown key "extra" in [[variant]] (known keys: fs, mkfs, mount, name, partition_start)`},
		},
		{
			name: "syntax error",
			in:   "seed = 1\nsize = \n",
			want: []string{`matrix.toml:2: `},
		},
		{
			name: "unknown filesystem",
			in: `size = "1G"
repetitions = 3

[[variant]]
fs = "ext4"

[[variant]]
mount = "noatime"
fs = "ext5"
`,
			want: []string{`matrix.toml:9: unknown filesystem "ext5" (known: btrfs, erofs, ext2, ext3, ext4, f2fs, nilfs2, squashfs, vfat, xfs)`},
		},
		{
			name: "misspelt filesystem",
			in:   "[[variant]]\nfs = \"btfrs\"\n",
			want: []string{`matrix.toml:2: unknown filesystem "btfrs"; did you mean "btrfs"? (known: btrfs,`},
		},
		{
			name: "unknown filesystem in a matrix reported once",
			in:   "[[variant]]\nfs = [\"ext4\", \"zfs\"]\nmount = [\"relatime\", \"noatime\"]\n",
			want: []string{`matrix.toml:2: unknown filesystem "zfs" (known:`},
		},
		{
			name: "repetitions zero",
			in:   "\nrepetitions = 0\n",
			want: []string{`matrix.toml:2: repetitions must be between 1 and 1000000, not 0`},
		},
		{
			name: "repetitions negative",
			in:   "repetitions = -2\n",
			want: []string{`matrix.toml:1: repetitions must be between 1 and 1000000, not -2`},
		},
		{
			name: "repetitions as string",
			in:   "repetitions = \"3\"\n",
			want: []string{`matrix.toml:1: repetitions must be an integer, not the string "3"`},
		},
		{
			name: "bad size string",
			in:   "seed = 1\nsize = \"12X\"\n",
			want: []string{`matrix.toml:2: size: bad size "12X": unknown unit "X"; write a number of bytes with an optional unit`},
		},
		{
			name: "empty size string",
			in:   "size = \"\"\n",
			want: []string{`matrix.toml:1: size: empty size; write`},
		},
		{
			name: "size too small",
			in:   "size = \"32M\"\n",
			want: []string{`matrix.toml:1: size 32 MiB is too small: use at least 64 MiB (mkfs.xfs refuses less than 300 MiB and mkfs.btrfs less than 114 MB`},
		},
		{
			name: "negative size",
			in:   "size = -5\n",
			want: []string{`matrix.toml:1: size must not be negative, not -5`},
		},
		{
			name: "float size",
			in:   "size = 1.5e9\n",
			want: []string{`matrix.toml:1: size must be a string such as "512M" or "1.5GiB", or an integer number of bytes, not a float`},
		},
		{
			name: "dataset larger than the device",
			in:   "size = \"1G\"\ndataset_size = \"2G\"\n",
			want: []string{`matrix.toml:2: dataset_size 2 GiB is larger than size 1 GiB`},
		},
		{
			name: "bad video size",
			in:   "video_size = \"60 M B\"\n",
			want: []string{`matrix.toml:1: video_size: bad size "60 M B": unknown unit "M B"`},
		},
		{
			name: "unknown test",
			in:   "tests = [\"mkfs\", \"wirte\"]\n",
			want: []string{`matrix.toml:1: unknown test "wirte"; did you mean "write"? (known: mkfs, mount, read,`},
		},
		{
			name: "test twice",
			in:   "tests = [\"mkfs\", \"mkfs\"]\n",
			want: []string{`matrix.toml:1: test "mkfs" is listed twice`},
		},
		{
			name: "unknown suite",
			in:   "suite = \"bootln\"\n",
			want: []string{`matrix.toml:1: unknown suite "bootln"; did you mean "bootlin"? (known: bonnie, bootlin, free-electrons)`},
		},
		{
			name: "timeout without unit",
			in:   "timeout = \"10\"\n",
			want: []string{`matrix.toml:1: bad timeout "10": write a number with a unit, e.g. "90s", "10m", "1h30m"`},
		},
		{
			name: "timeout as integer",
			in:   "timeout = 600\n",
			want: []string{`matrix.toml:1: timeout needs a unit: write it as a string, e.g. timeout = "600s" or "10m"`},
		},
		{
			name: "negative timeout",
			in:   "timeout = \"-1m\"\n",
			want: []string{`matrix.toml:1: timeout must be positive, not -1m0s`},
		},
		{
			name: "empty tests",
			in:   "tests = []\n",
			want: []string{`matrix.toml:1: tests is an empty list; remove the key to run every test of the suite`},
		},
		{
			name: "empty fs",
			in:   "[[variant]]\nfs = []\n",
			want: []string{`matrix.toml:2: fs is an empty list; give at least one filesystem, e.g. fs = "ext4"`},
		},
		{
			name: "empty mount",
			in:   "[[variant]]\nfs = \"ext4\"\nmount = []\n",
			want: []string{`matrix.toml:3: mount is an empty list; use mount = "" for the default options`},
		},
		{
			name: "empty mkfs",
			in:   "[[variant]]\nfs = \"ext4\"\nmkfs = []\n",
			want: []string{`matrix.toml:3: mkfs is an empty list; use mkfs = "" for no extra arguments`},
		},
		{
			name: "no fs",
			in:   "\n[[variant]]\nmount = \"noatime\"\n",
			want: []string{`matrix.toml:2: [[variant]] has no fs; add fs = "ext4"`},
		},
		{
			name: "fs of wrong type",
			in:   "[[variant]]\nfs = [\"ext4\", 4]\n",
			want: []string{`matrix.toml:2: fs must be a string or a list of strings, but element 2 is the integer 4`},
		},
		{
			name: "name of wrong type",
			in:   "[[variant]]\nname = 5\nfs = \"ext4\"\n",
			want: []string{`matrix.toml:2: name must be a string, not the integer 5`},
		},
		{
			name: "empty name",
			in:   "[[variant]]\nname = \"\"\nfs = \"ext4\"\n",
			want: []string{`matrix.toml:2: name is empty; remove the key to name the variant after its fs`},
		},
		{
			name: "byte order mark",
			in:   "\ufeffsise = 1\n",
			want: []string{`matrix.toml:1: unknown key "sise"`},
		},
		{
			name: "unterminated quote in mkfs",
			in:   "[[variant]]\nfs = \"ext4\"\nmkfs = '-E \"stride=4'\n",
			want: []string{`matrix.toml:3: mkfs "-E \"stride=4": unterminated double quote ("): close it`},
		},
		{
			name: "bad partition starts",
			in: `size = "256M"
[[variant]]
fs = "ext4"
partition_start = ["0s", "100", "63x", "63s", 32256, -1, 1.5]
`,
			want: []string{
				`matrix.toml:4: partition_start "0s" is the whole device, larger than the other partitions: start the aligned partition at "1MiB" or "4MiB" instead`,
				`matrix.toml:4: partition_start "100" is not a whole number of 512-byte sectors`,
				`matrix.toml:4: partition_start "63x": `,
				`matrix.toml:4: partition_start "32256" is given twice; list each start once`,
				`matrix.toml:4: partition_start must not be negative, not -1`,
				`matrix.toml:4: partition_start must be a string such as "63s" or "4MiB", an integer number of bytes, or a list of them, not the float 1.5`,
			},
		},
		{
			name: "partition start too far into the device",
			in:   "size = \"256M\"\n[[variant]]\nfs = \"ext4\"\npartition_start = [\"4M\", \"200M\"]\n",
			want: []string{`matrix.toml:4: partition_start 200 MiB leaves less than 64 MiB of the 256 MiB device for the partition: start earlier or make size larger`},
		},
		{
			name: "empty partition start list",
			in:   "[[variant]]\nfs = \"ext4\"\npartition_start = []\n",
			want: []string{`matrix.toml:3: partition_start is an empty list; give starts such as ["63s", "4MiB"], or remove the key for the whole device`},
		},
		{
			name: "blanks in mount options",
			in:   "[[variant]]\nfs = \"ext4\"\nmount = \"noatime, dirsync\"\n",
			want: []string{`matrix.toml:3: mount options "noatime, dirsync" contain blanks; separate options with commas only, e.g. "noatime,dirsync"`},
		},
		{
			name: "empty mount option",
			in:   "[[variant]]\nfs = \"ext4\"\nmount = \"noatime,\"\n",
			want: []string{`matrix.toml:3: mount options "noatime," have an empty option`},
		},
		{
			name: "duplicate names across tables",
			in: `[[variant]]
fs = "ext4"

[[variant]]
fs = "ext4"
mount = "noatime"
`,
			want: []string{`matrix.toml:4: duplicate variant name "ext4" (the [[variant]] at line 1 makes it too); add name = "..." to one of them`},
		},
		{
			name: "duplicate names within a table",
			in:   "[[variant]]\nfs = [\"ext4\", \"ext4\"]\n",
			want: []string{`matrix.toml:1: duplicate variant name "ext4": this [[variant]] makes it twice`},
		},
		{
			name: "single [variant] table",
			in:   "[variant]\nfs = \"ext4\"\n",
			want: []string{`matrix.toml:1: [variant] is a single table; write [[variant]] (two brackets) once per variant`},
		},
		{
			name: "variant as a list of strings",
			in:   "variant = [\"ext4\"]\n",
			want: []string{`matrix.toml:1: variant must be tables, not a list of the string "ext4"`},
		},
		{
			name: "empty variant list",
			in:   "variant = []\n",
			want: []string{`matrix.toml:1: variant is an empty list; add [[variant]] tables`},
		},
		{
			name: "seed negative",
			in:   "seed = -1\n",
			want: []string{`matrix.toml:1: seed must not be negative, not -1`},
		},
		{
			name: "warmup as string",
			in:   "warmup = \"yes\"\n",
			want: []string{`matrix.toml:1: warmup must be true or false, not the string "yes"`},
		},
		{
			name: "results empty",
			in:   "results = \"\"\n",
			want: []string{`matrix.toml:1: results directory is empty`},
		},
		{
			name: "several problems, sorted by line",
			in: `[[variant]]
fs = "ext5"
mout = "noatime"

[[variant]]
fs = "xfs"
mkfs = []
`,
			want: []string{
				`matrix.toml:2: unknown filesystem "ext5" (known:`,
				`matrix.toml:3: unknown key "mout" in [[variant]]; did you mean "mount"?`,
				`matrix.toml:7: mkfs is an empty list`,
			},
		},
		{
			name: "type error and semantic problems together",
			in:   "size = \"10M\"\nrepetitions = \"two\"\n[[variant]]\nfs = \"ext4\"\n[[variant]]\nfs = \"ext4\"\n",
			want: []string{
				`matrix.toml:1: size 10 MiB is too small`,
				`matrix.toml:2: repetitions must be an integer, not the string "two"`,
				`matrix.toml:5: duplicate variant name "ext4" (the [[variant]] at line 3 makes it too)`,
			},
		},
		{
			name: "several semantic problems",
			in:   "size = \"10M\"\nrepetitions = 2\n[[variant]]\nfs = \"ext5\"\n",
			want: []string{
				`matrix.toml:1: size 10 MiB is too small`,
				`matrix.toml:4: unknown filesystem "ext5"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("matrix.toml", []byte(tt.in), testOpts)
			if err == nil {
				t.Fatalf("Parse succeeded (%d variants: %q), want errors %q", len(c.Variants), names(c.Variants), tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("problem %d:\n got: %s\nwant: %s...", i+1, lines[i], w)
				}
			}
			for _, e := range errorList(t, err) {
				if e.File != "matrix.toml" || e.Line <= 0 {
					t.Errorf("problem %q has File %q, Line %d", e, e.File, e.Line)
				}
			}
			if diff := cmp.Diff(Config{}, c); diff != "" {
				t.Errorf("Parse returned a non-zero Config with its error:\n%s", diff)
			}
		})
	}
}

// tomlList writes n strings, prefix followed by 1..n, as a TOML array.
func tomlList(prefix string, n int) string {
	q := make([]string, n)
	for i := range q {
		q[i] = strconv.Quote(prefix + strconv.Itoa(i+1))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// TestParseMatrixBound checks that a file making more than maxVariants variants is refused
// with the line of the table and the counts that multiply to the total, and that the count
// is taken before the matrix is expanded.
func TestParseMatrixBound(t *testing.T) {
	tenFS := `["ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "nilfs2", "vfat", "squashfs", "erofs"]`
	tests := []struct {
		name string
		in   string
		want []string // the problems, one per line of the error; nil: accepted
		n    int      // variants when accepted
	}{
		{
			name: "exactly the limit",
			in:   "[[variant]]\nfs = " + tenFS + "\nmkfs = " + tomlList("-L l", 10) + "\nmount = " + tomlList("o", 10) + "\n",
			n:    1000,
		},
		{
			name: "one table over the limit",
			in:   "seed = 2\n\n[[variant]]\nfs = " + tomlList("ext", 7) + "\nmkfs = " + tomlList("-L l", 11) + "\nmount = " + tomlList("o", 13) + "\n",
			want: []string{"matrix.toml:3: this [[variant]] table makes 1001 variants (fs 7 × mkfs 11 × mount 13); " +
				"the limit is 1000: split the matrix into several runs"},
		},
		{
			name: "only the lists given are named",
			in:   "# big\n[[variant]]\nmount = " + tomlList("o", 600) + "\nfs = [\"ext4\", \"xfs\"]\n",
			want: []string{"matrix.toml:2: this [[variant]] table makes 1200 variants (fs 2 × mount 600); " +
				"the limit is 1000: split the matrix into several runs"},
		},
		{
			name: "tables that are over the limit together",
			in: "[[variant]]\nfs = [\"ext4\", \"xfs\"]\nmount = " + tomlList("o", 300) + "\n" +
				"[[variant]]\nfs = \"btrfs\"\nmkfs = \"-m single\"\n" +
				"[[variant]]\nname = \"b\"\nfs = [\"btrfs\", \"f2fs\"]\nmount = " + tomlList("o", 200) + "\n",
			want: []string{"matrix.toml:7: the [[variant]] tables up to this one make 1001 variants (this one 400: fs 2 × mount 200); " +
				"the limit is 1000 per file: split the matrix into several runs"},
		},
		{
			name: "inline array of tables",
			in:   "size = \"1G\"\nvariant = [{fs = \"ext4\", mount = " + tomlList("o", 1024) + "}]\n",
			want: []string{"matrix.toml:2: this [[variant]] table makes 1024 variants (fs 1 × mount 1024); " +
				"the limit is 1000: split the matrix into several runs"},
		},
		{
			name: "other problems are still reported",
			in:   "[[variant]]\nfs = " + tomlList("ext", 40) + "\nmount = " + tomlList("o", 40) + "\nmout = 1\n",
			want: []string{
				"matrix.toml:1: this [[variant]] table makes 1600 variants (fs 40 × mount 40); " +
					"the limit is 1000: split the matrix into several runs",
				`matrix.toml:4: unknown key "mout" in [[variant]]; did you mean "mount"? (known keys: fs, mkfs, mount, name, partition_start)`,
			},
		},
		{
			name: "a million variants",
			in:   "[[variant]]\nfs = " + tomlList("ext", 100) + "\nmkfs = " + tomlList("-L l", 100) + "\nmount = " + tomlList("o", 100) + "\n",
			want: []string{"matrix.toml:1: this [[variant]] table makes 1000000 variants (fs 100 × mkfs 100 × mount 100); " +
				"the limit is 1000: split the matrix into several runs"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c, err := Parse("matrix.toml", []byte(tt.in), testOpts)
			runtime.ReadMemStats(&after)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if len(c.Variants) != tt.n {
					t.Errorf("got %d variants, want %d", len(c.Variants), tt.n)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse accepted %d variants, want %q", len(c.Variants), tt.want)
			}
			if diff := cmp.Diff(tt.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			// Expanding a million variants allocated 3 GiB before the bound; refusing them
			// must cost about what reading the file does.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("Parse allocated %d MiB to refuse the matrix: it expanded it first", alloc>>20)
			}
		})
	}
}

// TestParseErrorKeepsCause checks that decoder and size errors stay reachable.
func TestParseErrorKeepsCause(t *testing.T) {
	_, err := Parse("m.toml", []byte("a = 1\nb = [\n"), testOpts)
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v does not wrap a toml.ParseError", err)
	}
	if want := "m.toml:" + strconv.Itoa(pe.Position.Line) + ": "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}

	_, err = Parse("m.toml", []byte("size = \"1Q\"\n"), testOpts)
	var e *Error
	if !errors.As(err, &e) || e.Err == nil || !strings.Contains(e.Err.Error(), `unknown unit "Q"`) {
		t.Errorf("size error %v does not keep the bytesize.Parse error", err)
	}
}

func TestParseNilOptions(t *testing.T) {
	// With no registries, names are not checked (the caller has none to give).
	c, err := Parse("m.toml", []byte("suite = \"mine\"\ntests = [\"t1\"]\n[[variant]]\nfs = \"zfs\"\n"), Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if c.Suite.String() != "mine" || c.Variants[0].FS != "zfs" {
		t.Errorf("got suite %q, fs %q", c.Suite, c.Variants[0].FS)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string // one line per problem, in order
	}{
		{"defaults", func(*Config) {}, nil},
		{"size", func(c *Config) { c.Size = 1 << 20 }, []string{"size 1 MiB is too small: use at least 64 MiB"}},
		{"repetitions", func(c *Config) { c.Repetitions = 0 }, []string{"repetitions must be at least 1, not 0"}},
		{"timeout", func(c *Config) { c.Timeout = Duration{} }, []string{`timeout must be positive, not 0s`}},
		{"suite", func(c *Config) { c.Suite = Suites{"bonie"} }, []string{`unknown suite "bonie"; did you mean "bonnie"?`}},
		{"tests", func(c *Config) { c.Tests = []string{"mount", "umount"} }, []string{`unknown test "umount"; did you mean "mount"?`}},
		{"video", func(c *Config) { c.VideoSize = 2 << 30 }, []string{"video_size 2 GiB is larger than size 1 GiB"}},
		{"no variants", func(c *Config) { c.Variants = nil }, []string{"no variants to benchmark"}},
		{"variant fs", func(c *Config) { c.Variants = c.Variants[:1]; c.Variants[0].FS = "ext9" },
			[]string{`variant "ext4": unknown filesystem "ext9" (known: btrfs,`}},
		{"variant mount", func(c *Config) { c.Variants[2].MountOptions = ",noatime" },
			[]string{`variant "ext2": mount options ",noatime" have an empty option`}},
		{"duplicate", func(c *Config) { c.Variants[1].Name = "ext4" },
			[]string{`duplicate variant name "ext4"; give each variant its own name`}},
		{"several", func(c *Config) { c.Repetitions = -1; c.Variants[0].Name = "" }, []string{
			"repetitions must be at least 1, not -1",
			`variant "": variant name is empty`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.modify(&c)
			err := c.Validate(testOpts)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate succeeded, want %q", tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("problem %d:\n got: %s\nwant: %s...", i+1, lines[i], w)
				}
			}
		})
	}

	// Options without registries check no names; the default variants include
	// filesystems a registry may lack, and then Validate says which.
	c := Default()
	c.Suite = Suites{"anything"}
	if err := c.Validate(Options{}); err != nil {
		t.Errorf("Validate(Options{}): %v", err)
	}
	err := Default().Validate(Options{KnownFS: []string{"ext4"}})
	if err == nil || !strings.Contains(err.Error(), `variant "xfs": unknown filesystem "xfs" (known: ext4)`) {
		t.Errorf("Validate with a small registry: %v", err)
	}
}

func TestDurationText(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("1h30m")); err != nil || d.Duration != 90*time.Minute {
		t.Fatalf("UnmarshalText(1h30m) = %v, %v", d, err)
	}
	if err := d.UnmarshalText([]byte("soon")); err == nil || !strings.Contains(err.Error(), `"10m"`) {
		t.Errorf("UnmarshalText(soon) error = %v, want one with an example", err)
	}
	b, err := json.Marshal(struct{ T Duration }{Duration{10 * time.Minute}})
	if err != nil || string(b) != `{"T":"10m0s"}` {
		t.Errorf("json.Marshal = %s, %v", b, err)
	}
	// And TOML decoding into the type, for callers that embed it in their own files.
	var v struct{ T Duration }
	if _, err := toml.Decode(`T = "10m"`, &v); err != nil || v.T.Duration != 10*time.Minute {
		t.Errorf("toml.Decode = %v, %v", v.T, err)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		in         string
		candidates []string
		want       string
	}{
		{"mout", variantKeys, "mount"},
		{"mkfs_args", variantKeys, "mkfs"},
		{"FS", variantKeys, "fs"},
		{"filesystem", variantKeys, "fs"},
		{"colour", variantKeys, ""},
		{"repetition", topKeys, "repetitions"},
		{"seeds", topKeys, "seed"},
		{"btfrs", testOpts.KnownFS, "btrfs"}, // transposition
		{"ext5", testOpts.KnownFS, ""},       // ext2, ext3, ext4 equally close
		{"xfs", testOpts.KnownFS, "xfs"},
		{"zfs", testOpts.KnownFS, ""}, // one edit from xfs, but a different filesystem
		{"XFS", testOpts.KnownFS, "xfs"},
		{"o", variantKeys, "mount"}, // alias
		{"", testOpts.KnownFS, ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, tt.candidates); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"ab", "ba", 1}, {"mout", "mount", 1},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// FuzzParse checks that Parse never panics, that every error is located in the file (a
// line within it, or none), and that what it accepts passes Validate and makes at most
// maxVariants variants. Run it as make fuzz does, with -fuzzminimizetime 0: by default the
// fuzzer spends up to a minute shrinking each input that reaches new code, showing 0 execs/s
// meanwhile (Parse itself takes well under a millisecond).
func FuzzParse(f *testing.F) {
	if ex, err := os.ReadFile(filepath.Join("testdata", "example.toml")); err == nil {
		f.Add(ex)
	}
	for _, s := range []string{
		"",
		"size = \"1G\"\n[[variant]]\nfs = [\"ext4\", \"xfs\"]\nmount = [\"\", \"noatime\"]\n",
		"[[variant]]\nmout = 1\n[variant.x]\ny = 2\n",
		"variant = [{fs = \"ext4\"}, 3]\n",
		"s = \"\"\"\n[[variant]]\n\"\"\"\n[[variant]]\nfs = 'btrfs'\nmkfs = '-L \"a b'\n",
		"size = 9223372036854775807\nrepetitions = 9223372036854775807\n",
		"tests = [[]]\ntimeout = 1979-05-27\n",
		"[[variant]]\nfs = [\"ext4\", \"xfs\", \"btrfs\"]\nmkfs = [\"\", \"-L a\"]\nmount = [\"a\", \"b\", \"c\", \"d\"]\n" +
			"[[variant]]\nname = \"n\"\nfs = [\"ext2\", \"ext3\"]\nmount = [\"a\", \"b\"]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.toml", data, testOpts)
		if err != nil {
			nlines := strings.Count(string(data), "\n") + 1
			for _, e := range errorList(t, err) {
				if e.File != "fuzz.toml" || e.Line < 0 || e.Line > nlines {
					t.Fatalf("problem %q: File %q, Line %d of %d lines", e, e.File, e.Line, nlines)
				}
			}
			return
		}
		if err := c.Validate(testOpts); err != nil {
			t.Fatalf("Parse accepted a config that Validate rejects: %v", err)
		}
		if len(c.Variants) > maxVariants {
			t.Fatalf("Parse accepted %d variants, more than the limit of %d", len(c.Variants), maxVariants)
		}
	})
}
