package verdict

import (
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

func TestMismatch(t *testing.T) {
	ext4 := results.Variant{Name: "ext4", FS: "ext4", MkfsArgs: []string{"-O", "^has_journal"}, MountOptions: "noatime"}
	tests := []struct {
		name string
		b    results.Variant
		want string // "" when it is the same variant
	}{
		{"same", ext4, ""},
		{"mkfs arguments dropped", results.Variant{Name: "ext4", FS: "ext4", MountOptions: "noatime"},
			"ext4: mkfs -O ^has_journal in A, none in B — not the same variant"},
		{"mount options changed", results.Variant{Name: "ext4", FS: "ext4", MkfsArgs: []string{"-O", "^has_journal"}, MountOptions: "noatime,dirsync"},
			"ext4: mount noatime in A, noatime,dirsync in B — not the same variant"},
		{"everything", results.Variant{Name: "ext4", FS: "ext3"},
			"ext4: filesystem ext4 in A, ext3 in B; mkfs -O ^has_journal in A, none in B; mount noatime in A, none in B — not the same variant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := mismatch(ext4, tc.b)
			if ok != (tc.want != "") || (ok && m.String() != tc.want) {
				t.Errorf("mismatch = %q, %v; want %q", m.String(), ok, tc.want)
			}
		})
	}
}
