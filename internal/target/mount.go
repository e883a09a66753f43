package target

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/mountinfo"
)

// mountinfoPath is where the mount table of this process's mount namespace is read from
// (tests point it at a fake).
var mountinfoPath = "/proc/self/mountinfo"

func readMounts() ([]mountinfo.Entry, error) { return mountinfo.Read(mountinfoPath) }

// canonical returns dir as the kernel writes it in mountinfo: absolute, clean, symlinks
// resolved (when dir exists).
func canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// MountedAt reports whether something is mounted on dir itself.
func MountedAt(dir string) (bool, error) {
	d, err := canonical(dir)
	if err != nil {
		return false, fmt.Errorf("mounted at %s: %w", dir, err)
	}
	ms, err := readMounts()
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.MountPoint == d {
			return true, nil
		}
	}
	return false, nil
}

// MountsUnder returns the mount points at dir or below it, deepest first, in the order they
// must be unmounted. A directory with several mounts stacked on it appears once per mount
// (each unmount removes the top one); among equally deep ones the most recent comes first.
func MountsUnder(dir string) ([]string, error) {
	d, err := canonical(dir)
	if err != nil {
		return nil, fmt.Errorf("mounts under %s: %w", dir, err)
	}
	ms, err := readMounts()
	if err != nil {
		return nil, err
	}
	return mountsUnder(ms, d), nil
}

func mountsUnder(ms []mountinfo.Entry, d string) []string {
	prefix := strings.TrimSuffix(d, "/") + "/"
	var out []string
	for i := len(ms) - 1; i >= 0; i-- { // most recent first
		mp := ms[i].MountPoint
		if mp == d || strings.HasPrefix(mp, prefix) {
			out = append(out, mp)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return depth(b) - depth(a) })
	return out
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}
