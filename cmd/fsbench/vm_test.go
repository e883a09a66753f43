package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/nand"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/emulock"
	"github.com/fsbench/fsbench/internal/testkit/slow"
	"github.com/fsbench/fsbench/internal/vm"
)

// End-to-end tests of --target vm through the binary: a QEMU guest (TCG here) runs the same
// fsbench on an emulated SD card and on a simulated NAND chip, and the results come back into
// the host's results directory tagged with the guest's kernel.

// needGuest skips unless a guest can be booted: root (Debian's kernels in /boot are readable by
// root only), QEMU and a kernel with its modules.
func needGuest(t *testing.T) string {
	t.Helper()
	slow.Need(t, "boots the QEMU guest")
	needRoot(t)
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("qemu-system-x86_64 not installed (scripts/setup-vm-debian.sh installs it)")
	}
	k, err := vm.DefaultKernel()
	if err != nil {
		t.Skipf("no guest kernel: %v", err)
	}
	emulock.Hold(t)
	rel, err := vm.KernelRelease(k)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// runVM runs fsbench with args and the results directory dir, and loads what came back.
func runVM(t *testing.T, dir string, timeout time.Duration, args ...string) *results.Run {
	t.Helper()
	cmd := exec.Command(binary, append(args, "-o", dir)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("fsbench %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 60))
		}
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("fsbench %s did not finish within %v\n%s", strings.Join(args, " "), timeout, tail(stderr.String(), 60))
	}
	r, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkGuestRun(t, dir, r)
	// The host prints the summary of the guest's run once; the guest, asked by a request
	// file, prints none of its own.
	if n := strings.Count(stderr.String(), "\nresults: "); n != 1 {
		t.Errorf("the output names the results %d times:\n%s", n, tail(stderr.String(), 60))
	}
	return r
}

// checkGuestRun checks what every guest run must leave: the guest's kernel named, the console
// log kept, QEMU gone, a report written.
func checkGuestRun(t *testing.T, dir string, r *results.Run) {
	t.Helper()
	if r.Guest == nil || r.Guest.KernelRelease == "" || (r.Guest.Accel != "tcg" && r.Guest.Accel != "kvm") {
		t.Errorf("guest not recorded: %+v", r.Guest)
	} else if r.Machine.Kernel != r.Guest.KernelRelease {
		t.Errorf("machine.kernel %q is not the guest's %q", r.Machine.Kernel, r.Guest.KernelRelease)
	}
	if fi, err := os.Stat(filepath.Join(dir, "console.log")); err != nil || fi.Size() == 0 {
		t.Errorf("console log not kept: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "vm.json"))
	if err != nil {
		t.Fatalf("vm.json: %v", err)
	}
	var v struct {
		PID int `json:"qemu_pid"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.PID <= 0 {
		t.Fatalf("vm.json: %v %s", err, b)
	}
	if err := syscall.Kill(v.PID, 0); err == nil {
		t.Errorf("QEMU (pid %d) still runs after fsbench exited", v.PID)
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Errorf("no report: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".vm")); err == nil {
		t.Errorf("the guest's inputs (.vm, with the card image) were left behind")
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// values maps "variant test" to the measurement of repetition 1.
func values(r *results.Run) map[string]results.Measurement {
	out := map[string]results.Measurement{}
	for _, m := range r.Measurements {
		if m.Rep == 1 {
			out[m.Variant+" "+m.Test] = m
		}
	}
	return out
}

// TestVMSDCard runs a block filesystem this host's kernel lacks (f2fs) on the guest's emulated
// SD card. The dataset is 4 MiB: f2fs keeps too much of a 128 MiB card in reserve for more.
func TestVMSDCard(t *testing.T) {
	rel := needGuest(t)
	dir := filepath.Join(t.TempDir(), "res")
	r := runVM(t, dir, 5*time.Minute, "run", "--target", "vm", "--size", "128M", "--dataset-size", "4M", "-n", "1",
		"--variants", "f2fs", "--tests", "mkfs,module_load,mount,write,read")
	if r.Guest.KernelRelease != rel || r.Target.Kind != "device" || r.Target.Device != "/dev/mmcblk0" {
		t.Errorf("kernel %s, target %+v: want %s on /dev/mmcblk0", r.Guest.KernelRelease, r.Target, rel)
	}
	if len(r.Variants) != 1 || r.Variants[0].Status != results.OK {
		t.Fatalf("variants %+v, want f2fs run", r.Variants)
	}
	got := values(r)
	for _, test := range []string{"mkfs", "module_load", "mount", "write", "read"} {
		m, ok := got["f2fs "+test]
		if !ok || m.Status != results.OK || m.Value == nil || *m.Value <= 0 {
			t.Errorf("f2fs %s: %+v", test, m)
		}
	}
	// f2fs is a module the guest loads for the first time: module_load times a modprobe.
	if m := got["f2fs module_load"]; !strings.Contains(m.Note, "modprobe") {
		t.Errorf("module_load note %q, want a timed modprobe", m.Note)
	}
	// The write reached the card: at least the dataset's bytes were written to /dev/mmcblk0,
	// and the guest traced them (tracefs) and replayed them through the card profiles.
	w := got["f2fs write"]
	if w.Device == nil || w.Device.WriteBytes < r.Dataset.Bytes {
		t.Errorf("write: device %+v, want at least the %d bytes of the dataset", w.Device, r.Dataset.Bytes)
	}
	if w.Trace == nil || w.Trace.Summary.Write.Bytes < r.Dataset.Bytes || w.Trace.Replay["sd-typical"].Flash == nil {
		t.Errorf("write: trace %+v, want the dataset's bytes traced and replayed", w.Trace)
	}
}

// TestVMSimcard puts the guest's SD card on a simulated card (vm:simcard:PROFILE): the card's
// counters for the whole guest run come back with the results. vfat on 64 MiB, modelled waits
// at 1 %: QEMU's SD card model moves 512 bytes per request, which makes this path slow.
func TestVMSimcard(t *testing.T) {
	needGuest(t)
	dir := filepath.Join(t.TempDir(), "res")
	r := runVM(t, dir, 5*time.Minute, "run", "--target", "vm:simcard:sd-typical", "--time-scale", "0.01", "--size", "64M",
		"--dataset-size", "2M", "-n", "1", "--variants", "vfat", "--tests", "mkfs,mount,write")
	if r.Target.Profile != "sd-typical" || r.Target.TimeScale != 0.01 || r.Methods["vm_simcard"] == "" ||
		r.Target.Kind != results.KindSimcard || r.Target.CardVia != results.CardBehindGuestSD || r.Target.CardProfile != "sd-typical" {
		t.Errorf("target %+v, method %q: want the card's profile, time scale, the card to rate on and how QEMU drives it", r.Target, r.Methods["vm_simcard"])
	}
	w := values(r)["vfat write"]
	if w.Status != results.OK || w.Device == nil || w.Device.WriteBytes < r.Dataset.Bytes {
		t.Fatalf("write: %+v", w)
	}
	// The card saw the whole run: at least what the guest wrote in the write test.
	if r.Card == nil || r.Card.HostBytesWritten < w.Device.WriteBytes {
		t.Fatalf("card counters %+v, want at least the %d bytes the write test wrote", r.Card, w.Device.WriteBytes)
	}
	t.Logf("card: %d writes, %d bytes (%.0f bytes per request), write amplification %.2f",
		r.Card.Writes, r.Card.HostBytesWritten, float64(r.Card.HostBytesWritten)/float64(max(r.Card.Writes, 1)), r.Card.WriteAmplification)
}

// TestVMFreeElectrons runs jffs2 and ubifs on an 8 MiB partition of the simulated NAND chip and
// checks that the 2010 study's figures are present and sane: they could not be if nandsim's
// timings were off, the image were not stored, or the wrong partition were used.
func TestVMFreeElectrons(t *testing.T) {
	needGuest(t)
	dir := filepath.Join(t.TempDir(), "res")
	r := runVM(t, dir, 5*time.Minute, "run", "--target", "vm", "--suite", "free-electrons", "--nand-sizes", "8M", "-n", "1",
		"--variants", "jffs2,ubifs")
	if r.Target.Kind != "nandsim" {
		t.Errorf("target %+v, want nandsim", r.Target)
	}
	const part = 8 << 20
	got := values(r)
	for _, base := range []string{"jffs2", "ubifs"} {
		name := base + "-8M"
		var v *results.Variant
		for i := range r.Variants {
			if r.Variants[i].Name == name {
				v = &r.Variants[i]
			}
		}
		if v == nil || v.Status != results.OK || v.Base != base || v.PartitionBytes != part {
			t.Fatalf("variant %s: %+v", name, v)
		}
		for _, test := range []string{"init_time", "init_mem", "mount_time", "mount_mem", "used_space", "read_time", "remove_time", "write_time", "video_write_time"} {
			m, ok := got[name+" "+test]
			if !ok || m.Status != results.OK || m.Value == nil {
				t.Errorf("%s %s: %+v", name, test, m)
				continue
			}
			if m.Unit == "s" && *m.Value <= 0 {
				t.Errorf("%s %s: %g s", name, test, *m.Value)
			}
		}
		// Stored compressed, the dataset takes less than its size and less than the partition;
		// but not nothing.
		if m := got[name+" used_space"]; m.Value != nil && (*m.Value < float64(r.Dataset.Bytes)/10 || *m.Value > part) {
			t.Errorf("%s used_space %g bytes for a dataset of %d bytes on %d", name, *m.Value, r.Dataset.Bytes, part)
		}
		// Incompressible data cannot be written faster than the simulated chip programs pages
		// (2 KiB per 200 µs + 2112 × 50 ns): a faster figure means the delays were off.
		t.Logf("%s: video_write %.2f MB/s, write %.2f MB/s, read %.2f MB/s", name, got[name+" video_write_time"].MBps, got[name+" write_time"].MBps, got[name+" read_time"].MBps)
		tm := nand.DefaultTimings
		pageUs := float64(tm.ProgramUs) + float64(nand.DefaultChip.PageSize+nand.DefaultChip.OOBSize)*float64(tm.InputNs)/1e3
		maxMBps := float64(nand.DefaultChip.PageSize) / pageUs
		if m := got[name+" video_write_time"]; m.MBps <= 0 || m.MBps > maxMBps {
			t.Errorf("%s video_write_time at %.2f MB/s: the chip programs at most %.2f MB/s", name, m.MBps, maxMBps)
		}
	}
	// ubifs's init_time includes ubiattach, with the bad-block reserve scaled to the partition.
	if m := got["ubifs-8M init_time"]; !strings.Contains(m.Note, "ubiattach") || m.Extra["ubi_reserved_bad_pebs"] < 1 || m.Extra["ubi_reserved_bad_pebs"] > 3 {
		t.Errorf("ubifs init_time: note %q, extra %v", m.Note, m.Extra)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"init_time", "video_write_time", "jffs2", "ubifs", r.Guest.KernelRelease} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("report.html does not mention %q", want)
		}
	}
}

// TestVMPowerCut runs the powercut suite in the guest (vm:simcard:PROFILE): the guest serves
// the simulated card itself and records, cuts, checks, mounts and verifies there, for f2fs and
// vfat, which this host's kernel lacks. Five cuts each on 128 MiB, modelled waits at 10 %: about
// two minutes under TCG on a quiet 2-core host. nilfs2 needs more than 128 MiB (see the README)
// and is left to the measured runs.
func TestVMPowerCut(t *testing.T) {
	needGuest(t)
	dir := filepath.Join(t.TempDir(), "res")
	const cuts = 5
	r := runVM(t, dir, 4*time.Minute, "run", "--suite", "powercut", "--target", "vm:simcard:sd-typical", "--time-scale", "0.1",
		"--size", "128M", "--dataset-size", "1M", "--video-size", "1M", "-n", "1", "--cuts", "5", "--variants", "f2fs,vfat")
	if r.Target.Profile != "sd-typical" || r.Target.Kind != results.KindSimcard || r.Target.CardVia != results.CardOnLoop || r.Methods["vm_simcard"] == "" {
		t.Errorf("target %+v, method %q: want the card served in the guest", r.Target, r.Methods["vm_simcard"])
	}
	for _, fs := range []string{"f2fs", "vfat"} {
		m, ok := values(r)[fs+" powercut"]
		if !ok || m.Status != results.OK || m.PowerCut == nil || m.Value == nil {
			t.Errorf("%s powercut: %+v", fs, m)
			continue
		}
		p := m.PowerCut
		if p.Cuts != cuts || p.Requests == 0 || p.Acks == 0 {
			t.Errorf("%s: %d cuts of %d requests, %d acknowledgements; want %d cuts", fs, p.Cuts, p.Requests, p.Acks, cuts)
		}
		// Every cut had its checker's verdict: fsck.f2fs and fsck.vfat are in the guest.
		if p.FsckClean.Count+p.FsckErrors != p.Cuts || p.FsckToolFailed != 0 || p.NoChecker != 0 {
			t.Errorf("%s: fsck clean %d, errors %d, tool failed %d, no checker %d of %d cuts: want a checker's verdict on each",
				fs, p.FsckClean.Count, p.FsckErrors, p.FsckToolFailed, p.NoChecker, p.Cuts)
		}
		if p.Safe.Count > p.MountWithoutRepair.Count || p.Safe.Count > p.Cuts-p.AckLossCuts.Count {
			t.Errorf("%s: %d whole, but %d mounted and %d broke a promise", fs, p.Safe.Count, p.MountWithoutRepair.Count, p.AckLossCuts.Count)
		}
		t.Logf("%s: %d cuts, whole %d, mounted %d, fsck clean %d, unrecoverable %d, promises broken %d (%.1f cuts/min)",
			fs, p.Cuts, p.Safe.Count, p.MountWithoutRepair.Count, p.FsckClean.Count, p.Unrecoverable.Count, p.AckLossCuts.Count, p.CutsPerMinute)
	}
}
