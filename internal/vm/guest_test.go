package vm

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// guestPrereqs skips the test unless it can boot a guest: root (the kernel in /boot is readable
// by root only), QEMU, busybox, a kernel with its modules.
func guestPrereqs(t *testing.T) (kernel string) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a QEMU guest (about a minute under TCG); skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: Debian's /boot/vmlinuz-* are readable by root only")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 not installed (scripts/setup-vm-debian.sh installs it)")
	}
	if _, err := lookSbin("busybox"); err != nil {
		t.Skip("busybox not installed (scripts/setup-vm-debian.sh installs busybox-static)")
	}
	k, err := DefaultKernel()
	if err != nil {
		t.Skipf("no guest kernel: %v", err)
	}
	return k
}

// buildFsbench builds the fsbench binary the guest runs: the test binary is not fsbench.
func buildFsbench(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH: cannot build the fsbench binary for the guest")
	}
	out := filepath.Join(t.TempDir(), "fsbench")
	cmd := exec.Command(goTool, "build", "-o", out, "github.com/fsbench/fsbench/cmd/fsbench")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build fsbench: %v\n%s", err, b)
	}
	return out
}

// processGone reports whether no process with this pid exists any more (a zombie would still
// answer signal 0, but Wait reaps QEMU).
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

// TestGuestShell boots the guest with a shell command that checks what fsbench relies on:
// the card, modprobe through the staged indices (f2fs: this host's kernel has none), and the
// results share.
func TestGuestShell(t *testing.T) {
	kernel := guestPrereqs(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "card.img")
	if err := CreateImage(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Kernel: kernel, Image: img, OutDir: out, Accel: AccelTCG, Binary: "/bin/busybox",
		Timeout: 2 * time.Minute,
		Shell: `set -e; uname -r > guest-release; cat /sys/block/mmcblk0/size > card-sectors
modprobe f2fs; grep -w f2fs /proc/filesystems > f2fs-line
modprobe vfat; /usr/sbin/mkfs.vfat /dev/mmcblk0 >/dev/null; mkdir /mnt/v; /usr/bin/mount -t vfat /dev/mmcblk0 /mnt/v; echo hi > /mnt/v/x; /usr/bin/umount /mnt/v; echo ok > vfat`,
	})
	if err != nil {
		t.Fatalf("Run: %v\nconsole:\n%s", err, tail(res.ConsoleLog, 40))
	}
	rel, _ := KernelRelease(kernel)
	for file, want := range map[string]string{
		"guest-release": rel,
		"card-sectors":  "131072", // 64 MiB in 512-byte sectors
		"f2fs-line":     "f2fs",
		"vfat":          "ok",
	} {
		b, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Errorf("%s did not come back from the guest: %v", file, err)
			continue
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s = %q, want it to contain %q", file, b, want)
		}
	}
	if res.Accel != AccelTCG || res.ExitStatus != 0 || res.BootSeconds <= 0 {
		t.Errorf("result %+v: want tcg, exit status 0, a boot time", res)
	}
	if !processGone(res.PID) {
		t.Errorf("QEMU (pid %d) still runs after Run returned", res.PID)
	}
}

// TestGuestFsbench runs fsbench itself in the guest on the emulated SD card, for f2fs, which this
// host's kernel lacks, and checks the results.json that comes back. The dataset is 4 MiB (5
// copies): f2fs on a 128 MiB card keeps too much in reserve for the default size/12.
func TestGuestFsbench(t *testing.T) {
	kernel := guestPrereqs(t)
	bin := buildFsbench(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "card.img")
	if err := CreateImage(img, 128<<20); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	resDir := filepath.Join(out, "results")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Kernel: kernel, Image: img, OutDir: out, Binary: bin, Timeout: 3 * time.Minute,
		Args: []string{"run", "--target", "device:/dev/mmcblk0", "--destroy", "/dev/mmcblk0",
			"--size", "128M", "--dataset-size", "4M", "-n", "1", "--variants", "f2fs",
			"--tests", "mkfs,module_load,mount,write,read", "-o", resDir},
	})
	t.Logf("boot %.1f s, run %.1f s, total %.1f s, accel %s (%s)", res.BootSeconds, res.RunSeconds, res.TotalSeconds, res.Accel, res.AccelNote)
	if err != nil {
		t.Fatalf("Run: %v\nconsole:\n%s", err, tail(res.ConsoleLog, 40))
	}
	b, err := os.ReadFile(filepath.Join(resDir, "results.json"))
	if err != nil {
		t.Fatalf("results.json did not come back: %v", err)
	}
	var doc struct {
		Machine  struct{ Kernel string }
		Target   struct{ Kind, Device string }
		Variants []struct{ Name, Status, Reason string }
		// Measurements are per variant, test and repetition.
		Measurements []struct {
			Variant, Test, Status, Error, Note string
			WallSeconds                        float64 `json:"wall_s"`
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	rel, _ := KernelRelease(kernel)
	if doc.Machine.Kernel != rel {
		t.Errorf("results.json machine.kernel = %q, want the guest's %q", doc.Machine.Kernel, rel)
	}
	if doc.Target.Kind != "device" || doc.Target.Device != "/dev/mmcblk0" {
		t.Errorf("target = %+v, want the device /dev/mmcblk0", doc.Target)
	}
	if len(doc.Variants) != 1 || doc.Variants[0].Name != "f2fs" {
		t.Fatalf("results.json has variants %+v, want f2fs", doc.Variants)
	}
	for _, v := range doc.Variants {
		if !strings.EqualFold(v.Status, "ok") {
			t.Errorf("variant %s: status %q (%s), want it run", v.Name, v.Status, v.Reason)
		}
	}
	timed := map[string]float64{}
	loaded := map[string]string{}
	for _, m := range doc.Measurements {
		if !strings.EqualFold(m.Status, "ok") {
			t.Errorf("%s %s: status %s: %s", m.Variant, m.Test, m.Status, m.Error)
		}
		timed[m.Variant+" "+m.Test] = m.WallSeconds
		if m.Test == "module_load" {
			loaded[m.Variant] = m.Note
		}
	}
	for _, v := range []string{"f2fs"} {
		for _, test := range []string{"mkfs", "mount", "write", "read"} {
			if timed[v+" "+test] <= 0 {
				t.Errorf("%s %s: no time recorded (%v)", v, test, timed)
			}
		}
	}
	// f2fs is a module the guest loads for the first time: module_load must time a modprobe.
	if !strings.Contains(loaded["f2fs"], "modprobe") || timed["f2fs module_load"] <= 0 {
		t.Errorf("f2fs module_load: note %q, %v s; want a timed modprobe", loaded["f2fs"], timed["f2fs module_load"])
	}
	if !processGone(res.PID) {
		t.Errorf("QEMU (pid %d) still runs after Run returned", res.PID)
	}
	if fi, err := os.Stat(filepath.Join(out, "console.log")); err != nil || fi.Size() == 0 {
		t.Errorf("console log not kept in OutDir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "vm.json")); err != nil {
		t.Errorf("vm.json not written: %v", err)
	}
}
