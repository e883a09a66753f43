package session

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// requireRoot skips tests that attach loop devices or mount when they cannot.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: attaches loop devices and mounts file systems")
	}
	if _, err := os.Stat(loopControl); err != nil {
		t.Skipf("needs loop device support: %v", err)
	}
}

func requireMkfsExt4(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("needs mkfs.ext4 (e2fsprogs)")
	}
	return p
}

func mkfsExt4(t *testing.T, dev string) {
	t.Helper()
	out, err := exec.Command(requireMkfsExt4(t), "-q", "-F", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("mkfs.ext4 %s: %v\n%s", dev, err, out)
	}
}

// setForceSetFD switches AttachLoop to the pre-5.8 path for the rest of the test.
func setForceSetFD(t *testing.T, v bool) {
	old := forceSetFD
	forceSetFD = v
	t.Cleanup(func() { forceSetFD = old })
}

// newImage makes a sparse image under the test's temp dir.
func newImage(t *testing.T, dir string, size uint64) string {
	t.Helper()
	img := filepath.Join(dir, "test.img")
	if err := CreateImage(img, size); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(img)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// attach attaches a loop device and makes sure it is detached when the test ends, even if
// it fails.
func attach(t *testing.T, img string, opt LoopOptions) *Loop {
	t.Helper()
	l, err := AttachLoop(img, opt)
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

// mountExt4 mounts dev on mnt and unmounts it when the test ends.
func mountExt4(t *testing.T, dev, mnt string) {
	t.Helper()
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount %s on %s: %v", dev, mnt, err)
	}
	t.Cleanup(func() { forceUnmount(t, mnt) })
}

// forceUnmount removes every mount on or below mnt (a safety net for cleanups).
func forceUnmount(t *testing.T, mnt string) {
	t.Helper()
	ms, err := MountsUnder(mnt)
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
}

// detachIfBoundTo is a safety net: it detaches loop device name only if it is still bound to
// backing (another process may have the same number by now).
func detachIfBoundTo(t *testing.T, name, backing string) {
	t.Helper()
	cur, err := readLoopAttr(name, "backing_file")
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !sameBacking(cur, backing)) {
		return
	}
	f, err := os.Open(filepath.Join(devRoot, name))
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	defer f.Close()
	if err := clearFd(f); err != nil && !errors.Is(err, unix.ENXIO) {
		t.Errorf("cleanup: LOOP_CLR_FD %s: %v", name, err)
	}
}

// boundTo reports whether loop device name is bound to backing, per sysfs.
func boundTo(t *testing.T, name, backing string) bool {
	t.Helper()
	cur, err := readLoopAttr(name, "backing_file")
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return sameBacking(cur, backing)
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

func readAt(t *testing.T, path string, off int64, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatalf("read %s at %d: %v", path, off, err)
	}
	return b
}

func equalBytes(a, b []byte) bool { return bytes.Equal(a, b) }
