package fs

import (
	"slices"
	"testing"
)

// TestMkfsIdentity reads the UUIDs and labels a variant's words give, by each tool's grammar:
// clusters, attached values, long options, xfs's -m sub-option, vfat's volume id.
func TestMkfsIdentity(t *testing.T) {
	for _, tc := range []struct {
		fs            string
		words         []string
		uuids, labels []string
	}{
		{"ext4", []string{"-U", "0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70", "-L", "root"}, []string{"0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70"}, []string{"root"}},
		{"ext4", []string{"-FU0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70", "-Lboot"}, []string{"0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70"}, []string{"boot"}},
		{"ext4", []string{"-U", "random"}, nil, nil},
		{"xfs", []string{"-m", "crc=1,uuid=0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70", "-L", "data"}, []string{"0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70"}, []string{"data"}},
		{"btrfs", []string{"--uuid=0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70", "--label", "pool"}, []string{"0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70"}, []string{"pool"}},
		{"f2fs", []string{"-l", "f2", "-U", "0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70"}, []string{"0b5e2f3c-7a41-4d2e-9c11-2f6a8d4e5b70"}, []string{"f2"}},
		{"vfat", []string{"-i", "1234abcd", "-n", "BOOT"}, []string{"1234-ABCD"}, []string{"BOOT"}},
		{"nilfs2", []string{"-L", "n"}, nil, []string{"n"}},
		{"squashfs", []string{"-comp", "xz"}, nil, nil},
	} {
		k, _ := Lookup(tc.fs)
		u, l := MkfsIdentity(k, tc.words)
		if !slices.Equal(u, tc.uuids) || !slices.Equal(l, tc.labels) {
			t.Errorf("%s %q: UUIDs %q labels %q, want %q %q", tc.fs, tc.words, u, l, tc.uuids, tc.labels)
		}
	}
}
