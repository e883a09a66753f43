package mountinfo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// TablePath is the mount table Read("") reads: this process's mount namespace. Tests point it at
// a fake table.
var TablePath = "/proc/self/mountinfo"

// Canonical returns dir as the kernel writes it in mountinfo: absolute, clean, symlinks resolved
// (when dir exists).
func Canonical(dir string) (string, error) {
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
	ms, err := Read("")
	if err != nil {
		return false, err
	}
	return atPath(ms, dir)
}

// atPath is MountedAt on a given table: dir is made canonical first, since the kernel prints a
// symlinked path as its target.
func atPath(ms []Entry, dir string) (bool, error) {
	d, err := Canonical(dir)
	if err != nil {
		return false, fmt.Errorf("mounted at %s: %w", dir, err)
	}
	return At(ms, d), nil
}

// At reports whether the table ms lists dir (as the kernel writes it: see MountedAt) as a
// mount point.
func At(ms []Entry, dir string) bool {
	return slices.ContainsFunc(ms, func(m Entry) bool { return m.MountPoint == dir })
}

// Under returns the mount points at dir or below it, deepest first, in the order they must be
// unmounted. A directory with several mounts stacked on it appears once per mount (each unmount
// removes the top one); among equally deep ones the most recent comes first.
func Under(dir string) ([]string, error) {
	d, err := Canonical(dir)
	if err != nil {
		return nil, fmt.Errorf("mounts under %s: %w", dir, err)
	}
	ms, err := Read("")
	if err != nil {
		return nil, err
	}
	return UnderIn(ms, d), nil
}

// UnderIn is Under on a given table, for a canonical d.
func UnderIn(ms []Entry, d string) []string {
	prefix := strings.TrimSuffix(d, "/") + "/"
	var out []string
	for i := len(ms) - 1; i >= 0; i-- { // most recent first
		mp := ms[i].MountPoint
		if mp == d || strings.HasPrefix(mp, prefix) {
			out = append(out, mp)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return Depth(b) - Depth(a) })
	return out
}

// Depth counts the components of an absolute path ("/" is 0).
func Depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// How long Unmount keeps retrying EBUSY: udev and blkid open a device for a moment after it
// changes (a mount is a change), and such a holder is gone in well under a second; a process
// that was using the filesystem may be exiting.
const (
	busyRetryFor   = 5 * time.Second
	busyFirstDelay = 10 * time.Millisecond
	busyMaxDelay   = 250 * time.Millisecond
)

// UnmountOptions say how careful Unmount is.
type UnmountOptions struct {
	// NoFollow: the path came from a file (a cleanup ledger), and a symlink planted in its
	// place must not redirect the unmount elsewhere (UMOUNT_NOFOLLOW).
	NoFollow bool
	// Lazy: when it is still busy after the retries, take it out of the tree now (MNT_DETACH);
	// the kernel finishes when its last user lets go.
	Lazy bool
	// Detach: take it out of the tree at once (MNT_DETACH), without trying a plain unmount
	// first: for a mount known to stay busy (a FUSE mount whose server died while a loop
	// device still holds its file), where the retries would only wait.
	Detach bool
}

// Unmounted says how Unmount ended.
type Unmounted int

const (
	NotMounted Unmounted = iota // nothing was mounted there
	Done                        // unmounted
	Detached                    // lazily detached (UnmountOptions.Lazy), still busy
)

// Unmount unmounts the top mount on dir, retrying EBUSY for a few seconds. Not mounted (or no
// such directory) is no error. It is the one place fsbench's packages unmount with umount(2).
func Unmount(ctx context.Context, dir string, opt UnmountOptions) (Unmounted, error) {
	flags := 0
	if opt.NoFollow {
		flags |= unix.UMOUNT_NOFOLLOW
	}
	if opt.Detach {
		switch err := unix.Unmount(dir, flags|unix.MNT_DETACH); {
		case err == nil:
			return Detached, nil
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EINVAL):
			return NotMounted, nil
		default:
			return NotMounted, fmt.Errorf("lazy umount %s: %w", dir, err)
		}
	}
	give := time.Now().Add(busyRetryFor)
	delay := busyFirstDelay
	for {
		err := unix.Unmount(dir, flags)
		switch {
		case err == nil:
			return Done, nil
		case errors.Is(err, unix.ENOENT):
			return NotMounted, nil // no such directory: nothing can be mounted there
		case errors.Is(err, unix.EINVAL):
			// EINVAL is how umount(2) says "not a mount point"; make sure that is what it meant.
			if m, mErr := MountedAt(dir); mErr == nil && !m {
				return NotMounted, nil
			}
			return NotMounted, fmt.Errorf("umount %s: %w", dir, err)
		case errors.Is(err, unix.EBUSY):
			if time.Now().After(give) {
				if opt.Lazy {
					if lerr := unix.Unmount(dir, flags|unix.MNT_DETACH); lerr != nil && !errors.Is(lerr, unix.EINVAL) {
						return NotMounted, fmt.Errorf("umount %s: busy, and lazy unmount failed: %w", dir, lerr)
					}
					return Detached, nil
				}
				return NotMounted, fmt.Errorf("umount %s: %w: still busy after %v: a process uses it (fuser -vm %s shows which)",
					dir, err, busyRetryFor, dir)
			}
			if err := sleepCtx(ctx, delay); err != nil {
				return NotMounted, fmt.Errorf("umount %s: busy, gave up: %w", dir, err)
			}
			delay = min(2*delay, busyMaxDelay)
		default:
			return NotMounted, fmt.Errorf("umount %s: %w", dir, err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
