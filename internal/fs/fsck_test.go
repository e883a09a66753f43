package fs

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// exitRunner is a Runner whose program exits with code (the real exec error type, from a
// shell), recording the command line it was asked for.
func exitRunner(code int, got *[]string) Runner {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		*got = append([]string{name}, args...)
		out, err := exec.CommandContext(ctx, "sh", "-c", "echo checked; exit "+strconv.Itoa(code)).CombinedOutput()
		return out, err
	}
}

func TestCheckAndRepair(t *testing.T) {
	ext4, _ := Lookup("ext4")
	xfs, _ := Lookup("xfs")
	btrfs, _ := Lookup("btrfs")
	vfat, _ := Lookup("vfat")
	squash, _ := Lookup("squashfs")
	tests := []struct {
		kind      Kind
		code      int
		check     string
		checkCmd  []string
		repair    string
		repairCmd []string
	}{
		{ext4, 0, FsckClean, []string{"e2fsck", "-fn", "/dev/loop9"}, FsckRepaired, []string{"e2fsck", "-fy", "/dev/loop9"}},
		{ext4, 4, FsckErrors, nil, FsckUnrecoverable, nil},
		{ext4, 1, FsckErrors, nil, FsckRepaired, nil},
		{ext4, 8, FsckToolFailed, nil, FsckUnrecoverable, nil},
		{xfs, 1, FsckErrors, []string{"xfs_repair", "-n", "/dev/loop9"}, FsckUnrecoverable, []string{"xfs_repair", "-L", "/dev/loop9"}},
		{btrfs, 0, FsckClean, []string{"btrfs", "check", "--readonly", "/dev/loop9"}, FsckRepaired, nil},
		{vfat, 1, FsckErrors, []string{"fsck.vfat", "-n", "/dev/loop9"}, FsckRepaired, nil},
		{squash, 0, FsckNone, nil, FsckUnrecoverable, nil},
	}
	for _, tc := range tests {
		t.Run(tc.kind.Name+"/"+strconv.Itoa(tc.code), func(t *testing.T) {
			var cmd []string
			got, _, err := Check(context.Background(), exitRunner(tc.code, &cmd), tc.kind, "/dev/loop9")
			if err != nil || got != tc.check {
				t.Errorf("Check = %q, %v; want %q", got, err, tc.check)
			}
			if tc.checkCmd != nil && !slices.Equal(cmd, tc.checkCmd) {
				t.Errorf("check ran %q, want %q", cmd, tc.checkCmd)
			}
			cmd = nil
			got, _, err = Repair(context.Background(), exitRunner(tc.code, &cmd), tc.kind, "/dev/loop9")
			if err != nil || got != tc.repair {
				t.Errorf("Repair = %q, %v; want %q", got, err, tc.repair)
			}
			if tc.repairCmd != nil && !slices.Equal(cmd, tc.repairCmd) {
				t.Errorf("repair ran %q, want %q", cmd, tc.repairCmd)
			}
		})
	}
}

// TestOnlyDirtyBit: fsck.fat 4.2's output on a FAT16 volume whose only fault is the dirty bit
// (made by setting it by hand), and with a real fault beside it.
func TestOnlyDirtyBit(t *testing.T) {
	const dirty = "fsck.fat 4.2 (2021-01-31)\nDirty bit is set. Fs was not properly unmounted and some data may be corrupt.\n Automatically removing dirty bit.\n\nLeaving filesystem unchanged.\nv.img: 0 files, 0/65467 clusters"
	if !onlyDirtyBit(dirty) {
		t.Errorf("dirty bit alone not recognized:\n%s", dirty)
	}
	// As in the guest, without gconv modules.
	const guest = "Cannot initialize conversion from codepage 850 to ANSI_X3.4-1968: Invalid argument\nCannot initialize conversion from ANSI_X3.4-1968 to codepage 850: Invalid argument\nUsing internal CP850 conversion table\n" + dirty
	if !onlyDirtyBit(guest) {
		t.Errorf("dirty bit alone, without gconv, not recognized:\n%s", guest)
	}
	if onlyDirtyBit(strings.Replace(guest, "Dirty bit", "FATs differ but appear to be intact.\n  Using first FAT.\nReclaimed 8 unused clusters (16384 bytes).\nDirty bit", 1)) {
		t.Error("differing FATs and reclaimed clusters taken for the dirty bit alone")
	}
	bad := strings.Replace(dirty, "\n\n", "\n/d0/f0001\n  File size is 4096 bytes, cluster chain length is 0.\n", 1)
	if onlyDirtyBit(bad) {
		t.Errorf("a broken file taken for the dirty bit alone:\n%s", bad)
	}
	if onlyDirtyBit("fsck.fat 4.2 (2021-01-31)\nv.img: 0 files, 0/65467 clusters") {
		t.Error("no dirty bit taken for one")
	}
}

func TestLeakedBlocks(t *testing.T) {
	ext4, _ := Lookup("ext4")
	xfs, _ := Lookup("xfs")
	tests := []struct {
		kind Kind
		out  string
		want uint64
		ok   bool
	}{
		{ext4, "Pass 5: Checking group summary information\nBlock bitmap differences:  -(8193--8200) -9000 +(100--101)\nFix? no\n", 9, true},
		{ext4, "Pass 5: Checking group summary information\n/dev/loop3: 11/16384 files\n", 0, true},
		{xfs, "Block bitmap differences: -(1--2)", 0, false},
	}
	for _, tc := range tests {
		got, ok := LeakedBlocks(tc.kind, tc.out)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LeakedBlocks(%s, %q) = %d, %v; want %d, %v", tc.kind.Name, tc.out, got, ok, tc.want, tc.ok)
		}
	}
}
