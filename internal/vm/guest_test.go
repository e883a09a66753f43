package vm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/emulock"
	"github.com/fsbench/fsbench/internal/testkit/slow"
)

// guestPrereqs skips the test unless it can boot a guest: root (the kernel in /boot is readable
// by root only), QEMU, busybox, a kernel with its modules.
func guestPrereqs(t *testing.T) (kernel string) {
	t.Helper()
	slow.Need(t, "boots the QEMU guest")
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
	emulock.Hold(t)
	return k
}

// card makes a test's directory and a card image of size bytes in it.
func card(t *testing.T, size uint64) (dir, img string) {
	t.Helper()
	dir = t.TempDir()
	img = filepath.Join(dir, "card.img")
	if err := CreateImage(img, size); err != nil {
		t.Fatal(err)
	}
	return dir, img
}

// processGone reports whether no process with this pid exists any more (a zombie would still
// answer signal 0, but Wait reaps QEMU).
func processGone(pid int) bool {
	err := syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

// TestGuestShell boots the guest with a shell command that checks what fsbench relies on:
// the card, modprobe through the staged indices (f2fs: this host's kernel has none), mount(8)
// finding its helpers (mount.nilfs2 starts nilfs_cleanerd, umount.nilfs2 stops it), and the
// results share. nilfs2's segments are 1 MiB (-B 256): with the default 8 MiB, mkfs.nilfs2 wants
// more than 128 MiB.
func TestGuestShell(t *testing.T) {
	kernel := guestPrereqs(t)
	dir, img := card(t, 64<<20)
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Kernel: kernel, Image: img, OutDir: out, Accel: AccelTCG, Binary: "/bin/busybox",
		Timeout: 2 * time.Minute,
		Shell: `set -e; uname -r > guest-release; cat /sys/block/mmcblk0/size > card-sectors
modprobe f2fs; grep -w f2fs /proc/filesystems > f2fs-line
modprobe vfat; /usr/sbin/mkfs.vfat /dev/mmcblk0 >/dev/null; mkdir /mnt/v; /usr/bin/mount -t vfat /dev/mmcblk0 /mnt/v; echo hi > /mnt/v/x; /usr/bin/umount /mnt/v; echo ok > vfat
modprobe nilfs2; /usr/sbin/mkfs.nilfs2 -f -q -B 256 /dev/mmcblk0; mkdir /mnt/n; /usr/bin/mount -t nilfs2 -o pp=0 /dev/mmcblk0 /mnt/n
ps > ps-mounted; /usr/bin/umount /mnt/n; ps > ps-unmounted`,
	})
	if err != nil {
		t.Fatalf("Run: %v\nconsole:\n%s", err, tail(res.ConsoleLog, 40))
	}
	rel, _ := KernelRelease(kernel)
	for file, want := range map[string]string{
		"guest-release": rel,
		"card-sectors":  "131072", // 64 MiB in 512-byte sectors
		"ps-mounted":    "nilfs_cleanerd -p 0 /dev/mmcblk0 /mnt/n",
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
	if b, err := os.ReadFile(filepath.Join(out, "ps-unmounted")); err != nil || strings.Contains(string(b), "nilfs_cleanerd") {
		t.Errorf("nilfs_cleanerd still runs after umount (%v):\n%s", err, b)
	}
	if res.Accel != AccelTCG || res.ExitStatus != 0 || res.BootSeconds <= 0 {
		t.Errorf("result %+v: want tcg, exit status 0, a boot time", res)
	}
	if !processGone(res.PID) {
		t.Errorf("QEMU (pid %d) still runs after Run returned", res.PID)
	}
}

// TestGuestInterrupted cancels a guest mid-command (as Ctrl-C does): Run must kill QEMU, say
// that it was interrupted, and leave no QEMU process.
func TestGuestInterrupted(t *testing.T) {
	kernel := guestPrereqs(t)
	dir, img := card(t, 64<<20)
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := Start(ctx, Options{Kernel: kernel, Image: img, OutDir: out, Accel: AccelTCG, Binary: "/bin/busybox",
		Timeout: 2 * time.Minute, Shell: "echo running > started; sleep 600"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop()
	// Wait until the command runs in the guest, then interrupt.
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(out, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the guest's command did not start within 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	res, err := g.Wait()
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("Wait after cancel: %v, want an error saying it was interrupted", err)
	}
	if res.TimedOut || res.ExitStatus != -1 {
		t.Errorf("result %+v: want no exit status and no timeout", res)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("QEMU took %v to go after the interrupt", d)
	}
	if !processGone(res.PID) {
		t.Errorf("QEMU (pid %d) still runs after an interrupt", res.PID)
	}
}

// buildTest cross-builds the test binary of package pkg (static) for goarch into dir.
func buildTest(t *testing.T, pkg, goarch, out string) {
	t.Helper()
	cmd := exec.Command("go", "test", "-c", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the tests of %s: %v\n%s", pkg, err, b)
	}
}

// TestGuestConfined runs the jail's own tests (package confine: every way out onto a decoy loop
// device, the capabilities, the system call filter, the mounts, a daemon's jail) and the words
// of issue 25 through the real mkfs tools in the jail (package fs, TestConfinedIssueWords,
// f2fs's `-fc/dev/X` among them) inside the guest, with what this host's kernel cannot mount:
// nilfs2 with its cleaner in a jail (TestNilfs2Jailed) and the mount words' property test for
// f2fs, vfat and nilfs2 (TestConfinedMountWords). fsbench there is the same binary, and the
// tools run confined there too, on the guest's kernel and busybox userland.
func TestGuestConfined(t *testing.T) {
	kernel := guestPrereqs(t)
	dir, img := card(t, 64<<20)
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	buildTest(t, "github.com/fsbench/fsbench/internal/confine", "amd64", filepath.Join(out, "confine.test"))
	buildTest(t, "github.com/fsbench/fsbench/internal/fs", "amd64", filepath.Join(out, "fs.test"))
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Kernel: kernel, Image: img, OutDir: out, Accel: AccelTCG, Binary: "/bin/busybox",
		Timeout: 11 * time.Minute, ExtraTools: []string{"losetup"},
		// ext4 needs crc32c loaded first (the kernel resolves its alias only once a provider
		// is); TestMount mounts ext4.
		Shell: `for m in loop crc32c_generic ext4; do modprobe $m; done
./confine.test -test.v -test.count=1 -test.run 'TestEscapes|TestPrivileges|TestNoOtherMounts|TestFilter|TestMount|TestStartDaemon' > confine.log 2>&1; echo $? > confine.rc
for m in f2fs vfat nilfs2; do modprobe $m; done
FSBENCH_CONFINE_MOUNT_FS=f2fs,vfat,nilfs2 ./fs.test -test.v -test.count=1 -test.run 'TestConfinedIssueWords|TestNilfs2Jailed|TestConfinedMountWords' > fs.log 2>&1; echo $? > fs.rc`,
	})
	if err != nil {
		t.Fatalf("Run: %v\nconsole:\n%s", err, tail(res.ConsoleLog, 40))
	}
	for _, name := range []string{"confine", "fs"} {
		log, _ := os.ReadFile(filepath.Join(out, name+".log"))
		t.Logf("the %s tests in the guest:\n%s", name, log)
		rc, err := os.ReadFile(filepath.Join(out, name+".rc"))
		if err != nil || strings.TrimSpace(string(rc)) != "0" {
			t.Errorf("the %s tests in the guest: exit status %q (%v)", name, rc, err)
		}
		// A test that skipped proves nothing: each must have run.
		if strings.Contains(string(log), "--- SKIP") || !strings.Contains(string(log), "--- PASS") {
			t.Errorf("the %s tests in the guest skipped or did not run", name)
		}
	}
}

// TestGuestPartitions runs fsbench in the guest with --target device: on the second partition
// of its card, as on a real card's partition: /proc/diskstats counts that partition's I/O on
// the whole card too, which the sentinel must see as the run's own (no test busy on an idle
// guest), while dd writing to the first partition beside it is other I/O on the same card
// (tests busy). The guest mounts no cgroup2 itself: fsbench mounts it for its run.
func TestGuestPartitions(t *testing.T) {
	kernel := guestPrereqs(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "fsbench")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/fsbench/fsbench/cmd/fsbench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building fsbench: %v\n%s", err, out)
	}
	img := filepath.Join(dir, "card.img")
	if err := CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	if _, _, err := blockdev.WriteMBR(img, 2); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	reps := "2"
	if slow.Reduced(t, "one repetition per run, not two") {
		reps = "1"
	}
	run := guestFsbench + " run --target device:/dev/mmcblk0p2 --destroy /dev/mmcblk0p2 -n " + reps + " --dataset-size 4M --video-size 4M"
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, Options{
		Kernel: kernel, Image: img, OutDir: out, Accel: AccelTCG, Binary: bin, Timeout: 40 * time.Minute,
		Shell: `set -e; ls /sys/block/mmcblk0 > parts
` + run + ` --variants ext4 --tests mkfs,mount,write,read -o ` + out + `/idle > idle.log 2>&1
(while :; do /bin/busybox dd if=/dev/zero of=/dev/mmcblk0p1 bs=1M count=32 conv=fsync 2>/dev/null; done) &
dd=$!
` + run + ` --variants ext4 --tests write,read -o ` + out + `/dd > dd.log 2>&1
kill $dd`,
	})
	t.Logf("guest ran in %s", time.Since(start).Round(time.Second))
	if err != nil {
		idle, _ := os.ReadFile(filepath.Join(out, "idle.log"))
		dd, _ := os.ReadFile(filepath.Join(out, "dd.log"))
		t.Fatalf("Run: %v\nidle run:\n%s\ndd run:\n%s\nconsole:\n%s", err, idle, dd, tail(res.ConsoleLog, 40))
	}
	if b, _ := os.ReadFile(filepath.Join(out, "parts")); !strings.Contains(string(b), "mmcblk0p2") {
		t.Fatalf("the guest's kernel shows no partitions of its card: %q", b)
	}
	load := func(name string) (busy, timed int, why []string) {
		r, err := results.Load(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if r.Sentinel == nil || !slices.Contains(r.Sentinel.OwnIO, "mmcblk0p2 on mmcblk0 (request for request)") || r.Sentinel.Cgroup == "" {
			t.Errorf("%s run: sentinel %+v, want the partition's I/O on the card counted as the run's, and a cgroup", name, r.Sentinel)
		}
		for _, m := range r.Measurements {
			if m.Noise == nil || m.Warmup {
				continue
			}
			timed++
			if m.Noise.Busy {
				busy++
				why = append(why, m.Variant+" "+m.Test+": "+m.Noise.Why)
			}
		}
		t.Logf("%s run: busy %d of %d timed tests (sentinel %+v)\n%s", name, busy, timed, *r.Sentinel, strings.Join(why, "\n"))
		return busy, timed, why
	}
	if busy, timed, why := load("idle"); timed == 0 || busy > 0 {
		t.Errorf("on an idle guest %d of %d timed tests were marked busy:\n%s", busy, timed, strings.Join(why, "\n"))
	}
	if busy, timed, why := load("dd"); busy < timed/2 || !strings.Contains(strings.Join(why, "\n"), "other disks") {
		t.Errorf("with dd writing to the card's first partition, %d of %d timed tests were marked busy, want most, by the card's other I/O", busy, timed)
	}
}

// TestGuestStalled leaves the guest with nothing to do (its command sleeps): the stall watch
// must see QEMU idle, read the vCPU's state through the monitor, get the kernel's task stacks
// through the emulated keyboard (SysRq w and t on the console), and kill the guest with an
// error that says it stalled, long before the timeout.
func TestGuestStalled(t *testing.T) {
	kernel := guestPrereqs(t)
	dir, img := card(t, 64<<20)
	out := filepath.Join(dir, "out")
	defer func(p time.Duration) { stallPoll = p }(stallPoll)
	stallPoll = 5 * time.Second
	start := time.Now()
	res, err := Run(context.Background(), Options{Kernel: kernel, Image: img, OutDir: out, Accel: AccelTCG, Binary: "/bin/busybox",
		Timeout: 10 * time.Minute, Stall: 30 * time.Second, Shell: "sleep 900"})
	if !errors.Is(err, ErrStalled) || res.Stalled == "" || res.TimedOut {
		t.Fatalf("Run of a guest that sleeps: %v (stalled %q, timed out %v), want ErrStalled\nconsole:\n%s", err, res.Stalled, res.TimedOut, tail(res.ConsoleLog, 40))
	}
	if d := time.Since(start); d > 5*time.Minute {
		t.Errorf("the stall took %v to be reported", d)
	}
	b, _ := os.ReadFile(res.ConsoleLog)
	for _, want := range []string{"monitor: RIP=", "HLT=1", "sysrq: Show Blocked State", "sysrq: Show State", "task:sleep", "the guest stalled"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("console log lacks %q:\n%s", want, tail(res.ConsoleLog, 60))
		}
	}
	if !processGone(res.PID) {
		t.Errorf("QEMU (pid %d) still runs after the stall", res.PID)
	}
}

// TestGuestShareMknod asks root in the guest to make device nodes, a set-uid file and a symbolic
// link in its shared results directory: on the host there must be no node, no set-uid bit and no
// link, only plain files (the guest, through the share's mapping, believes it made them: its own
// listing says so, which shows that it tried).
func TestGuestShareMknod(t *testing.T) {
	kernel := guestPrereqs(t)
	dir, img := card(t, 64<<20)
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{
		Kernel: kernel, Image: img, OutDir: out, Accel: AccelTCG, Binary: "/bin/busybox", Timeout: 2 * time.Minute,
		Shell: `mknod blocknode b 7 0; mknod charnode c 1 3; echo x > suid; chmod 4755 suid; ln -s /etc/shadow link
mkdir sub; mknod sub/node b 8 0; ls -ln blocknode charnode suid link sub/node > guest-listing 2>&1`,
	})
	if err != nil {
		t.Fatalf("Run: %v\nconsole:\n%s", err, tail(res.ConsoleLog, 40))
	}
	if res.ShareModel != "mapped-xattr" && res.ShareModel != "mapped-file" {
		t.Errorf("share model %q", res.ShareModel)
	}
	listing, _ := os.ReadFile(filepath.Join(out, "guest-listing"))
	t.Logf("the guest's view (share model %s):\n%s", res.ShareModel, listing)
	if !strings.Contains(string(listing), "brw") || !strings.Contains(string(listing), "rwsr") {
		t.Errorf("the guest did not make its node and set-uid file, so this proves nothing:\n%s", listing)
	}
	for _, name := range []string{"blocknode", "charnode", "suid", "link", "sub/node"} {
		fi, err := os.Lstat(filepath.Join(out, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !fi.Mode().IsRegular() || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s on the host is %v, want a plain regular file", name, fi.Mode())
		}
	}
}
