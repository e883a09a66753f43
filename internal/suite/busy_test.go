package suite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOpenExclusiveNamesTheHolder reproduces a device kept claimed after fsbench unmounted
// it: a process started in a new mount namespace while the filesystem was mounted keeps a
// copy of the mount. Every later repetition's mkfs failed with a bare "device or resource
// busy" (seen on a shared machine); the error must name the process, and the device must be
// usable again once it exits.
func TestOpenExclusiveNamesTheHolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: attaches a loop device and mounts it")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		t.Fatalf("losetup: %v", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	if out, err := exec.Command("mkfs.ext4", "-q", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, 0) })

	// A process with its own copy of the mounts, as unshare -m or ip netns exec make.
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	pid := holder.Process.Pid
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.Contains(string(b), mnt) && strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unshared process never showed the mount")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatalf("unmount: %v", err)
	}

	old := busyWait
	busyWait = 300 * time.Millisecond
	t.Cleanup(func() { busyWait = old })
	f, err := openExclusive(context.Background(), dev)
	if err == nil {
		f.Close()
		t.Fatalf("opened %s exclusively while another namespace holds its mount", dev)
	}
	if want := "pid " + strconv.Itoa(pid) + " (sleep)"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), mnt) {
		t.Errorf("error %q does not name %q and %s", err, want, mnt)
	}

	holder.Process.Kill()
	holder.Wait()
	busyWait = 10 * time.Second
	f, err = openExclusive(context.Background(), dev)
	if err != nil {
		t.Fatalf("after the holder exited: %v", err)
	}
	f.Close()
}
