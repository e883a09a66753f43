// Package sessiontest holds what the tests of the target kinds share: skipping without root or
// loop devices, a loop device detached when the test ends, an ext4 made and mounted on it. It
// is for tests only (the session package's own tests have their copies: they cannot import it).
package sessiontest

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/session"
)

// RequireRoot skips tests that attach loop devices or mount when they cannot.
func RequireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: attaches loop devices and mounts file systems")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("needs loop device support: %v", err)
	}
}

// RequireMkfsExt4 is mkfs.ext4's path; it skips the test without it.
func RequireMkfsExt4(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("needs mkfs.ext4 (e2fsprogs)")
	}
	return p
}

// MkfsExt4 makes an ext4 on dev.
func MkfsExt4(t *testing.T, dev string) {
	t.Helper()
	out, err := exec.Command(RequireMkfsExt4(t), "-q", "-F", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("mkfs.ext4 %s: %v\n%s", dev, err, out)
	}
}

// Attach attaches a loop device and makes sure it is detached when the test ends, even if it
// fails.
func Attach(t *testing.T, img string, opt session.LoopOptions) *session.Loop {
	t.Helper()
	l, err := session.AttachLoop(img, opt)
	if err != nil {
		t.Fatalf("AttachLoop(%s, %+v): %v", img, opt, err)
	}
	t.Cleanup(func() {
		if err := l.Detach(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return l
}

// MountExt4 mounts dev on mnt and unmounts it, and everything below it, when the test ends.
func MountExt4(t *testing.T, dev, mnt string) {
	t.Helper()
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s on %s: %v", dev, mnt, err)
	}
	t.Cleanup(func() {
		ms, err := session.MountsUnder(mnt)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		for _, m := range ms {
			if err := unix.Unmount(m, 0); err != nil && !errors.Is(err, unix.EINVAL) {
				if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
					t.Errorf("cleanup: unmount %s: %v", m, err)
				}
			}
		}
	})
}
