package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// End-to-end tests of the binary: signals, exit codes, and what a killed run leaves behind.
// They build fsbench once and run it as a separate process, as a user would.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fsbench-e2e")
	if err != nil {
		panic(err)
	}
	os.Chmod(dir, 0o755) // so that the unprivileged-user test can run it
	binary = filepath.Join(dir, "fsbench")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("building fsbench: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes loop devices and mounts filesystems")
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		config   string
		wantCode int
		wantErr  string
	}{
		{"unknown flag", []string{"run", "--sise", "1G"}, "", 2, "unknown flag"},
		{"bad size", []string{"run", "--size", "12X"}, "", 2, "--size"},
		{"unknown variant", []string{"run", "--variants", "ext5"}, "", 2, "ext5"},
		{"config typo names the line", []string{"run", "-c", "CONFIG"}, "size = \"512M\"\n\n[[variant]]\nfs = \"ext4\"\nmout = \"noatime\"\n", 2, ":5:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.config != "" {
				p := filepath.Join(t.TempDir(), "matrix.toml")
				os.WriteFile(p, []byte(tc.config), 0o644)
				for i, a := range args {
					if a == "CONFIG" {
						args[i] = p
					}
				}
			}
			var stderr bytes.Buffer
			cmd := exec.Command(binary, args...)
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.wantCode {
				t.Fatalf("exit = %v, want code %d; stderr:\n%s", err, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr does not mention %q:\n%s", tc.wantErr, stderr.String())
			}
		})
	}
}

// Without root, run says so and stops before touching anything.
func TestRunNeedsRoot(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and setpriv (util-linux) to run fsbench as an unprivileged user")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", binary, "run", "-o", filepath.Join(dir, "res"))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v, want 1; output:\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("needs root")) || !bytes.Contains(out, []byte("sudo")) {
		t.Errorf("output does not say root is needed and how:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "res")); err == nil {
		t.Errorf("a results directory was made before the root check")
	}
}

func TestList(t *testing.T) {
	out, err := exec.Command(binary, "list").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"ext4", "f2fs-tools", "erofs", "read_remove_write", "squashfs-lzo"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("fsbench list does not mention %q:\n%s", want, out)
		}
	}
}

// startRun starts a small run in the background and waits until it has saved at least one
// measurement, so that a signal arrives in the middle of the run.
func startRun(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, "run", "--size", "320M", "-n", "3", "--variants", "ext4,xfs",
		"--dataset-size", "8M", "--video-size", "12M", "-o", filepath.Join(dir, "res"))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("fsbench output:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if n := countMeasurements(filepath.Join(dir, "res", "results.json")); n >= 3 {
			return cmd
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the run saved no measurement within 2 minutes")
	return nil
}

func countMeasurements(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var r struct {
		Measurements []json.RawMessage `json:"measurements"`
	}
	if json.Unmarshal(b, &r) != nil {
		return 0
	}
	return len(r.Measurements)
}

func TestCtrlCCleansUp(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	cmd := startRun(t, dir)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit after SIGINT = %v, want code 130", err)
	}
	checkNoLeftovers(t, dir)
	b, err := os.ReadFile(filepath.Join(dir, "res", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"status": "interrupted"`)) {
		t.Errorf("results.json does not say interrupted")
	}
	if countMeasurements(filepath.Join(dir, "res", "results.json")) < 3 {
		t.Errorf("completed cells were lost")
	}
}

func TestKilledRunIsCleanedUpByTheNext(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	cmd := startRun(t, dir)
	// Wait until the filesystem is mounted, then kill without any chance to clean up.
	deadline := time.Now().Add(time.Minute)
	for len(mountsUnder(dir)) < 2 && time.Now().Before(deadline) { // the tmpfs and the test fs
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if len(mountsUnder(dir)) == 0 {
		t.Fatal("test set-up: the killed run left nothing mounted, nothing to check")
	}
	out, err := exec.Command(binary, "cleanup").CombinedOutput()
	if err != nil {
		t.Fatalf("fsbench cleanup: %v\n%s", err, out)
	}
	t.Logf("fsbench cleanup:\n%s", out)
	checkNoLeftovers(t, dir)
	// The killed run's block-trace instances (kernel buffers) are gone too.
	if left, _ := filepath.Glob(fmt.Sprintf("/sys/kernel/tracing/instances/fsbench-%d-*", cmd.Process.Pid)); len(left) > 0 {
		t.Errorf("trace instances of the killed run left: %v", left)
	}
}

func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var ms []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir) {
			ms = append(ms, fields[4])
		}
	}
	return ms
}

// loopsOver lists the loop devices attached to files under dir, as "loopN over FILE".
func loopsOver(dir string) []string {
	var out []string
	loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, p := range loops {
		b, _ := os.ReadFile(p)
		if f := strings.TrimSpace(string(b)); strings.HasPrefix(f, dir) {
			out = append(out, fmt.Sprintf("%s over %s", filepath.Base(filepath.Dir(filepath.Dir(p))), f))
		}
	}
	return out
}

func checkNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	for _, m := range mountsUnder(dir) {
		t.Errorf("still mounted: %s", m)
	}
	for _, l := range loopsOver(dir) {
		t.Errorf("loop device still attached: %s", l)
	}
	if imgs, _ := filepath.Glob(filepath.Join(dir, "res", ".work", "*.img")); len(imgs) > 0 {
		t.Errorf("image files left: %v", imgs)
	}
}
