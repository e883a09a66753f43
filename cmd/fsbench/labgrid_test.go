package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/labfarm"
	"github.com/fsbench/fsbench/internal/testkit/slow"
)

// startFarm starts a labgrid farm of real parts on 127.0.0.1 (coordinator, exporter, one
// OpenSSH sshd per place, a simplerest power relay), or skips saying what is missing.
func startFarm(t *testing.T, places ...string) *labfarm.Farm {
	t.Helper()
	return startFarmWith(t, labfarm.Options{Places: places})
}

// startFarmWith is startFarm with the farm's options (its Dir and LabgridBin are filled in).
func startFarmWith(t *testing.T, opt labfarm.Options) *labfarm.Farm {
	t.Helper()
	slow.Need(t, "starts a labgrid farm")
	needRoot(t)
	bin, err := labfarm.FindLabgrid()
	if err != nil {
		t.Skip(err)
	}
	if _, err := labfarm.FindSSHD(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opt.Dir, opt.LabgridBin = t.TempDir(), bin
	f, err := labfarm.Start(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return f
}

// farmCmd is an fsbench command line against farm f: its coordinator, its ssh configuration,
// the board's directory under dir and this test's binary as the board's.
func farmCmd(f *labfarm.Farm, dir string, args ...string) *exec.Cmd {
	full := append([]string{"run", "--labgrid-coordinator", f.Coordinator, "--ssh-config", f.SSHConfig,
		"--remote-dir", filepath.Join(dir, "board"), "--remote-binary", binary}, args...)
	cmd := exec.Command(binary, full...)
	cmd.Env = append(append(os.Environ(), f.Env...), "FSBENCH_LABGRID_CLIENT="+f.Client)
	return cmd
}

// checkReleased fails unless every place is free, as labgrid-client show says.
func checkReleased(t *testing.T, f *labfarm.Farm, places ...string) {
	t.Helper()
	for _, p := range places {
		who, err := f.Acquired(context.Background(), p)
		if err != nil || who != "" {
			t.Errorf("place %s: acquired by %q (%v) after the run", p, who, err)
		}
	}
	out, err := f.Client1(context.Background(), "who")
	if err != nil || len(strings.Split(strings.TrimSpace(out), "\n")) != 1 {
		t.Errorf("labgrid-client who lists acquisitions after the run (%v):\n%s", err, out)
	}
}

// Two places of a real labgrid farm, each a real sshd on this machine, benchmarked in one
// command, each board power-cycled through the farm's relay before each variant; the merged
// results have both places as labels, each place's results are kept, and both places are free
// afterwards. Then the same behind the exporter, the usual lab layout: an isolated exporter
// (proxy_required on every resource) whose boards have names only the exporter host resolves,
// so that fsbench reaches them (its runs and its wait for each board after a power cycle)
// through the exporter or not at all.
func TestLabgridFarmTwoPlaces(t *testing.T) {
	for _, proxied := range []bool{false, true} {
		name := "direct"
		if proxied {
			name = "behind the exporter"
		}
		t.Run(name, func(t *testing.T) {
			f := startFarmWith(t, labfarm.Options{Places: []string{"a", "b"}, ProxyRequired: proxied})
			if proxied {
				checkProxied(t, f, "a", "b")
			}
			farmTwoPlaces(t, f)
		})
	}
}

// checkProxied fails unless each place's NetworkService requires the proxy, as labgrid-client
// show says, and its board cannot be reached without it.
func checkProxied(t *testing.T, f *labfarm.Farm, places ...string) {
	t.Helper()
	for _, p := range places {
		out, err := f.Client1(context.Background(), "-p", p, "show")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "'proxy_required': True") || !strings.Contains(out, "'proxy': '"+f.Proxy+"'") {
			t.Fatalf("place %s: its resources do not require the proxy %s:\n%s", p, f.Proxy, out)
		}
		direct := exec.Command("ssh", "-F", f.SSHConfig, "-p", strconv.Itoa(f.Boards[p].Port), f.Names[p], "true")
		if out, err := direct.CombinedOutput(); err == nil {
			t.Fatalf("place %s: its board %s answers without the proxy: the test would not see fsbench bypass it (%s)", p, f.Names[p], out)
		}
	}
}

func farmTwoPlaces(t *testing.T, f *labfarm.Farm) {
	dir := t.TempDir()
	res := filepath.Join(dir, "res")
	cmd := farmCmd(f, dir, "--target", "labgrid:a,labgrid:b", "--size", "64M", "-n", "1", "--variants", "ext4,ext2",
		"--tests", "mkfs,mount", "--power-cycle", "-o", res)
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("two places, ext4+ext2, mkfs+mount, -n 1: %s", time.Since(t0).Round(time.Millisecond))
	if testing.Verbose() {
		t.Logf("output:\n%s", out)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"[a] ", "[b] ", "labgrid: released place a", "labgrid: released place b", "results: " + res} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	r, err := results.Load(res)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]int{}
	for _, v := range r.Variants {
		if v.Source != nil {
			labels[v.Source.Label]++
		}
		if v.Source == nil || v.Source.Board == "" || v.Source.Kernel == "" || v.Source.Card == "" {
			t.Errorf("variant %s: source %+v lacks board, card or kernel", v.Name, v.Source)
		}
	}
	if labels["a"] != 2 || labels["b"] != 2 {
		t.Errorf("labels of the merged variants: %v, want 2 each of a and b", labels)
	}
	if len(r.Values("ext4", "mkfs")) != 1 || len(r.Values("ext2@b", "mount")) != 1 {
		t.Errorf("merged measurements missing: %v", r.Variants)
	}
	for _, p := range []string{"a", "b"} {
		pr, err := results.Load(filepath.Join(res, "places", p))
		if err != nil {
			t.Fatal(err)
		}
		if pr.Remote == nil || pr.Remote.Place != p || pr.Remote.Target != "labgrid:"+p {
			t.Errorf("place %s: remote %+v", p, pr.Remote)
		}
	}
	if _, err := os.Stat(filepath.Join(res, "report.html")); err != nil {
		t.Errorf("no merged report: %v", err)
	}
	// labgrid-client power cycle is off, then on: twice per variant.
	for _, p := range []string{"a", "b"} {
		if n := f.Relay.Switches(f.Index[p]); n != 4 {
			t.Errorf("place %s: its power was switched %d times, want 4 (a cycle before each of 2 variants)", p, n)
		}
	}
	checkReleased(t, f, "a", "b")
	checkNoLeftovers(t, dir)
}

// What fsbench says when the farm is not as expected: each message says what to do.
func TestLabgridErrors(t *testing.T) {
	f := startFarm(t, "a")
	if _, err := f.Client1(context.Background(), "-p", "taken", "create"); err != nil {
		t.Fatal(err)
	}
	other := exec.Command(f.Client, "-x", f.Coordinator, "-p", "taken", "acquire")
	other.Env = append(os.Environ(), "LG_USERNAME=someone-else")
	if out, err := other.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	release := func() {
		rel := exec.Command(f.Client, "-x", f.Coordinator, "-p", "taken", "release")
		rel.Env = append(os.Environ(), "LG_USERNAME=someone-else")
		rel.Run()
	}
	defer release()
	tests := []struct {
		name, target string
		env          []string
		coordinator  string
		wantCode     int
		want         string
	}{
		{"no such place", "labgrid:nope", nil, "", 2, `has no place "nope"`},
		{"acquired by someone else", "labgrid:taken", nil, "", 2, "/someone-else: wait until it is released"},
		{"coordinator unreachable", "labgrid:a", nil, "127.0.0.1:1", 2, "cannot reach the labgrid coordinator at 127.0.0.1:1"},
		{"no labgrid-client", "labgrid:a", []string{"FSBENCH_LABGRID_CLIENT=/nonexistent/labgrid-client"}, "", 2, "pip install labgrid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := farmCmd(f, dir, "--target", tc.target, "--size", "64M", "-n", "1", "--variants", "ext2", "--tests", "mkfs", "-o", filepath.Join(dir, "res"))
			cmd.Env = append(cmd.Env, tc.env...)
			if tc.coordinator != "" {
				for i, a := range cmd.Args {
					if a == f.Coordinator {
						cmd.Args[i] = tc.coordinator
					}
				}
			}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != tc.wantCode || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s", code, tc.wantCode, tc.want, out)
			} else if testing.Verbose() {
				t.Logf("exit %d:\n%s", code, out)
			}
		})
	}
	// In a farm, a place that fails is recorded and the others go on.
	t.Run("farm with a failing place", func(t *testing.T) {
		dir := t.TempDir()
		res := filepath.Join(dir, "res")
		cmd := farmCmd(f, dir, "--target", "labgrid:a,labgrid:taken", "--size", "64M", "-n", "1", "--variants", "ext2", "--tests", "mkfs", "-o", res)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("exit %v, want 1:\n%s", err, out)
		}
		r, err := results.Load(res)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if len(r.Variants) != 1 || r.Variants[0].Source == nil || r.Variants[0].Source.Label != "a" || len(r.Values("ext2", "mkfs")) != 1 {
			t.Errorf("merged variants %+v", r.Variants)
		}
		if r.Status != results.RunFailed || !strings.Contains(r.Error, "taken: ") || !strings.Contains(r.Error, "someone-else") {
			t.Errorf("status %s, error %q: the failed place is not recorded", r.Status, r.Error)
		}
	})
	release()
	checkReleased(t, f, "a", "taken")
}

// Ctrl-C releases the place; a SIGKILL leaves it acquired, and fsbench cleanup releases it. In
// a farm, Ctrl-C stops every board's run in order, and a SIGKILL of the farm's fsbench stops them
// too (the kernel's parent-death signal): every place is released either way.
func TestLabgridInterruptReleases(t *testing.T) {
	f := startFarm(t, "a", "b")
	tests := []struct {
		name   string
		target string
		sig    syscall.Signal
		places []string
		// cleanup: the places stay acquired until fsbench cleanup releases them.
		cleanup bool
	}{
		{"one place Ctrl-C", "labgrid:a", syscall.SIGINT, []string{"a"}, false},
		{"one place killed", "labgrid:a", syscall.SIGKILL, []string{"a"}, true},
		{"farm Ctrl-C", "labgrid:a,labgrid:b", syscall.SIGINT, []string{"a", "b"}, false},
		{"farm killed", "labgrid:a,labgrid:b", syscall.SIGKILL, []string{"a", "b"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := farmCmd(f, dir, "--target", tc.target, "--size", "64M", "-n", "5", "--variants", "ext4,ext2",
				"--tests", "mkfs,mount,write", "-o", filepath.Join(dir, "res"))
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			started := func() bool {
				for _, p := range tc.places {
					if !strings.Contains(out.String(), "rep 1") || len(tc.places) > 1 && !strings.Contains(out.String(), "["+p+"] ext") {
						return false
					}
				}
				return true
			}
			deadline := time.Now().Add(3 * time.Minute)
			for !started() {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("the run did not start on the boards:\n%s", out.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			cmd.Process.Signal(tc.sig)
			cmd.Wait()
			if tc.cleanup {
				if who, _ := f.Acquired(context.Background(), "a"); who == "" {
					t.Fatalf("the place was released without its run: the SIGKILL came too late to test cleanup")
				}
			}
			if tc.sig == syscall.SIGKILL {
				// A killed fsbench leaves its ledger: cleanup stops what it recorded (the ssh
				// client to the board, a farm's children if still running) and releases its
				// places. A farm's children, stopped by the parent-death signal, release their
				// own: wait for them first.
				if !tc.cleanup {
					waitReleased(t, f, tc.places...)
				}
				c := exec.Command(binary, "cleanup")
				c.Env = append(append(os.Environ(), f.Env...), "FSBENCH_LABGRID_CLIENT="+f.Client)
				co, err := c.CombinedOutput()
				if err != nil || tc.cleanup && !strings.Contains(string(co), "released labgrid place a") {
					t.Errorf("fsbench cleanup: %v\n%s", err, co)
				}
				waitBoardStopped(t, filepath.Join(dir, "board"))
				if tc.cleanup {
					boardCommands(t, f, dir)
				}
			} else {
				for _, p := range tc.places {
					if !strings.Contains(out.String(), "labgrid: released place "+p) {
						t.Errorf("no release of %s in the output:\n%s", p, out.String())
					}
				}
			}
			checkReleased(t, f, tc.places...)
			checkNoLeftovers(t, dir)
		})
	}
}

// boardCommands fetches the partial results the board of place a kept after its host was
// killed, then cleans the board, each through the place (acquired for the command, released
// after).
func boardCommands(t *testing.T, f *labfarm.Farm, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"fetch", "labgrid:a", "-o", filepath.Join(dir, "fetched")},
		{"cleanup", "--target", "labgrid:a", "--purge"},
	} {
		args = append(args, "--labgrid-coordinator", f.Coordinator, "--ssh-config", f.SSHConfig, "--remote-dir", filepath.Join(dir, "board"))
		c := exec.Command(binary, args...)
		c.Env = append(append(os.Environ(), f.Env...), "FSBENCH_LABGRID_CLIENT="+f.Client)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Errorf("fsbench %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		checkReleased(t, f, "a")
	}
	r, err := results.Load(filepath.Join(dir, "fetched"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Remote == nil || r.Remote.Target != "labgrid:a" || len(r.Measurements) == 0 {
		t.Errorf("fetched: remote %+v, %d measurements", r.Remote, len(r.Measurements))
	}
	if runs, _ := filepath.Glob(filepath.Join(dir, "board", "runs", "*")); len(runs) != 0 {
		t.Errorf("the board keeps runs after cleanup --purge: %v", runs)
	}
}

// waitReleased waits until every place is free.
func waitReleased(t *testing.T, f *labfarm.Farm, places ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for _, p := range places {
		for {
			who, err := f.Acquired(context.Background(), p)
			if err == nil && who == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("place %s still acquired by %q (%v)", p, who, err)
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// waitBoardStopped waits until no fsbench runs any more in the board's directory (the board's
// run stops by itself when its ssh connection goes away).
func waitBoardStopped(t *testing.T, board string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		busy := false
		procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, p := range procs {
			if cwd, err := os.Readlink(p); err == nil && strings.HasPrefix(cwd, board) {
				busy = true
			}
		}
		if !busy {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("fsbench still runs on the board in %s", board)
}

// syncBuffer is a bytes.Buffer a child process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
