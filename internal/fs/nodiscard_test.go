package fs

import (
	"slices"
	"testing"
)

func TestNoDiscardArgs(t *testing.T) {
	tests := []struct {
		kind string
		args []string
		want []string
	}{
		{"ext4", nil, []string{"-E", "nodiscard"}},
		{"ext2", []string{"-b", "4096"}, []string{"-b", "4096", "-E", "nodiscard"}},
		// mke2fs keeps only the last -E: nodiscard joins it.
		{"ext4", []string{"-E", "stride=4", "-E", "stripe_width=1024"}, []string{"-E", "stride=4", "-E", "stripe_width=1024,nodiscard"}},
		{"ext4", []string{"-E", "discard"}, []string{"-E", "discard"}},
		{"xfs", []string{"-m", "crc=1"}, []string{"-m", "crc=1", "-K"}},
		{"btrfs", []string{"--nodiscard"}, []string{"--nodiscard"}},
		{"nilfs2", nil, []string{"-K"}},
		{"f2fs", nil, []string{"-t", "0"}},
		{"f2fs", []string{"-t", "1"}, []string{"-t", "1"}},
		{"vfat", nil, nil},
	}
	for _, tc := range tests {
		k, ok := Lookup(tc.kind)
		if !ok {
			t.Fatalf("no kind %s", tc.kind)
		}
		in := slices.Clone(tc.args)
		got := NoDiscardArgs(k, tc.args)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %q: got %q, want %q", tc.kind, tc.args, got, tc.want)
		}
		// fsbench's own words go through the same check as a user's (the mkfs jail).
		if err := CheckMkfsArgs(k, got); err != nil {
			t.Errorf("%s %q: refused by the mkfs word check: %v", tc.kind, got, err)
		}
		if !slices.Equal(in, tc.args) {
			t.Errorf("%s: the variant's own args were changed: %q", tc.kind, tc.args)
		}
	}
}
