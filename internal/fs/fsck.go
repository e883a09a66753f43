package fs

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// Outcomes of a filesystem check (Check) and of a repair (Repair).
const (
	FsckClean      = "clean"       // the check found nothing wrong
	FsckErrors     = "errors"      // the check found inconsistencies
	FsckToolFailed = "tool failed" // the checker could not run to the end
	// FsckNone: the filesystem has no offline checker (nilfs2: nilfs-tools ships none, its
	// mount rolls forward from the last valid checkpoint). Not a failure of the filesystem:
	// the mount and the verified files are all there is to judge it by.
	FsckNone          = "no checker"
	FsckRepaired      = "repaired"      // the repair fixed what it found
	FsckUnrecoverable = "unrecoverable" // the repair left errors, or could not run
)

// fsckCommand is the check-only (repair false) or repairing command line for a filesystem,
// and the exit codes that mean "clean" and, for a repair, "fixed".
type fsckCommand struct {
	tool       string
	args       []string
	clean, fix []int
}

func fsckFor(k Kind, dev string, repair bool) (fsckCommand, bool) {
	switch k.Name {
	case "ext2", "ext3", "ext4":
		// e2fsck: 0 clean, 1 errors corrected, 2 corrected and reboot wanted, 4 errors left.
		if repair {
			return fsckCommand{"e2fsck", []string{"-fy", dev}, []int{0}, []int{1, 2}}, true
		}
		return fsckCommand{"e2fsck", []string{"-fn", dev}, []int{0}, nil}, true
	case "xfs":
		// xfs_repair -n: 0 clean, 1 corruption. A repair refuses a dirty log unless -L zeroes
		// it (losing the log's transactions): what a user whose mount fails ends up doing.
		if repair {
			return fsckCommand{"xfs_repair", []string{"-L", dev}, []int{0}, nil}, true
		}
		return fsckCommand{"xfs_repair", []string{"-n", dev}, []int{0}, nil}, true
	case "btrfs":
		if repair {
			return fsckCommand{"btrfs", []string{"check", "--repair", "--force", dev}, []int{0}, nil}, true
		}
		return fsckCommand{"btrfs", []string{"check", "--readonly", dev}, []int{0}, nil}, true
	case "f2fs":
		if repair {
			return fsckCommand{"fsck.f2fs", []string{"-f", "-y", dev}, []int{0}, nil}, true
		}
		return fsckCommand{"fsck.f2fs", []string{"--dry-run", "-f", dev}, []int{0}, nil}, true
	case "vfat":
		// fsck.fat: 0 clean, 1 errors (fixed with -a, found with -n).
		if repair {
			return fsckCommand{"fsck.vfat", []string{"-a", "-w", dev}, []int{0}, []int{1}}, true
		}
		return fsckCommand{"fsck.vfat", []string{"-n", dev}, []int{0}, nil}, true
	}
	return fsckCommand{}, false
}

// Check runs the filesystem's checker on dev without changing it and says what it found,
// with the tool's output (for the report's detail). The error is set only when ctx ended.
func Check(ctx context.Context, run Runner, k Kind, dev string) (string, string, error) {
	c, ok := fsckFor(k, dev, false)
	if !ok {
		return FsckNone, "no checker known for " + k.Name, nil
	}
	code, out, err := runCode(ctx, run, c, dev)
	switch {
	case err != nil:
		return FsckToolFailed, out, err
	case contains(c.clean, code), k.Name == "vfat" && code == 1 && onlyDirtyBit(out):
		return FsckClean, out, nil
	case code < 0 || (k.Name == "ext2" || k.Name == "ext3" || k.Name == "ext4") && code >= 8:
		return FsckToolFailed, out, nil
	}
	return FsckErrors, out, nil
}

// onlyDirtyBit reports whether fsck.fat's output complains of nothing but the volume's dirty
// bit. Linux sets that bit at mount and clears it at unmount only if it was clear at mount
// (fs/fat/inode.c fat_set_state), so a FAT volume the power was cut under keeps it through any
// number of clean mounts: fsck.fat -n then exits 1 for the bit alone. It is FAT's "not cleanly
// unmounted" flag, as ext4's needs_recovery is, which the mount's recovery clears there; counted
// as an error it would make every vfat cut an fsck failure and hide the cuts that broke the
// FAT itself.
func onlyDirtyBit(out string) bool {
	dirty := false
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Dirty bit is set"):
			dirty = true
		// Without glibc's gconv modules (the QEMU guest's initramfs has none) fsck.fat says
		// so and uses its own CP850 table: nothing about the volume.
		case strings.HasPrefix(line, "Cannot initialize conversion from"), line == "Using internal CP850 conversion table":
		case line == "", strings.HasPrefix(line, "fsck.fat "), strings.HasPrefix(line, "Automatically removing dirty bit"),
			line == "Leaving filesystem unchanged.", strings.Contains(line, " files, ") && strings.Contains(line, " clusters"):
		default:
			return false
		}
	}
	return dirty
}

// Repair runs the filesystem's checker in repair mode on dev: repaired when it exits clean
// or fixed, unrecoverable otherwise.
func Repair(ctx context.Context, run Runner, k Kind, dev string) (string, string, error) {
	c, ok := fsckFor(k, dev, true)
	if !ok {
		return FsckUnrecoverable, "no checker known for " + k.Name, nil
	}
	code, out, err := runCode(ctx, run, c, dev)
	if err != nil {
		return FsckUnrecoverable, out, err
	}
	if contains(c.clean, code) || contains(c.fix, code) {
		return FsckRepaired, out, nil
	}
	return FsckUnrecoverable, out, nil
}

// runCode runs the command, confined to dev, and returns its exit code (-1: it did not run or was
// killed); the error is set only when ctx ended.
func runCode(ctx context.Context, run Runner, c fsckCommand, dev string) (int, string, error) {
	if err := checkDevice(ctx, dev); err != nil {
		return -1, err.Error(), fmt.Errorf("%s: %w", commandLine(c.tool, c.args), err)
	}
	out, err := runner(run)(withJail(ctx, jail{devices: []string{dev}}), c.tool, c.args...)
	text := strings.TrimSpace(string(out))
	if len(text) > maxOutput {
		text = "..." + text[len(text)-maxOutput:]
	}
	if ctx.Err() != nil {
		return -1, text, fmt.Errorf("%s: %w", commandLine(c.tool, c.args), ctx.Err())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, text, nil
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), text, nil
	}
	return -1, text + "\n" + err.Error(), nil
}

func contains(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// LeakedBlocks reads, from e2fsck's output, how many blocks the block bitmap marks in use
// that no file or metadata holds ("Block bitmap differences: -(100--107) -200": the ranges
// with a minus): space a cut leaked, which only a repair gives back. ok is false when the
// checker reports no such figure (every one but e2fsck).
func LeakedBlocks(k Kind, out string) (blocks uint64, ok bool) {
	switch k.Name {
	case "ext2", "ext3", "ext4":
	default:
		return 0, false
	}
	for _, line := range strings.Split(out, "\n") {
		i := strings.Index(line, "Block bitmap differences:")
		if i < 0 {
			continue
		}
		for _, f := range strings.Fields(line[i+len("Block bitmap differences:"):]) {
			if !strings.HasPrefix(f, "-") {
				continue
			}
			r := strings.Trim(f[1:], "()")
			lo, hi, found := strings.Cut(r, "--")
			a, err1 := strconv.ParseUint(lo, 10, 64)
			b := a
			var err2 error
			if found {
				b, err2 = strconv.ParseUint(hi, 10, 64)
			}
			if err1 == nil && err2 == nil && b >= a {
				blocks += b - a + 1
			}
		}
	}
	return blocks, true
}
