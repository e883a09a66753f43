package simcard

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/simcard"
	"github.com/fsbench/fsbench/internal/testkit/sessiontest"
	"github.com/fsbench/fsbench/internal/testkit/simcardtest"
)

const simcardHelperEnv = "FSBENCH_SIMCARD_HELPER"

// TestSimcardHelperProcess is not a test: StartSimcard runs the test binary with it as the
// server child (the helper re-exec pattern), parsing the same flags as "fsbench simcard serve".
func TestSimcardHelperProcess(t *testing.T) {
	if os.Getenv(simcardHelperEnv) != "1" {
		return // run as a test: nothing to do (a skip would be listed among the skipped tests)
	}
	simcardtest.HelperMain()
}

func helperCommand() ([]string, []string) {
	return simcardtest.Command("TestSimcardHelperProcess", simcardHelperEnv)
}

func requireFUSE(t *testing.T) {
	t.Helper()
	sessiontest.RequireRoot(t)
	simcardtest.Require(t)
}

// startTestSimcard serves a card for the test and registers cleanup that, whatever happened,
// unmounts mnt (if given), detaches the loop device (if any) and stops the server, then
// checks /proc/mounts and losetup for leftovers.
func startTestSimcard(t *testing.T, profile string, size uint64, scale float64) (*Simcard, string) {
	t.Helper()
	dir := t.TempDir()
	cmd, env := helperCommand()
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc, err := StartSimcard(ctx, SimcardOptions{Profile: profile, Size: size, Dir: filepath.Join(dir, "sim"),
		Backing: filepath.Join(dir, "card.img"), TimeScale: scale, Command: cmd, Env: env, Log: &log})
	if err != nil {
		t.Fatalf("StartSimcard: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	return sc, dir
}

// directTestCard serves a card with opt (its Dir, Backing, Command and Env filled in here)
// behind a direct-I/O loop device, the path a run's requests take, and opens the device with
// O_DIRECT. Cleanup detaches the loop device and stops the server whatever happened, then
// checks for leftovers.
func directTestCard(t *testing.T, opt SimcardOptions) (*Simcard, *os.File) {
	t.Helper()
	dir := t.TempDir()
	opt.Command, opt.Env = helperCommand()
	opt.Dir, opt.Backing = filepath.Join(dir, "sim"), filepath.Join(dir, "card.img")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sc, err := StartSimcard(ctx, opt)
	if err != nil {
		t.Fatalf("StartSimcard: %v", err)
	}
	var loop *session.Loop
	t.Cleanup(func() {
		if loop != nil {
			if err := loop.Detach(); err != nil {
				t.Errorf("detach: %v", err)
			}
		}
		if err := sc.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		checkNothingLeft(t, dir)
	})
	if loop, err = session.AttachLoop(sc.CardPath(), session.LoopOptions{DirectIO: true}); err != nil {
		t.Fatal(err)
	}
	dev, err := os.OpenFile(loop.Path, os.O_RDWR|unix.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return sc, dev
}

func checkNothingLeft(t *testing.T, dir string) {
	t.Helper()
	mounts, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), dir) {
		t.Errorf("mounts left under %s:\n%s", dir, mounts)
	}
	out, _ := exec.Command("losetup", "-a").CombinedOutput()
	if strings.Contains(string(out), dir) {
		t.Errorf("loop devices left over %s:\n%s", dir, out)
	}
}

func TestSimcardExt4(t *testing.T) {
	requireFUSE(t)
	sessiontest.RequireMkfsExt4(t)
	const size = 256 << 20
	sc, dir := startTestSimcard(t, "sd-typical", size, 0.01)
	mnt := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	var loop *session.Loop
	t.Cleanup(func() {
		// Reverse order of setup, each step whatever the previous did.
		if mounted(mnt) {
			_ = unix.Unmount(mnt, 0)
		}
		if loop != nil {
			if err := loop.Detach(); err != nil {
				t.Errorf("detach: %v", err)
			}
		}
		if err := sc.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
		checkNothingLeft(t, dir)
	})

	st, err := os.Stat(sc.CardPath())
	if err != nil || st.Size() != size {
		t.Fatalf("card: %v, size %d, want %d", err, st.Size(), size)
	}
	loop, err = session.AttachLoop(sc.CardPath(), session.LoopOptions{DirectIO: true})
	if err != nil {
		t.Fatalf("AttachLoop: %v", err)
	}
	if !loop.DirectIO {
		t.Errorf("loop device over the simulated card has no direct I/O: the page cache would hide the model")
	}
	sessiontest.MkfsExt4(t, loop.Path)
	if err := unix.Mount(loop.Path, mnt, "ext4", 0, ""); err != nil {
		t.Fatalf("mount: %v", err)
	}
	// Three rounds of 80 MiB, deleting in between: a fresh card has only erased blocks, and
	// erases start when the model recycles physical AUs (64 AUs + 2 spare here), as a real
	// card's would once every block has been written.
	data := make([]byte, 1<<20)
	for round := 0; round < 3; round++ {
		for i := 0; i < 80; i++ {
			rand.Read(data)
			if err := os.WriteFile(filepath.Join(mnt, fmt.Sprintf("f%02d", i)), data, 0o644); err != nil {
				t.Fatalf("write: %v", err)
			}
		}
		unix.Sync()
		if round < 2 {
			for i := 0; i < 80; i++ {
				os.Remove(filepath.Join(mnt, fmt.Sprintf("f%02d", i)))
			}
			unix.Sync()
		}
	}
	got, err := os.ReadFile(filepath.Join(mnt, "f79"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back f79: %v, equal %v", err, bytes.Equal(got, data))
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatalf("unmount: %v", err)
	}
	if err := loop.Detach(); err != nil {
		t.Fatalf("detach: %v", err)
	}
	loop = nil

	live, err := sc.FullStats()
	if err != nil {
		t.Fatal(err)
	}
	c := live.Counters
	t.Logf("after mkfs.ext4 + 3 × 80 MiB of files: host wrote %d B, programmed %d pages (WA %.2f), copied %d, erased %d blocks, %d AU merges, busy %v (waited %v at scale %g); write sizes %v",
		c.HostBytesWritten, c.PagesProgrammed, c.WriteAmplification, c.PagesCopied, c.BlocksErased, c.AUMerges,
		time.Duration(c.BusyNs), time.Duration(live.WaitedNs), live.TimeScale, live.WriteSizes)
	if c.HostBytesWritten < 3*80<<20 {
		t.Errorf("host bytes written %d < the 240 MiB of files", c.HostBytesWritten)
	}
	if c.PagesProgrammed < c.HostBytesWritten/c.PageSize {
		t.Errorf("pages programmed %d < host bytes / page %d", c.PagesProgrammed, c.HostBytesWritten/c.PageSize)
	}
	if c.BlocksErased == 0 {
		t.Error("no erase block erased")
	}
	if live.TimeScale != 0.01 {
		t.Errorf("time scale in stats %g, want 0.01", live.TimeScale)
	}
	if err := sc.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	final, err := sc.Stats()
	if err != nil {
		t.Fatalf("final stats: %v", err)
	}
	if final.HostBytesWritten != c.HostBytesWritten {
		t.Errorf("final host bytes written %d, live %d (nothing happened in between)", final.HostBytesWritten, c.HostBytesWritten)
	}
}

// TestSimcardServerKilled: kill -9 of the server under a loop device must make the next I/O
// fail (not hang), and cleanup must still detach the loop device and remove the dead mount.
func TestSimcardServerKilled(t *testing.T) {
	requireFUSE(t)
	sc, dir := startTestSimcard(t, "sd-typical", 64<<20, 0)
	var loop *session.Loop
	t.Cleanup(func() {
		if loop != nil {
			if err := loop.Detach(); err != nil {
				t.Errorf("detach: %v", err)
			}
		}
		// Stop reports the kill and the lazily detached dead mount; both are expected here.
		err := sc.Stop()
		t.Logf("Stop after kill: %v", err)
		if mounted(sc.Dir()) {
			t.Errorf("%s still mounted after Stop", sc.Dir())
		}
		checkNothingLeft(t, dir)
	})
	var err error
	loop, err = session.AttachLoop(sc.CardPath(), session.LoopOptions{DirectIO: true})
	if err != nil {
		t.Fatalf("AttachLoop: %v", err)
	}
	if err := syscall.Kill(sc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "dd", "if=/dev/zero", "of="+loop.Path, "bs=64k", "count=4", "oflag=direct").CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("I/O to the loop device hung after the server died: %s", out)
	}
	if err == nil {
		t.Fatalf("write to the loop device over a dead server succeeded: %s", out)
	}
	t.Logf("write after kill -9 failed as it should: %v: %s", err, bytes.TrimSpace(out))
}

func TestStartSimcardBadProfile(t *testing.T) {
	_, err := StartSimcard(context.Background(), SimcardOptions{Profile: "sd-nonsense", Size: 64 << 20, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "sd-typical") {
		t.Errorf("err = %v, want one listing the built-in profiles", err)
	}
}

// TestSimcardPathCalibration: by default StartSimcard measures the round trip through a loop
// device over the server's calibration file and hands it to the server, which uses it as its
// path offset; "off" and a fixed duration are passed through; no calibration file, loop
// device or mount is left behind.
func TestSimcardPathCalibration(t *testing.T) {
	requireFUSE(t)
	tests := []struct {
		name, mode string
		want       func(rt simcard.RoundTrip) (time.Duration, string) // offset and a word of the note
	}{
		{"loop", "", func(rt simcard.RoundTrip) (time.Duration, string) { return rt.Offset(), "loop device" }},
		{"off", "off", func(simcard.RoundTrip) (time.Duration, string) { return 0, "" }},
		{"fixed", "25us", func(simcard.RoundTrip) (time.Duration, string) { return 25 * time.Microsecond, "given" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd, env := helperCommand()
			var log bytes.Buffer
			var rt simcard.RoundTrip
			sc, err := StartSimcard(context.Background(), SimcardOptions{Profile: "emmc", Size: 16 << 20, Dir: filepath.Join(dir, "sim"),
				TimeScale: 1, Command: cmd, Env: env, Log: &log, PathOffset: tt.mode, PathCalibration: &rt})
			if err != nil {
				t.Fatalf("StartSimcard: %v\n%s", err, log.String())
			}
			defer checkNothingLeft(t, dir)
			defer func() {
				if err := sc.Stop(); err != nil {
					t.Errorf("stop: %v", err)
				}
			}()
			st, err := sc.FullStats()
			if err != nil {
				t.Fatal(err)
			}
			wantOff, word := tt.want(rt)
			t.Logf("path offset %v: %s", time.Duration(st.PathOffsetNs), st.PathCalibration)
			if time.Duration(st.PathOffsetNs) != wantOff || !strings.Contains(st.PathCalibration, word) {
				t.Errorf("path offset %v (%q), want %v with %q", time.Duration(st.PathOffsetNs), st.PathCalibration, wantOff, word)
			}
			if tt.mode == "" && (rt.Reads == 0 || rt.Best <= 0 || rt.Best > rt.Median) {
				t.Errorf("loop calibration %+v: want a positive fastest round trip below the median", rt)
			}
			ents, err := os.ReadDir(sc.Dir())
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			// The calibration file is gone; the power-cut files, the card's device directory,
			// its reset file and its wear file stay beside card and stats.
			if strings.Join(names, " ") != "card cut device powercut reset stats wear" {
				t.Errorf("served files %v, want card, cut, device, powercut, reset, stats and wear only", names)
			}
		})
	}
}
