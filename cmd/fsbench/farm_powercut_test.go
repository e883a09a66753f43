package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// liveCuts is how many cuts each variant gets in the live power-cut tests: 4 in make
// test-slow (a cut of the emulated board takes about a minute under TCG), FSBENCH_LIVE_CUTS for
// the 20.
func liveCuts(t *testing.T) int {
	if s := os.Getenv("FSBENCH_LIVE_CUTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("FSBENCH_LIVE_CUTS=%q: want a number of cuts", s)
		}
		return n
	}
	t.Logf("reduced: 4 cuts per variant (FSBENCH_LIVE_CUTS=20 makes the issue's campaign)")
	return 4
}

// liveMatrix is ext4 with and without barriers.
const liveMatrix = `[[variant]]
name = "ext4"
fs = "ext4"

[[variant]]
name = "ext4-nobarrier"
fs = "ext4"
mount = "barrier=0"
`

// startSimcardFarm starts a labgrid farm of one emulated arm64 board whose card is a simulated
// card of profile on bus, split in two partitions, powered through the farm's relay.
func startSimcardFarm(t *testing.T, profile, bus string) *emulatedFarm {
	t.Helper()
	slow.Need(t, "boots an emulated board on a simulated card behind a labgrid farm and cuts its power")
	needRoot(t)
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("the simulated card needs FUSE: %v", err)
	}
	bin, arch, armBin := emulatedFarmParts(t)
	emulock.Hold(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	t0 := time.Now()
	f, err := labfarm.Start(ctx, labfarm.Options{Dir: t.TempDir(), Places: []string{"board-a"}, LabgridBin: bin,
		Emulated: &labfarm.Emulated{Arch: arch, CardSize: 256 << 20, Log: t.Logf,
			SimCard: &labfarm.SimCard{Profile: profile, Bus: bus, Partitions: 2}}})
	if f != nil {
		t.Cleanup(func() { stopEmulatedFarm(t, f) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return &emulatedFarm{Farm: f, bin: armBin, Startup: time.Since(t0)}
}

// liveFigures are a variant's live figures from a run's results.
func liveFigures(t *testing.T, res string) map[string]*results.PowerCut {
	t.Helper()
	r, err := results.Load(res)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*results.PowerCut{}
	for _, m := range r.Measurements {
		if m.PowerCut != nil {
			out[m.Variant] = m.PowerCut
		} else if m.Status == results.Failed {
			t.Errorf("%s %s: %s %s", m.Variant, m.Test, m.Status, m.Error)
		}
	}
	return out
}

// replayedFigures runs the simulated card's suite on the host, on the same profile and
// partition size, with the same cuts: the figures the live ones must agree with.
func replayedFigures(t *testing.T, profile string, cuts int) map[string]*results.PowerCut {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "matrix.toml")
	if err := os.WriteFile(cfg, []byte(liveMatrix), 0o644); err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(dir, "replayed")
	out, err := exec.Command(binary, "run", "--suite", "powercut", "--target", "simcard:"+profile, "--size", "128M",
		"-c", cfg, "-n", "1", "--cuts", strconv.Itoa(cuts), "--time-scale", "0.01", "-o", res).CombinedOutput()
	if err != nil {
		t.Fatalf("the replayed suite on %s: %v\n%s", profile, err, out)
	}
	return liveFigures(t, res)
}

// overlap reports whether two shares' intervals meet.
func overlap(a, b results.Proportion) bool { return a.Low <= b.High && b.Low <= a.High }

// TestLivePowerCutEmulatedFarm cuts the power of an emulated arm64 board behind a labgrid
// relay while the powercut workload runs on its card, a simulated card whose power-loss model
// acts when QEMU is killed: on the power-loss-protected profile (as an SD card, /dev/mmcblk0p2)
// neither ext4 nor ext4 with barrier=0 loses anything it acknowledged; on emmc (a card with a
// cache the guest flushes, /dev/vda2) ext4 with barrier=0 breaks promises given enough cuts;
// the shares of whole cuts agree, within their intervals, with the simulated card's replayed
// cuts on the same profile. The same campaign then runs on the board as ssh:// with
// --power-off/--power-on commands that switch the relay, with the board left dead after one
// cut (power-cycled again, the campaign goes on), and a Ctrl-C and a rerun resume it.
func TestLivePowerCutEmulatedFarm(t *testing.T) {
	cuts := liveCuts(t)
	plp, err := filepath.Abs("../../contrib/profiles/sd-industrial-plp.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, profile, bus, dev string
		ssh                     bool // the board as ssh:// with power commands, not a labgrid place
	}{
		{"protected", plp, board.CardSD, "/dev/mmcblk0p2", false},
		{"emmc", "emmc", board.CardVirtio, board.VirtioDevice + "2", false},
		{"emmc over ssh", "emmc", board.CardVirtio, board.VirtioDevice + "2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startSimcardFarm(t, tc.profile, tc.bus)
			t.Logf("farm with one emulated board on a simulated %s card up in %s", tc.name, f.Startup.Round(time.Second))
			dir := t.TempDir()
			cfg := filepath.Join(dir, "matrix.toml")
			if err := os.WriteFile(cfg, []byte(liveMatrix), 0o644); err != nil {
				t.Fatal(err)
			}
			res := filepath.Join(dir, "live")
			t0 := time.Now()
			target := "labgrid:board-a" + tc.dev
			var power []string
			if tc.ssh {
				target = fmt.Sprintf("ssh://root@127.0.0.1:%d%s", f.Boards["board-a"].Port, tc.dev)
				power = relayCommands(f)
			}
			cmd := f.cmd(append([]string{"run", "--suite", "powercut", "--target", target, "--destroy", tc.dev,
				"-c", cfg, "--cuts", strconv.Itoa(cuts), "--boot-timeout", "3m", "-o", res}, power...)...)
			out, err := cmd.CombinedOutput()
			took := time.Since(t0)
			if testing.Verbose() || err != nil {
				t.Logf("output:\n%s", out)
			}
			if err != nil {
				t.Fatalf("fsbench run: %v", err)
			}
			live := liveFigures(t, res)
			outcomes := f.Emulated["board-a"].Outcomes()
			t.Logf("%d power cuts of the card in %s (load %s)", len(outcomes), took.Round(time.Second), loadavg())
			replayed := replayedFigures(t, tc.profile, 20)
			for _, name := range []string{"ext4", "ext4-nobarrier"} {
				p, r := live[name], replayed[name]
				if p == nil || r == nil {
					t.Fatalf("%s: no powercut figures (live %v, replayed %v)", name, p != nil, r != nil)
				}
				if p.Live == nil {
					t.Fatalf("%s: the live figures say nothing of the live cuts", name)
				}
				t.Logf("%s on %s: live whole %d of %d (%.1f %%, %.1f-%.1f), a promise broken in %d cuts (acknowledged data lost in %d, a rename torn in %d), in flight %d, %.1f cuts per hour (boot p50 %.1f s, workload p50 %.1f s); replayed whole %d of %d (%.1f-%.1f)",
					name, tc.name, p.Safe.Count, p.Cuts, p.Safe.Pct, p.Safe.Low, p.Safe.High, p.Live.BrokenCuts, p.AckLossCuts.Count, p.AtomicityCuts.Count,
					p.Live.InFlight, p.Live.CutsPerHour, p.Live.BootP50Seconds, p.Live.WorkloadP50Seconds, r.Safe.Count, r.Cuts, r.Safe.Low, r.Safe.High)
				if p.Cuts != cuts || p.Live.Lost != 0 {
					t.Errorf("%s: %d cuts checked, %d lost; want %d, none lost", name, p.Cuts, p.Live.Lost, cuts)
				}
				if p.Live.CutsPerHour <= 0 {
					t.Errorf("%s: no cuts per hour measured", name)
				}
				if tc.name == "protected" && p.Live.BrokenCuts > 0 {
					t.Errorf("%s broke promises on a card that loses nothing: %v", name, p.Problems)
				}
				if !overlap(p.Safe, r.Safe) {
					t.Errorf("%s: the live share of whole cuts %.1f-%.1f does not meet the replayed one %.1f-%.1f", name, p.Safe.Low, p.Safe.High, r.Safe.Low, r.Safe.High)
				}
			}
			if tc.profile == "emmc" && cuts >= 20 && live["ext4-nobarrier"].AckLossCuts.Count == 0 {
				t.Errorf("ext4 with barrier=0 kept every promise in %d cuts of emmc: its cache lost nothing it was not told to keep", cuts)
			}
		})
	}
	t.Run("ssh with power commands", func(t *testing.T) {
		f := startSimcardFarm(t, plp, board.CardSD)
		cfg := filepath.Join(t.TempDir(), "matrix.toml")
		if err := os.WriteFile(cfg, []byte(liveMatrix), 0o644); err != nil {
			t.Fatal(err)
		}
		liveOverSSH(t, f, cfg, "/dev/mmcblk0p2")
	})
}

// relayCommands are --power-off and --power-on commands that switch the board's outlet on the
// farm's relay over HTTP, as a network relay or a PDU's web interface is switched (with the
// Python of labgrid's venv, which the farm needs anyway: curl is not on every machine).
func relayCommands(f *emulatedFarm) []string {
	relay := strings.NewReplacer("{index}", strconv.Itoa(f.Index["board-a"])).Replace(f.Relay.URL)
	py := filepath.Join(filepath.Dir(f.Client), "python3")
	get := func(v string) string {
		return fmt.Sprintf("%s -c 'import urllib.request; urllib.request.urlopen(\"%s\", timeout=600).read()'", py, strings.Replace(relay, "{value}", v, 1))
	}
	return []string{"--power-off", get("0"), "--power-on", get("1")}
}

// liveOverSSH runs the campaign on the farm's board as ssh:// with power commands that switch
// the relay (a USB relay's or a PDU's would do the same), leaves the board dead at its next
// power-on (the campaign power-cycles it again and goes on), interrupts it after its first cut
// and resumes it with the same command.
func liveOverSSH(t *testing.T, f *emulatedFarm, cfg, dev string) {
	e := f.Emulated["board-a"]
	st := e.State()
	if st == nil {
		t.Fatal("the board is off")
	}
	res := filepath.Join(t.TempDir(), "ssh")
	args := append([]string{"run", "--suite", "powercut", "--target", fmt.Sprintf("ssh://root@127.0.0.1:%d%s", st.Port, dev), "--destroy", dev,
		"-c", cfg, "--variants", "ext4", "--cuts", "3", "--boot-timeout", "90s", "-o", res,
		"--remote-binary", f.bin}, relayCommands(f)...)
	for _, o := range st.SSHOptions() {
		args = append(args, "--ssh-option", o)
	}
	e.Kill(1) // the first power-on after a cut leaves the board dead
	first := exec.Command(binary, args...)
	// An OS pipe whose write end only the child holds: the scan below ends when fsbench does.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	first.Stdout, first.Stderr = pw, pw
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var log strings.Builder
	sc := bufio.NewScanner(pr)
	interrupted := false
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if !interrupted && strings.Contains(sc.Text(), "cut 1 of 3") {
			first.Process.Signal(syscall.SIGINT)
			interrupted = true
		}
	}
	err = first.Wait()
	pr.Close()
	t.Logf("first run (interrupted after its first cut: %v): %v\n%s", interrupted, err, log.String())
	if !interrupted {
		t.Fatal("the campaign never reported its first cut")
	}
	if !strings.Contains(log.String(), "power-cycling it again") {
		t.Error("the board left dead after the cut was not power-cycled again")
	}
	out, err := exec.Command(binary, args...).CombinedOutput()
	t.Logf("rerun with the same results directory:\n%s", out)
	if err != nil {
		t.Fatalf("the rerun: %v", err)
	}
	if !strings.Contains(string(out), "resuming after cut 1 of 3") {
		t.Error("the rerun did not resume after the first cut")
	}
	p := liveFigures(t, res)["ext4"]
	if p == nil || p.Live == nil {
		t.Fatal("no live figures for ext4")
	}
	if p.Cuts+p.Live.Lost != 3 || p.Live.Recycled < 1 || p.Live.Resumed < 1 {
		t.Errorf("ext4 over ssh://: %d cuts checked, %d lost, %d recycled, resumed %d times; want 3 cuts, one recycled, resumed once", p.Cuts, p.Live.Lost, p.Live.Recycled, p.Live.Resumed)
	}
	if p.AckLossCuts.Count+p.AtomicityCuts.Count > 0 {
		t.Errorf("ext4 broke promises on a card that loses nothing: %v", p.Problems)
	}
}
