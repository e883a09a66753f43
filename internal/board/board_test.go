package board_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/board"
	"github.com/fsbench/fsbench/internal/cli"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/emulock"
	"github.com/fsbench/fsbench/internal/testkit/slow"
)

// bootArm64 boots the emulated arm64 board once for this package's tests (TCG boots take
// 8-45 s, the first build of the image a minute more) and cross-builds the fsbench it runs.
// It skips without root, QEMU, apt or ssh. partitions, when not 0, splits its card.
func bootArm64(t *testing.T, partitions int) (*board.State, string) {
	t.Helper()
	slow.Need(t, "boots an emulated board")
	if os.Geteuid() != 0 {
		t.Skip("needs root: the board's SD card is formatted and mounted by fsbench on the board, and the cache is in /var/cache")
	}
	for _, p := range []string{"qemu-system-aarch64", "ssh", "ssh-keygen", "apt-get", "dpkg", "depmod"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s not found (scripts/setup-board-debian.sh installs it)", p)
			}
		}
	}
	arch, err := board.LookupArch("arm64")
	if err != nil {
		t.Fatal(err)
	}
	emulock.Hold(t)
	bin := filepath.Join(t.TempDir(), "fsbench-linux-arm64")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/fsbench/fsbench/cmd/fsbench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cross-building fsbench for arm64: %v\n%s", err, out)
	}
	start := time.Now()
	// A state directory of its own: `fsbench cleanup` run by other tests meanwhile ends only
	// the boards of the default state directory.
	s, err := board.Up(context.Background(), board.Options{Arch: arch, StateDir: t.TempDir(), CardSize: 256 << 20, Partitions: partitions, Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := board.Down(s.File()); err != nil {
			t.Errorf("board down: %v", err)
		}
		if s.Alive() {
			t.Errorf("QEMU pid %d still runs after board down", s.PID)
		}
	})
	t.Logf("arm64 board up in %s (SSH answered after %.1f s)", time.Since(start).Round(time.Second), s.BootSeconds)
	return s, bin
}

// boardShell runs a shell command on the board over a new SSH session.
func boardShell(s *board.State, cmd string) (string, error) {
	out, err := exec.Command("ssh", append(s.SSHArgs(), cmd)...).CombinedOutput()
	return string(out), err
}

// runArgs is the fsbench run command line for the board.
func runArgs(s *board.State, bin, out string, extra ...string) []string {
	return runOn(s, board.Device, bin, out, extra...)
}

// runOn is the fsbench run command line for device dev of the board.
func runOn(s *board.State, dev, bin, out string, extra ...string) []string {
	target := strings.TrimSuffix(s.Target(), board.Device) + dev
	a := []string{"run", "--target", target, "--destroy", dev, "--remote-binary", bin, "-o", out}
	for _, o := range s.SSHOptions() {
		a = append(a, "--ssh-option", o)
	}
	return append(a, extra...)
}

// TestBoardRemote runs the remote path against the emulated arm64 board: a small run whose
// results and report land on the host, then a run whose SSH client is killed mid-test, after
// which the board must hold no mount, no fsbench process and no loop device.
func TestBoardRemote(t *testing.T) {
	s, bin := bootArm64(t, 0)

	t.Run("run", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "res")
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := cli.Main(context.Background(), runArgs(s, bin, out, "--variants", "ext4", "--tests", "mkfs,mount,write,read", "-n", "1", "--dataset-size", "4M", "--video-size", "4M"),
			cli.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
		t.Logf("remote run: exit %d in %s", code, time.Since(start).Round(time.Second))
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
		}
		r, err := results.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if r.Machine.Arch != "arm64" {
			t.Errorf("machine.arch = %q, want arm64", r.Machine.Arch)
		}
		if r.Remote == nil {
			t.Fatalf("results.json has no remote section")
		}
		if r.Remote.Hostname != "fsbench-arm64" || r.Remote.Arch != "arm64" || !strings.Contains(r.Remote.Target, "127.0.0.1:"+strconv.Itoa(s.Port)) {
			t.Errorf("remote = %+v", *r.Remote)
		}
		if len(r.Measurements) == 0 {
			t.Errorf("no measurements")
		}
		// The board's fsbench ran its mkfs in the jail and mounted through it (fsopen), on the
		// board's own kernel.
		if c := r.Methods["confinement"]; !strings.HasPrefix(c, "mkfs, fsck, image builders and every other program pointed at a device ran confined") || !strings.Contains(c, "mounts were made in such a jail") {
			t.Errorf("methods.confinement on the board = %q, want the tools and mounts confined", c)
		}
		// The board's SD card (QEMU's sd-card: hw/sd/sd.c sets its CID) was identified from the
		// board's sysfs, and checked for holding what it announces, before the run.
		if c := r.CardCheck; c == nil || c.Before == nil || c.Before.CID == nil || c.Before.Kind != "SD" ||
			c.Before.CID.ManufacturerID != 0xaa || c.Before.CID.OEMID != "XY" || c.Before.CID.ProductName != "QEMU!" ||
			c.Before.CSD == nil || c.Before.CSD.CapacityBytes != c.Before.SizeBytes || c.Capacity == nil || c.Capacity.Verdict != "genuine" {
			t.Errorf("the board's card check: %+v", r.CardCheck)
		} else {
			t.Logf("the board's card: %s, read from %s; capacity check: %s in %.1f s (%d bytes written, put back)",
				c.Before.Describe(), c.Before.Source, c.Capacity.Verdict, c.Capacity.Seconds, c.Capacity.BytesWritten)
		}
		if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
			t.Errorf("no report on the host: %v\n%s", err, stdout.String())
		}
		// A completed run leaves nothing on the board but the binary.
		if o, err := boardShell(s, "ls /var/tmp/fsbench/runs 2>/dev/null | wc -l"); err != nil || strings.TrimSpace(o) != "0" {
			t.Errorf("runs left on the board: %q, %v", o, err)
		}
	})

	// The jail's own tests (package confine) on the board: every way out onto a decoy loop
	// device, the capabilities, the arm64 system call filter, the mounts, with the board's
	// busybox userland.
	t.Run("jail", func(t *testing.T) {
		test := filepath.Join(t.TempDir(), "confine.test")
		build := exec.Command("go", "test", "-c", "-trimpath", "-o", test, "github.com/fsbench/fsbench/internal/confine")
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("cross-building the confine tests for arm64: %v\n%s", err, out)
		}
		f, err := os.Open(test)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		put := exec.Command("ssh", append(s.SSHArgs(), "mkdir -p /var/tmp/jail && cat > /var/tmp/jail/confine.test && chmod +x /var/tmp/jail/confine.test")...)
		put.Stdin = f
		if out, err := put.CombinedOutput(); err != nil {
			t.Fatalf("copying the tests to the board: %v\n%s", err, out)
		}
		out, err := boardShell(s, "modprobe ext4; cd /var/tmp/jail && TMPDIR=/var/tmp/jail ./confine.test -test.v -test.count=1 -test.run 'TestEscapes|TestPrivileges|TestNoOtherMounts|TestFilter|TestMount|TestStartDaemon'; rc=$?; cd / && rm -rf /var/tmp/jail; exit $rc")
		t.Logf("the confine tests on the board:\n%s", out)
		if err != nil {
			t.Errorf("the confine tests failed on the board: %v", err)
		}
		if strings.Contains(out, "--- SKIP") || !strings.Contains(out, "--- PASS: TestEscapes") {
			t.Errorf("the confine tests skipped or did not run on the board")
		}
		if o, _ := boardShell(s, "losetup -a | wc -l"); strings.TrimSpace(o) != "0" {
			t.Errorf("loop devices left on the board: %s", o)
		}
	})

	t.Run("dropped-link", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "res")
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		defer cancel()
		done := make(chan int, 1)
		var stderr bytes.Buffer
		go func() {
			done <- cli.Main(ctx, runArgs(s, bin, out, "--variants", "ext4", "-n", "3", "--dataset-size", "4M", "--video-size", "4M"),
				cli.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr})
		}()
		// Wait until the board has its card mounted: the worst moment for the link to drop.
		deadline := time.Now().Add(4 * time.Minute)
		for {
			if o, _ := boardShell(s, "grep -c '^/dev/mmcblk0 ' /proc/mounts"); strings.TrimSpace(o) != "0" && strings.TrimSpace(o) != "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the board never mounted its card; host log:\n%s", stderr.String())
			}
			time.Sleep(time.Second)
		}
		pid := sshClientOf(t, os.Getpid(), "--stop-on-stdin-eof")
		t.Logf("the card is mounted on the board: killing the host's ssh client (pid %d)", pid)
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		code := <-done
		if code == 0 {
			t.Errorf("the run succeeded although its link was cut")
		}
		// The board notices the end of its input and stops in order; a mkfs or sync in
		// progress finishes first.
		var state string
		for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(2 * time.Second) {
			o, err := boardShell(s, "ps -o args | grep -c '[f]sbench-.* run'; grep -c mmcblk0 /proc/mounts; losetup -a | wc -l")
			state = strings.Join(strings.Fields(o), " ")
			if err == nil && state == "0 0 0" {
				t.Logf("board clean after the drop (exit %d on the host)", code)
				return
			}
		}
		t.Errorf("board not clean 3 min after the drop: fsbench processes, mounts, loop devices = %s", state)
	})
}

// sshClientOf finds the ssh client child of pid whose command line holds marker.
func sshClientOf(t *testing.T, pid int, marker string) int {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		procs, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			if len(f) < 2 || f[1] != strconv.Itoa(pid) {
				continue
			}
			cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			if bytes.Contains(cmd, []byte(marker)) && bytes.HasPrefix(cmd, []byte("ssh\x00")) {
				n, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				return n
			}
		}
	}
	t.Fatalf("no ssh client of pid %d running %q", pid, marker)
	return 0
}

// TestBoardPartitions runs fsbench on the second partition of the board's card, as a user runs
// it on a card's partition. /proc/diskstats counts that partition's I/O on the whole card too:
// on an idle board the sentinel must see it as the run's own and mark no test busy, while dd
// writing to the first partition beside the run is another program's I/O on the same card and
// marks the tests busy. The idle run also proves the cold boot: ext4 and btrfs are modules of
// the board's kernel, unloaded after each repetition, so that every repetition times the load.
func TestBoardPartitions(t *testing.T) {
	s, bin := bootArm64(t, 2)
	const p1, p2 = "/dev/mmcblk0p1", "/dev/mmcblk0p2"
	if o, err := boardShell(s, "ls /sys/block/mmcblk0; cat /proc/self/cgroup; ls /sys/fs/cgroup 2>&1 | head -3; cat /proc/pressure/memory"); err != nil {
		t.Fatalf("board: %v\n%s", err, o)
	} else if !strings.Contains(o, "mmcblk0p2") {
		t.Fatalf("the board's kernel shows no partitions of its card:\n%s", o)
	} else {
		t.Logf("the board's card, cgroups and pressure:\n%s", o)
	}
	run := func(t *testing.T, extra ...string) *results.Run {
		t.Helper()
		out := filepath.Join(t.TempDir(), "res")
		var stdout, stderr bytes.Buffer
		start := time.Now()
		args := runOn(s, p2, bin, out, append([]string{"-n", "2", "--dataset-size", "4M", "--video-size", "4M"}, extra...)...)
		code := cli.Main(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
		t.Logf("run on %s: exit %d in %s", p2, code, time.Since(start).Round(time.Second))
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
		}
		r, err := results.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if r.Sentinel == nil || !slices.Contains(r.Sentinel.OwnIO, "mmcblk0p2 on mmcblk0 (request for request)") || r.Sentinel.Cgroup == "" {
			t.Errorf("sentinel %+v: want the partition's I/O on the card counted as the run's, and a cgroup (the board mounts no cgroup2: fsbench mounts it)", r.Sentinel)
		}
		return r
	}
	busy := func(r *results.Run) (n, of int, why []string) {
		for _, m := range r.Measurements {
			if m.Noise == nil || m.Warmup {
				continue
			}
			of++
			if m.Noise.Busy {
				n++
				why = append(why, m.Variant+" "+m.Test+": "+m.Noise.Why)
			}
		}
		return n, of, why
	}

	t.Run("idle", func(t *testing.T) {
		r := run(t, "--variants", "ext4,btrfs", "--tests", "mkfs,module_load,mount,write,read")
		n, of, why := busy(r)
		t.Logf("busy %d of %d timed tests; sentinel %+v", n, of, *r.Sentinel)
		if of == 0 || n > 0 {
			t.Errorf("on an idle board %d of %d timed tests were marked busy:\n%s", n, of, strings.Join(why, "\n"))
		}
		loads := map[string]int{}
		for _, m := range r.Measurements {
			if m.Test != "module_load" || m.Warmup {
				continue
			}
			if m.Status != results.OK || m.Value == nil || *m.Value <= 0 {
				t.Errorf("%s repetition %d: module_load %s (%s): every repetition should load the module", m.Variant, m.Rep, m.Status, m.Note)
				continue
			}
			loads[m.Variant]++
			t.Logf("%s repetition %d: %s in %.3f s", m.Variant, m.Rep, m.Note, *m.Value)
		}
		if loads["ext4"] != 2 || loads["btrfs"] != 2 {
			t.Errorf("module loads timed per variant: %v, want 2 each", loads)
		}
	})

	if slow.Reduced(t, "no run with dd writing beside it on the card's other partition (vm.TestGuestPartitions makes that check in the QEMU guest)") {
		return
	}
	t.Run("dd beside", func(t *testing.T) {
		o, err := boardShell(s, "(while :; do dd if=/dev/zero of="+p1+" bs=1M count=32 conv=fsync 2>/dev/null; done) >/dev/null 2>&1 & echo $!")
		pid := strings.TrimSpace(o)
		if err != nil || pid == "" {
			t.Fatalf("starting dd on %s: %v %s", p1, err, o)
		}
		defer boardShell(s, "kill "+pid)
		r := run(t, "--variants", "ext4", "--tests", "write,read")
		n, of, why := busy(r)
		t.Logf("busy %d of %d timed tests:\n%s", n, of, strings.Join(why, "\n"))
		if n < of/2 || !strings.Contains(strings.Join(why, "\n"), "other disks") || !strings.Contains(strings.Join(why, "\n"), "mmcblk0") {
			t.Errorf("with dd writing to %s, %d of %d timed tests were marked busy, want most, by the card's other I/O", p1, n, of)
		}
	})
}
