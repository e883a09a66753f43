package session

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SetScheduler selects the I/O scheduler of the block device dev (e.g. "loop3", "mmcblk0p2":
// a partition has no queue of its own, its disk's is used) under sysfs and returns a function
// that restores the scheduler that was active before: the device's settings belong to its
// owner, and fsbench only borrows them for a run.
func SetScheduler(sysfs, dev, sched string) (restore func() error, err error) {
	file, available, current, err := readScheduler(sysfs, dev)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(available, sched) {
		return nil, fmt.Errorf("I/O scheduler %q is not available for %s (available: %s): the kernel lacks it or its module", sched, dev, strings.Join(available, ", "))
	}
	set := func(s string) error {
		if err := os.WriteFile(file, []byte(s), 0); err != nil {
			return fmt.Errorf("setting the I/O scheduler of %s to %s: %w", dev, s, err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		// The kernel accepts the write and may still keep another scheduler (a module that
		// failed to load): believe only what it reports afterwards.
		if _, now := ParseScheduler(string(b)); now != s {
			return fmt.Errorf("the I/O scheduler of %s is %q after setting %q", dev, now, s)
		}
		return nil
	}
	if err := set(sched); err != nil {
		return nil, err
	}
	return func() error {
		if current == "" || current == sched {
			return nil
		}
		return set(current)
	}, nil
}

// CurrentScheduler returns the I/O scheduler dev (or its disk, for a partition) uses now.
func CurrentScheduler(sysfs, dev string) (string, error) {
	_, _, current, err := readScheduler(sysfs, dev)
	return current, err
}

func readScheduler(sysfs, dev string) (file string, available []string, current string, err error) {
	file, err = schedulerFile(sysfs, dev)
	if err != nil {
		return "", nil, "", err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", nil, "", fmt.Errorf("reading the I/O scheduler of %s: %w", dev, err)
	}
	available, current = ParseScheduler(string(b))
	return file, available, current, nil
}

// ParseScheduler parses a queue/scheduler file, "none [mq-deadline] kyber bfq": the
// schedulers available and the active one (in brackets).
func ParseScheduler(s string) (available []string, current string) {
	for _, f := range strings.Fields(s) {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			f = strings.Trim(f, "[]")
			current = f
		}
		available = append(available, f)
	}
	return available, current
}

// schedulerFile finds the queue/scheduler file of dev, or of its disk for a partition.
func schedulerFile(sysfs, dev string) (string, error) {
	// /sys/class/block/<dev> is a symlink into /sys/devices; a partition's directory sits
	// inside its disk's, so its parent is found after resolving the link, not lexically.
	base, err := filepath.EvalSymlinks(filepath.Join(sysfs, "class", "block", filepath.Base(dev)))
	if err != nil {
		return "", fmt.Errorf("%s is not a block device in sysfs: %w", dev, err)
	}
	for _, dir := range []string{base, filepath.Dir(base)} {
		f := filepath.Join(dir, "queue", "scheduler")
		if _, err := os.Stat(f); err == nil {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s has no queue/scheduler in sysfs: cannot choose its I/O scheduler", dev)
}
