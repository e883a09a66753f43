package fs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKindsAndNames(t *testing.T) {
	want := []string{"ext4", "ext2", "ext3", "xfs", "btrfs", "f2fs", "nilfs2", "vfat", "squashfs", "erofs", "jffs2", "ubifs", "yaffs2"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	ks := Kinds()
	if len(ks) != len(want) {
		t.Fatalf("Kinds() has %d kinds, want %d", len(ks), len(want))
	}
	ks[0].Name = "changed"
	if Kinds()[0].Name != "ext4" {
		t.Error("Kinds() returned the package's own slice: a caller changed it")
	}
	for _, k := range Kinds() {
		if k.NotMainline != "" {
			// Listed so that the 2010 study's column is accounted for; nothing to run.
			if k.Tool != "" || !k.Flash || k.Note == "" {
				t.Errorf("%s: not in mainline, yet %+v", k.Name, k)
			}
			continue
		}
		if k.Tool == "" || k.Package == "" || k.Module == "" || k.Note == "" {
			t.Errorf("%s: incomplete: %+v", k.Name, k)
		}
		if _, ok := specs[k.Name]; !ok {
			t.Errorf("%s: no spec (mkfs flags, version option)", k.Name)
		}
		if got, ok := Lookup(k.Name); !ok || got != k {
			t.Errorf("Lookup(%q) = %+v, %v", k.Name, got, ok)
		}
	}
}

func TestKindFacts(t *testing.T) {
	tests := []struct {
		name, tool, pkg, module string
		readOnly, symlinks      bool
	}{
		{"ext4", "mkfs.ext4", "e2fsprogs", "ext4", false, true},
		{"ext2", "mkfs.ext2", "e2fsprogs", "ext4", false, true},
		{"ext3", "mkfs.ext3", "e2fsprogs", "ext4", false, true},
		{"xfs", "mkfs.xfs", "xfsprogs", "xfs", false, true},
		{"btrfs", "mkfs.btrfs", "btrfs-progs", "btrfs", false, true},
		{"f2fs", "mkfs.f2fs", "f2fs-tools", "f2fs", false, true},
		{"nilfs2", "mkfs.nilfs2", "nilfs-tools", "nilfs2", false, true},
		{"vfat", "mkfs.vfat", "dosfstools", "vfat", false, false},
		{"squashfs", "mksquashfs", "squashfs-tools", "squashfs", true, true},
		{"erofs", "mkfs.erofs", "erofs-utils", "erofs", true, true},
	}
	for _, tt := range tests {
		k := mustLookup(t, tt.name)
		got := []any{k.Tool, k.Package, k.Module, k.ReadOnly, k.Symlinks}
		want := []any{tt.tool, tt.pkg, tt.module, tt.readOnly, tt.symlinks}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"ext4", "ext4", true},
		{"EROFS", "erofs", true},
		{" btrfs ", "btrfs", true},
		{"ntfs", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		k, ok := Lookup(tt.in)
		if ok != tt.ok || k.Name != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.in, k.Name, ok, tt.want, tt.ok)
		}
	}
}
