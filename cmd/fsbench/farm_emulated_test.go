package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/board"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/emulock"
	"github.com/fsbench/fsbench/internal/testkit/labfarm"
	"github.com/fsbench/fsbench/internal/testkit/slow"
)

// emulatedFarm is a labgrid farm of real parts on 127.0.0.1 whose places are emulated arm64
// boards (QEMU under TCG, each its own SD card image and SSH port), powered through the farm's
// simplerest relay, with the arm64 fsbench they run.
type emulatedFarm struct {
	*labfarm.Farm
	bin string // fsbench for linux/arm64
	// Startup is how long the farm took to start, boards booted.
	Startup time.Duration
}

// emulatedFarmParts finds labgrid, QEMU and ssh, or skips saying what is missing, and
// cross-builds the arm64 fsbench the boards run: labgrid's bin directory, the board's
// architecture and the binary.
func emulatedFarmParts(t *testing.T) (string, board.Arch, string) {
	t.Helper()
	bin, err := labfarm.FindLabgrid()
	if err != nil {
		t.Skip(err)
	}
	for _, p := range []string{"qemu-system-aarch64", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not found (scripts/setup-board-debian.sh installs it)", p)
		}
	}
	arch, err := board.LookupArch("arm64")
	if err != nil {
		t.Fatal(err)
	}
	armBin := filepath.Join(t.TempDir(), "fsbench-linux-arm64")
	build := exec.Command("go", "build", "-trimpath", "-o", armBin, "github.com/fsbench/fsbench/cmd/fsbench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("cross-building fsbench for arm64: %v\n%s", err, out)
	}
	return bin, arch, armBin
}

// startEmulatedFarm starts the farm, or skips saying what is missing. The boards boot once
// for the whole test (a TCG boot is 10-60 s on a busy 2-core machine).
func startEmulatedFarm(t *testing.T, places ...string) *emulatedFarm {
	t.Helper()
	slow.Need(t, "boots emulated boards behind a labgrid farm")
	needRoot(t)
	bin, arch, armBin := emulatedFarmParts(t)
	// Two boards are one test's emulated machines: no other test's QEMU at the same time.
	emulock.Hold(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	t0 := time.Now()
	// Behind the exporter, as boards in a lab are: reachable only through the exporter host.
	f, err := labfarm.Start(ctx, labfarm.Options{Dir: t.TempDir(), Places: places, LabgridBin: bin,
		Emulated: &labfarm.Emulated{Arch: arch, Log: t.Logf}, ProxyRequired: true})
	if f != nil {
		t.Cleanup(func() { stopEmulatedFarm(t, f) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return &emulatedFarm{Farm: f, bin: armBin, Startup: time.Since(t0)}
}

// stopEmulatedFarm tears the farm down and checks that none of its QEMU processes is left.
func stopEmulatedFarm(t *testing.T, f *labfarm.Farm) {
	var pids []*board.State
	for _, e := range f.Emulated {
		if s := e.State(); s != nil {
			pids = append(pids, s)
		}
	}
	f.Stop()
	for _, s := range pids {
		if s.Alive() {
			t.Errorf("QEMU pid %d of the farm still runs after the farm was torn down", s.PID)
		}
	}
	for place, e := range f.Emulated {
		if s := e.State(); s != nil {
			t.Errorf("place %s: the board is still recorded as running (pid %d)", place, s.PID)
		}
	}
}

// cmd is fsbench ARGS against the farm: its coordinator, ssh configuration, labgrid client and
// the arm64 fsbench for the boards.
func (f *emulatedFarm) cmd(args ...string) *exec.Cmd {
	full := append([]string{args[0], "--labgrid-coordinator", f.Coordinator, "--ssh-config", f.SSHConfig}, args[1:]...)
	// Every command that works on a board (run, cleanup --target, fetch) puts the arm64
	// fsbench there first: the host's is amd64.
	full = append(full, "--remote-binary", f.bin)
	cmd := exec.Command(binary, full...)
	cmd.Env = append(append(os.Environ(), f.Env...), "FSBENCH_LABGRID_CLIENT="+f.Client)
	return cmd
}

// farmRunArgs is the one command that benchmarks every place's card with a tiny matrix.
func farmRunArgs(res string, places ...string) []string {
	var targets []string
	for _, p := range places {
		targets = append(targets, "labgrid:"+p+board.Device)
	}
	return []string{"run", "--target", strings.Join(targets, ","), "--destroy", board.Device,
		"--variants", "ext4,ext2", "--tests", "mkfs,mount,write", "-n", "1", "--dataset-size", "4M", "-o", res}
}

// Two emulated arm64 boards behind two places of a real labgrid farm, reachable only through its
// exporter (proxy_required): one fsbench command, each board power-cycled before each variant,
// benchmarks both cards and merges them into one report whose rows say board, card and kernel;
// a place's power (the relay's hook) reboots exactly its board; Ctrl-C and kill -9 mid-run
// release both places and leave the boards clean; tearing the farm down leaves no QEMU.
// 5 min 54 s under TCG on this project's 2-core machine at a load average of 4: the boards boot
// once, for every part. It runs with the other integration tests (root, not -short), as the
// emulated board's own tests do; FSBENCH_EMULATED_FARM=0 leaves it out.
func TestLabgridEmulatedFarm(t *testing.T) {
	if os.Getenv("FSBENCH_EMULATED_FARM") == "0" {
		t.Skip("FSBENCH_EMULATED_FARM=0")
	}
	places := []string{"board-a", "board-b"}
	f := startEmulatedFarm(t, places...)
	t.Logf("farm of 2 emulated arm64 boards up in %s", f.Startup.Round(time.Second))

	t.Run("one command, one report", func(t *testing.T) {
		dir := t.TempDir()
		res := filepath.Join(dir, "res")
		t0 := time.Now()
		checkProxied(t, f.Farm, places...)
		out, err := f.cmd(append(farmRunArgs(res, places...), "--power-cycle")...).CombinedOutput()
		t.Logf("2 boards, ext4+ext2, mkfs+mount+write, -n 1, a power cycle before each variant: %s", time.Since(t0).Round(time.Second))
		if testing.Verbose() {
			t.Logf("output:\n%s", out)
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		r, err := results.Load(res)
		if err != nil {
			t.Fatal(err)
		}
		labels := map[string]int{}
		for _, v := range r.Variants {
			if v.Source == nil || v.Source.Board == "" || v.Source.Kernel == "" || v.Source.Card == "" {
				t.Errorf("variant %s: source %+v lacks board, card or kernel", v.Name, v.Source)
				continue
			}
			labels[v.Source.Label]++
			if testing.Verbose() {
				t.Logf("variant %s: board %q, card %q, kernel %q", v.Name, v.Source.Board, v.Source.Card, v.Source.Kernel)
			}
		}
		if labels["board-a"] != 2 || labels["board-b"] != 2 {
			t.Errorf("labels of the merged variants: %v, want 2 each of board-a and board-b", labels)
		}
		if len(r.Values("ext4", "write")) != 1 || len(r.Values("ext2@board-b", "mkfs")) != 1 {
			t.Errorf("merged measurements missing: %+v", r.Variants)
		}
		if _, err := os.Stat(filepath.Join(res, "report.html")); err != nil {
			t.Errorf("no merged report: %v", err)
		}
		for _, p := range places {
			if n := f.Emulated[p].Boots(); n != 3 {
				t.Errorf("place %s: its board booted %d times, want 3 (the farm's boot, then a power cycle before each of 2 variants)", p, n)
			}
		}
		checkReleased(t, f.Farm, places...)
	})

	t.Run("power cycle reboots exactly that board", func(t *testing.T) {
		a, b := f.Emulated["board-a"], f.Emulated["board-b"]
		oldA, oldB := a.State(), b.State()
		t0 := time.Now()
		for _, args := range [][]string{{"acquire"}, {"power", "cycle"}, {"release"}} {
			if _, err := f.Client1(context.Background(), append([]string{"-p", "board-a"}, args...)...); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("labgrid-client power cycle of board-a (QEMU ended, booted again, SSH answering): %s", time.Since(t0).Round(time.Second))
		if oldA.Alive() {
			t.Errorf("board-a's old QEMU (pid %d) still runs after its power cycle", oldA.PID)
		}
		if s := a.State(); s == nil || !s.Alive() || s.PID == oldA.PID || s.Port != oldA.Port || s.Card != oldA.Card {
			t.Errorf("board-a after its power cycle: %+v (before: %+v)", s, oldA)
		}
		if s := b.State(); !oldB.Alive() || s.PID != oldB.PID {
			t.Errorf("board-b was switched with board-a: pid %d, was %d", s.PID, oldB.PID)
		}
	})

	signals := []syscall.Signal{syscall.SIGINT, syscall.SIGKILL}
	if slow.Reduced(t, "not killed with SIGKILL on the emulated boards (TestLabgridInterruptReleases kills a farm run on sshd boards)") {
		signals = signals[:1]
	}
	for _, sig := range signals {
		t.Run(fmt.Sprintf("killed with %s", sig), func(t *testing.T) {
			dir := t.TempDir()
			cmd := f.cmd(farmRunArgs(filepath.Join(dir, "res"), places...)...)
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			t0 := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Mid-run: both boards have staged their dataset and begin with a mkfs, which
			// writes the whole card (QEMU turns mkfs.ext4's discard into writes, about 14 s):
			// the signal comes while the cards are being written.
			started := func() bool {
				for _, p := range places {
					if !strings.Contains(out.String(), "["+p+"] dataset:") {
						return false
					}
				}
				return true
			}
			for !started() {
				if time.Since(t0) > 5*time.Minute {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("the run did not start on the boards:\n%s", out.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(3 * time.Second)
			t.Logf("%s after %s, both boards running", sig, time.Since(t0).Round(time.Second))
			cmd.Process.Signal(sig)
			cmd.Wait()
			t1 := time.Now()
			if sig == syscall.SIGKILL {
				// The farm's children, stopped by their parent-death signal, release their own
				// places; fsbench cleanup stops whatever the ledger still records.
				waitReleased(t, f.Farm, places...)
				c := exec.Command(binary, "cleanup")
				c.Env = append(append(os.Environ(), f.Env...), "FSBENCH_LABGRID_CLIENT="+f.Client)
				if co, err := c.CombinedOutput(); err != nil {
					t.Errorf("fsbench cleanup: %v\n%s", err, co)
				}
			} else {
				for _, p := range places {
					if !strings.Contains(out.String(), "labgrid: released place "+p) {
						t.Errorf("no release of %s in the output:\n%s", p, out.String())
					}
				}
			}
			checkReleased(t, f.Farm, places...)
			t.Logf("places released %s after the %s", time.Since(t1).Round(time.Second), sig)
			// Each board stops its run in order when its SSH session ends; cleanup --target
			// then finds it clean (nothing mounted from the card, no run going on) and removes
			// what the interrupted run kept.
			for _, p := range places {
				var co []byte
				var err error
				// Retried for a while: the board's run may still be stopping. A usage error (exit
				// 2) will not go away.
				for i := 0; i < 15; i++ {
					co, err = f.cmd("cleanup", "--target", "labgrid:"+p, "--purge").CombinedOutput()
					if ee, ok := err.(*exec.ExitError); err == nil || ok && ee.ExitCode() == 2 {
						break
					}
					time.Sleep(2 * time.Second)
				}
				if err != nil {
					t.Errorf("fsbench cleanup --target labgrid:%s --purge: %v\n%s", p, err, co)
				} else if testing.Verbose() {
					t.Logf("cleanup of %s:\n%s", p, co)
				}
				if ms, _ := exec.Command("ssh", append(sshArgsFor(f, p), "grep mmcblk0 /proc/mounts || true")...).CombinedOutput(); strings.TrimSpace(string(ms)) != "" {
					t.Errorf("board %s still mounts its card:\n%s", p, ms)
				}
			}
			checkReleased(t, f.Farm, places...)
		})
	}
}

// sshArgsFor are ssh's arguments that reach place's board directly (the test's own look at it).
func sshArgsFor(f *emulatedFarm, place string) []string {
	return f.Emulated[place].State().SSHArgs()
}
