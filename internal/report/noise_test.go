package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/verdict"
)

// busyRun has two variants read 5 times each: ext4 fast but measured (in some or all
// repetitions) while another process kept a CPU busy, ext2 slower and undisturbed.
func busyRun(disturbed int) *results.Run {
	r := &results.Run{Variants: []results.Variant{{Name: "ext4", FS: "ext4", Status: results.OK}, {Name: "ext2", FS: "ext2", Status: results.OK}}}
	for rep := 1; rep <= 5; rep++ {
		ext4 := results.Measurement{Variant: "ext4", Test: "read", Rep: rep, Status: results.OK, Value: results.Float(1), Unit: "s",
			WallSeconds: 1, LogicalBytes: 200e6, Noise: &results.Noise{StealPct: 1}}
		if rep <= disturbed {
			ext4.Noise = &results.Noise{StealPct: 21, OtherCPUPct: 95, Busy: true, Why: "steal 21 %, other processes 95 % of a CPU"}
		}
		ext2 := results.Measurement{Variant: "ext2", Test: "read", Rep: rep, Status: results.OK, Value: results.Float(1.25), Unit: "s",
			WallSeconds: 1.25 + 0.01*float64(rep), LogicalBytes: 200e6, Noise: &results.Noise{}}
		r.Measurements = append(r.Measurements, ext4, ext2)
	}
	return r
}

func TestBusyMachine(t *testing.T) {
	tests := []struct {
		name      string
		disturbed int
		winner    string // of read-mostly; "" = no verdict
		note      string
	}{
		{"quiet", 0, "ext4", ""},
		{"one busy repetition is left out", 1, "ext4", "1 repetition(s) measured while the machine was busy (steal up to 21 %, other processes up to 95 % of a CPU) left out"},
		{"a variant measured only while busy is not compared", 5, "ext2", "not compared at all: ext4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := busyRun(tc.disturbed)
			v := readMostly(r)
			if v.Winner != tc.winner || !strings.Contains(v.Note, tc.note) {
				t.Errorf("winner %q note %q; want %q with %q", v.Winner, v.Note, tc.winner, tc.note)
			}
			var b bytes.Buffer
			if err := Summary(&b, r); err != nil {
				t.Fatal(err)
			}
			busy := strings.Contains(b.String(), "the machine was busy with other work during")
			if busy != (tc.disturbed > 0) || strings.Contains(b.String(), " A~") != (tc.disturbed > 0) {
				t.Errorf("the summary's note and marks for %d disturbed:\n%s", tc.disturbed, b.String())
			}
		})
	}
	// Every measurement disturbed: no verdict at all, and it says why.
	r := busyRun(5)
	for i := range r.Measurements {
		r.Measurements[i].Noise = &results.Noise{Busy: true, Why: "steal 30 %"}
	}
	if v := readMostly(r); v.Winner != "" || !strings.Contains(v.Note, "cannot conclude") || !strings.Contains(v.Note, "steal up to 30 %") {
		t.Errorf("all busy: winner %q note %q", v.Winner, v.Note)
	}
	if got := verdict.BusyText(r); !strings.Contains(got, "during 100 % of the timed tests (10 of 10): steal up to 30 %") {
		t.Errorf("BusyText = %q", got)
	}
}

func TestTargetText(t *testing.T) {
	tests := []struct {
		r    results.Run
		want string
	}{
		{results.Run{Target: results.Target{Kind: results.KindSimcard, Profile: "sd-typical", TimeScale: 0.1, DirectIO: true, SizeBytes: 256 << 20}},
			"a simulated card, profile sd-typical, its modelled waits scaled by 0.1 (times are not a real card's), on a loop device with direct I/O, 256 MiB"},
		{results.Run{Target: results.Target{Kind: results.KindSimcard, Profile: "sd-typical", TimeScale: 1, DirectIO: true, SizeBytes: 256 << 20, Scheduler: "mq-deadline"}},
			"a simulated card, profile sd-typical, on a loop device with direct I/O, 256 MiB, I/O scheduler mq-deadline"},
		{results.Run{Target: results.Target{Kind: results.KindImage, DirectIO: true, SizeBytes: 1 << 30}},
			"a loop device over a sparse image file with direct I/O, 1 GiB"},
		{results.Run{Target: results.Target{Kind: results.KindImage, DirectIO: true, SizeBytes: 1 << 30},
			Device: &results.DeviceIdentity{Queue: map[string]string{"scheduler": "[none] mq-deadline kyber bfq"}}},
			"a loop device over a sparse image file with direct I/O, 1 GiB"},
		// A loop device keeps a scheduler someone set before (seen: mq-deadline left by an
		// earlier experiment, which cut xfs's card time by 3 times).
		{results.Run{Target: results.Target{Kind: results.KindImage, DirectIO: true, SizeBytes: 1 << 30},
			Device: &results.DeviceIdentity{Queue: map[string]string{"scheduler": "none [mq-deadline] kyber bfq"}}},
			"a loop device over a sparse image file with direct I/O, 1 GiB, I/O scheduler mq-deadline (the device's own)"},
		{results.Run{Target: results.Target{Kind: results.KindDevice, Device: "/dev/mmcblk0", SizeBytes: 256 << 20},
			Remote: &results.Remote{Hostname: "bbb", Model: "TI AM335x BeagleBone Black", Arch: "arm", KernelRelease: "6.1.0"}},
			"the device /dev/mmcblk0, 256 MiB; on the board bbb (TI AM335x BeagleBone Black), arm, kernel 6.1.0, reached over SSH"},
		{results.Run{Target: results.Target{Kind: results.KindSimcard, CardVia: results.CardBehindGuestSD, Profile: "emmc", TimeScale: 1}, Guest: &results.Guest{Accel: "tcg", KernelRelease: "6.1.0-56-amd64"}},
			"a simulated card, profile emmc, behind the guest's emulated SD card (/dev/mmcblk0); in a QEMU guest (tcg), kernel 6.1.0-56-amd64: times and rates are the emulator's, not a board's"},
		{results.Run{Target: results.Target{Kind: results.KindSimcard, CardVia: results.CardOnLoop, Profile: "sd-typical", TimeScale: 1, DirectIO: true}, Guest: &results.Guest{Accel: "tcg", KernelRelease: "6.1.0-56-amd64"}},
			"a simulated card, profile sd-typical, served in the guest on a loop device with direct I/O; in a QEMU guest (tcg), kernel 6.1.0-56-amd64: times and rates are the emulator's, not a board's"},
	}
	for _, tc := range tests {
		if got := TargetText(&tc.r); got != tc.want {
			t.Errorf("TargetText:\n got  %s\n want %s", got, tc.want)
		}
	}
}

// A run that skipped filesystems this kernel lacks offers the guest, with the time it takes.
func TestGuestHint(t *testing.T) {
	r := &results.Run{Variants: []results.Variant{
		{Name: "ext4", Status: results.OK},
		{Name: "f2fs", Status: results.Skipped, Reason: "this kernel has no f2fs; fsbench run --target vm runs it in a guest kernel"},
		{Name: "vfat", Status: results.Skipped, Reason: "this kernel has no vfat; fsbench run --target vm runs it in a guest kernel"},
	}}
	r.Started = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	r.Finished = r.Started.Add(6 * time.Minute)
	got := GuestHint(r)
	for _, want := range []string{"to compare f2fs, vfat with the others in one verdict", "fsbench run --target vm", "about 9 times this run's 6m0s (about 54m0s)"} {
		if !strings.Contains(got, want) {
			t.Errorf("GuestHint = %q, lacks %q", got, want)
		}
	}
	r.Guest = &results.Guest{}
	if GuestHint(r) != "" {
		t.Error("a guest run offers the guest")
	}
}

// readMostly is the read-mostly verdict of r.
func readMostly(r *results.Run) verdict.Verdict {
	for _, v := range verdict.Verdicts(r, 0) {
		if v.Priority == "read-mostly rootfs" {
			return v
		}
	}
	return verdict.Verdict{}
}
