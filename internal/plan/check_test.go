package plan

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/fs"
)

// A variant's mkfs words and mount options are judged by the filesystem package's checks, and a
// refusal names the line of the key in the file.
func TestVariantWordsChecked(t *testing.T) {
	opt := testOpts
	opt.CheckMkfs, opt.CheckMount = fs.CheckMkfs, fs.CheckMount
	tests := []struct {
		name, in string
		want     string // "" = accepted
	}{
		{"btrfs with a second device", "[[variant]]\nfs = \"btrfs\"\nmkfs = \"-m single /dev/loop4\"\n",
			`matrix.toml:3: mkfs.btrfs: "/dev/loop4" is not an option`},
		{"external ext4 journal", "[[variant]]\nfs = \"ext4\"\n\nmkfs = [\"\", \"-J device=/dev/sdb1\"]\n",
			`matrix.toml:4: mkfs.ext4: -J device=/dev/sdb1 is refused`},
		{"xfs log elsewhere", "[[variant]]\nfs = \"xfs\"\nmkfs = \"-l logdev=/dev/sdc\"\n",
			`matrix.toml:3: mkfs.xfs: -l logdev=/dev/sdc is refused`},
		{"btrfs device= mount option", "[[variant]]\nfs = \"btrfs\"\nmount = \"noatime,device=/dev/loop4\"\n",
			`matrix.toml:3: mount option device=/dev/loop4 is refused`},
		{"fine", "[[variant]]\nfs = \"btrfs\"\nmkfs = \"-m single\"\nmount = \"compress=zstd\"\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("matrix.toml", []byte(tc.in), opt)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "":
			case err == nil:
				t.Fatalf("accepted, want %q", tc.want)
			case !strings.HasPrefix(err.Error(), tc.want):
				t.Errorf("got  %s\nwant %s...", err, tc.want)
			}
		})
	}
	// Flags set after loading go through Validate, which checks the same.
	c := Default()
	c.Variants[5].MkfsArgs = []string{"-m", "single", "/dev/loop4"}
	if err := c.Validate(opt); err == nil || !strings.Contains(err.Error(), `variant "btrfs": mkfs.btrfs: "/dev/loop4" is not an option`) {
		t.Errorf("Validate: %v", err)
	}
}
