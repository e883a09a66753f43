package probe

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/session"
	simkind "github.com/fsbench/fsbench/internal/targets/simcard"
	"github.com/fsbench/fsbench/internal/testkit/emulock"
	"github.com/fsbench/fsbench/internal/testkit/simcardtest"
	"github.com/fsbench/fsbench/internal/testkit/slow"
)

const simcardHelperEnv = "FSBENCH_PROBE_SIMCARD_HELPER"

// TestSimcardHelperProcess is not a test: simkind.StartSimcard runs the test binary with it as
// the card server (the helper re-exec pattern), with the flags of "fsbench simcard serve".
func TestSimcardHelperProcess(t *testing.T) {
	if os.Getenv(simcardHelperEnv) != "1" {
		return // run as a test: nothing to do (a skip would be listed among the skipped tests)
	}
	simcardtest.HelperMain()
}

// simcardLoop serves profile at real time and attaches a direct-I/O loop device to it; the
// cleanup detaches the loop, stops the server (SIGTERM to its pid) and checks that no mount
// or loop device is left.
func simcardLoop(t *testing.T, profile string, size uint64) string {
	t.Helper()
	simcardtest.Require(t)
	dir := t.TempDir()
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv, env := simcardtest.Command("TestSimcardHelperProcess", simcardHelperEnv)
	sc, err := simkind.StartSimcard(ctx, simkind.SimcardOptions{Profile: profile, Size: size, Dir: filepath.Join(dir, "sim"),
		Backing: filepath.Join(dir, "card.img"), TimeScale: 1,
		Command: argv, Env: env, Log: &log})
	if err != nil {
		t.Fatalf("StartSimcard: %v", err)
	}
	t.Cleanup(func() {
		if err := sc.Stop(); err != nil {
			t.Errorf("cleanup: stop simcard: %v\n%s", err, log.String())
		}
		mounts, _ := os.ReadFile("/proc/mounts")
		if strings.Contains(string(mounts), dir) {
			t.Errorf("mounts left under %s", dir)
		}
		out, _ := exec.Command("losetup", "-a").CombinedOutput()
		if strings.Contains(string(out), dir) {
			t.Errorf("loop devices left over %s:\n%s", dir, out)
		}
	})
	l, err := session.AttachLoop(sc.CardPath(), session.LoopOptions{DirectIO: true})
	if err != nil {
		t.Fatalf("attach loop: %v", err)
	}
	t.Cleanup(func() { // runs before the server's Stop (cleanups run last-in first-out)
		if err := l.Detach(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if !l.DirectIO {
		t.Skip("the loop device did not get direct I/O over the FUSE file: timings would be the page cache's")
	}
	return l.Path
}

// TestProbeSimcard probes every profile served in real time, with writes, through the same
// path as fsbench probe: Identify, OpenDevice (O_DIRECT, O_EXCL), Run.
func TestProbeSimcard(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real-time probe takes about two minutes for all profiles")
	}
	// In real time on a shared machine, only the profiles whose boundary costs stand an order
	// of magnitude above the timing noise are checked by default: sd-typical (150 µs steps) and
	// sd-cheap-old (the same, 150 µs). emmc's steps are 20-30 µs and sd-a1-modern's cache blurs its write
	// sweep, so under load their estimates wander (seen: emmc AU 16 MiB instead of 1 MiB);
	// TestProbeModel checks the method on every profile without timing noise, and
	// FSBENCH_ALL_PROBES=1 runs them here too, on a quiet machine.
	// make test probes one of them (sd-cheap-old, the quicker: about 40 s of make test's five
	// minutes), make test-slow both.
	profiles, more := []string{"sd-cheap-old"}, "make test-slow probes sd-typical too, FSBENCH_ALL_PROBES=1 all of them on a quiet machine"
	if slow.Enabled() {
		profiles, more = []string{"sd-typical", "sd-cheap-old"}, "FSBENCH_ALL_PROBES=1 probes them all, on a quiet machine"
	}
	// Not beside an emulated machine: a QEMU under TCG takes a whole core, and the timings
	// here are the host's as much as the card's.
	emulock.Hold(t)
	if os.Getenv("FSBENCH_ALL_PROBES") == "1" {
		profiles = flash.Builtins()
	} else {
		t.Logf("reduced: %d of %d card profiles (%s)", len(profiles), len(flash.Builtins()), more)
	}
	for _, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			dev := simcardLoop(t, profile, 256<<20)
			r := &Result{}
			if err := Identify(context.Background(), r, dev, "/sys", ""); err != nil {
				t.Fatal(err)
			}
			if r.Kind != "disk" || r.Identity == nil || r.Identity.Loop == nil || r.USB.Through {
				t.Errorf("identity: kind %q, %+v, usb %v: want a loop disk, not USB", r.Kind, r.Identity, r.USB.Through)
			}
			d, closeDev, err := OpenDevice(dev, true)
			if err != nil {
				t.Fatal(err)
			}
			defer closeDev()
			start := time.Now()
			got, err := Run(context.Background(), d, Options{Write: true, MaxReadBlock: 16 << 20, Sentinel: measure.NewSentinel(filepath.Base(dev))})
			if err != nil {
				t.Fatal(err)
			}
			got.Device, got.Kind = r.Device, r.Kind
			var sum bytes.Buffer
			_ = WriteSummary(&sum, got)
			t.Logf("%s: probe took %v (alignment test %v)\n%s", profile, time.Since(start).Round(time.Millisecond),
				time.Duration(got.Align.DurationNs).Round(time.Millisecond), sum.String())
			if a := time.Duration(got.Align.DurationNs); a > time.Minute {
				t.Errorf("the alignment test took %v, want under a minute", a)
			}
			checkAgainstProfile(t, profile, got)
		})
	}
}
