package capacity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/simcard"
	simkind "github.com/fsbench/fsbench/internal/targets/simcard"
	"github.com/fsbench/fsbench/internal/testkit/simcardtest"
)

const (
	simcardHelperEnv = "FSBENCH_CAPACITY_SIMCARD_HELPER"
	killHelperEnv    = "FSBENCH_CAPACITY_KILL_HELPER"
)

// TestSimcardHelperProcess is not a test: the card server of the tests below (the helper
// re-exec pattern, see simcardtest).
func TestSimcardHelperProcess(t *testing.T) {
	if os.Getenv(simcardHelperEnv) != "1" {
		return // run as a test: nothing to do (a skip would be listed among the skipped tests)
	}
	simcardtest.HelperMain()
}

// TestKillHelperProcess is not a test: it probes the device in $FSBENCH_CAPACITY_KILL_HELPER
// ("DEVICE POINT N [noreset]") and SIGKILLs itself the Nth time the probe reaches POINT, leaving
// what a crash there would leave; with noreset, on the path every real card takes (no reset:
// writing past the cache).
func TestKillHelperProcess(t *testing.T) {
	spec := os.Getenv(killHelperEnv)
	if spec == "" {
		return // run as a test: nothing to do (a skip would be listed among the skipped tests)
	}
	f := strings.Fields(spec)
	n, _ := strconv.Atoi(f[2])
	seen := 0
	hook = func(p string) {
		if p == f[1] {
			if seen++; seen == n {
				fmt.Fprintf(os.Stderr, "killing myself at %s #%d\n", p, n)
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}
	}
	tg, err := OpenTarget(context.Background(), f[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	r, err := Probe(context.Background(), tg, Options{NoReset: len(f) > 3 && f[3] == "noreset"})
	fmt.Fprintf(os.Stderr, "the probe was not killed: %+v %v\n", r, err)
	os.Exit(3)
}

func sumFile(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))[:16]
}

// TestKillThenCleanup kills the probe (SIGKILL, no chance to clean up) at three points, on a
// counterfeit and a genuine simulated card served through FUSE and a loop device, on the
// simulated card's reset path and on the path every real card takes (no reset: the probe writes
// past the card's cache, each block saved in the undo log first), and runs the real `fsbench
// cleanup` after each: the card must end byte for byte as it began (sha256 of what it stores),
// and the undo log must be gone. The points: right after the first undo record is synced
// (nothing overwritten yet), after a later batch of writes (blocks overwritten; without a reset,
// 30 batches in: the probe's blocks and over 64 MiB written past the cache, with an undo log as
// large), and halfway through the final restore (without a reset the log then holds all the
// volume written past the cache as well).
func TestKillThenCleanup(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: serves cards, attaches loop devices, builds fsbench")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: serves a FUSE card, attaches a loop device, writes the undo log in " + DefaultUndoDir)
	}
	if !simcard.FUSEAvailable {
		t.Skip("this build has no FUSE server")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("needs FUSE: %v", err)
	}
	bin := buildFsbench(t)
	type point struct {
		name    string
		n       int
		changed bool   // the card differs before the cleanup
		minLog  uint64 // the undo log at the kill holds at least this much
	}
	for _, c := range []struct {
		profile string
		size    uint64
		noReset bool
		points  []point
	}{
		{"fake-chain-cache", 1 << 30, false, []point{{"logged", 1, false, 0}, {"written", 2, true, 0}, {"restoring", 1, true, 0}}},
		{"sd-typical", 256 << 20, false, []point{{"logged", 1, false, 0}, {"written", 2, true, 0}, {"restoring", 1, true, 0}}},
		// sd-typical at 256 MiB writes past caches of up to 128 MiB (half the card).
		{"sd-typical", 256 << 20, true, []point{{"logged", 1, false, 0}, {"written", 30, true, 64 << 20}, {"restoring", 1, true, 64 << 20}}},
		{"fake-limbo-cache", 1 << 30, true, []point{{"logged", 1, false, 0}, {"written", 6, true, 0}, {"restoring", 1, true, 0}}},
	} {
		name := c.profile
		if c.noReset {
			name += "/noreset"
		}
		t.Run(name, func(t *testing.T) {
			_, dev, backing, before := randomCard(t, c.profile, c.size)
			for _, point := range c.points {
				cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelperProcess$")
				spec := fmt.Sprintf("%s %s %d", dev, point.name, point.n)
				if c.noReset {
					spec += " noreset"
				}
				cmd.Env = append(os.Environ(), killHelperEnv+"="+spec)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if err == nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("%s: the probe was not killed (%v):\n%s", point.name, err, stderr.String())
				}
				logs, _ := filepath.Glob(filepath.Join(DefaultUndoDir, strconv.Itoa(cmd.Process.Pid)+"-*"+undoExt))
				if len(logs) != 1 {
					t.Fatalf("%s: undo logs of pid %d: %v", point.name, cmd.Process.Pid, logs)
				}
				st, err := os.Stat(logs[0])
				if err != nil {
					t.Fatal(err)
				}
				if uint64(st.Size()) < point.minLog {
					t.Errorf("%s #%d: undo log of %d MiB, want at least %d MiB", point.name, point.n, st.Size()>>20, point.minLog>>20)
				}
				mid := sumFile(t, backing)
				if point.changed && mid == before {
					t.Errorf("%s: the card is unchanged after the kill: nothing for the cleanup to prove", point.name)
				}
				start := time.Now()
				out, err := exec.Command(bin, "cleanup").CombinedOutput()
				if err != nil {
					t.Fatalf("%s: fsbench cleanup: %v\n%s", point.name, err, out)
				}
				after := sumFile(t, backing)
				t.Logf("%s #%d: undo log %.1f MiB; sha256 %s before, %s after the kill, %s after fsbench cleanup (%v):\n%s", point.name, point.n,
					float64(st.Size())/(1<<20), before, mid, after, time.Since(start).Round(time.Millisecond), out)
				if after != before {
					t.Errorf("%s: the card differs after fsbench cleanup", point.name)
				}
				if _, err := os.Stat(logs[0]); err == nil {
					t.Errorf("%s: undo log %s left", point.name, logs[0])
				}
			}
		})
	}
}

// buildFsbench builds the fsbench binary the tests run as a user would (static, like a release).
func buildFsbench(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fsbench")
	build := exec.Command("go", "build", "-o", bin, "github.com/fsbench/fsbench/cmd/fsbench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fsbench: %v\n%s", err, out)
	}
	return bin
}

// serveLoop serves a simulated card without waiting and attaches a direct-I/O loop device.
func serveLoop(t *testing.T, dir, profile string, size uint64, backing string) string {
	t.Helper()
	return serveLoopScale(t, dir, profile, size, backing, 0.0001)
}

// serveLoopScale is serveLoop at a time scale.
func serveLoopScale(t *testing.T, dir, profile string, size uint64, backing string, scale float64) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv, env := simcardtest.Command("TestSimcardHelperProcess", simcardHelperEnv)
	var log bytes.Buffer
	sc, err := simkind.StartSimcard(ctx, simkind.SimcardOptions{Profile: profile, Size: size, Dir: filepath.Join(dir, "sim"),
		Backing: backing, TimeScale: scale, Command: argv, Env: env, Log: &log, PathOffset: "off"})
	if err != nil {
		t.Fatalf("serve %s: %v\n%s", profile, err, log.String())
	}
	t.Cleanup(func() {
		if err := sc.Stop(); err != nil {
			t.Errorf("stop the card: %v\n%s", err, log.String())
		}
	})
	l, err := session.AttachLoop(sc.CardPath(), session.LoopOptions{DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Detach(); err != nil {
			t.Errorf("detach: %v", err)
		}
	})
	return l.Path
}

// randomCard serves profile at size behind a loop device in a directory of its own, with random
// data spread over it (fillRandom), and returns the directory, the device, the card's backing
// file and its sha256.
func randomCard(t *testing.T, profile string, size uint64) (dir, dev, backing, sum string) {
	t.Helper()
	dir = t.TempDir()
	backing = filepath.Join(dir, "card.img")
	dev = serveLoop(t, dir, profile, size, backing)
	fillRandom(t, dev, size)
	return dir, dev, backing, sumFile(t, backing)
}

// fillRandom writes random data over a few MiB spread across the device, so that a block the
// cleanup failed to restore shows in the hash.
func fillRandom(t *testing.T, dev string, size uint64) {
	t.Helper()
	f, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 1<<20)
	for off := uint64(0); off < size; off += size / 16 {
		for i := range buf {
			buf[i] = byte(r.Uint32())
		}
		if _, err := f.WriteAt(buf, int64(off+(1<<20))); err != nil && off+(2<<20) < size {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
