package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
)

// fakeSSH is an ssh client that runs the remote command on this machine: the whole remote path
// (putting the binary on the board, its facts, the run request, the streamed progress, the
// results fetched back, the board's copy removed) runs for real, only without a network.
func fakeSSH(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ssh")
	script := "#!/bin/sh\n# a fake ssh: skip the options up to --, then the destination, and run the command here\n" +
		"while [ \"$1\" != \"--\" ]; do shift; done\nshift; shift\nexec sh -c \"$1\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSSHTargetFakeTransport(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	remote := filepath.Join(dir, "board")
	cmd := exec.Command(binary, "run", "--target", "ssh://root@board.example:2222", "--remote-dir", remote,
		"--size", "320M", "-n", "1", "--variants", "ext4,squashfs-lzo", "--tests", "mkfs,write,read",
		"--dataset-size", "8M", "--video-size", "8M", "-o", filepath.Join(dir, "res"), "--remote-binary", binary)
	cmd.Env = append(os.Environ(), "FSBENCH_SSH="+fakeSSH(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"[board.example] ", "ext4 rep 1 write", "results: " + filepath.Join(dir, "res")} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	r, err := results.Load(filepath.Join(dir, "res"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Remote == nil || r.Remote.Target != "ssh://root@board.example:2222" || r.Remote.Arch == "" || r.Status != results.RunComplete {
		t.Errorf("remote %+v status %s", r.Remote, r.Status)
	}
	if len(r.Values("ext4", "write")) != 1 || len(r.Values("squashfs-lzo", "read")) != 1 {
		t.Errorf("measurements missing: %d", len(r.Measurements))
	}
	if _, err := os.Stat(filepath.Join(dir, "res", "report.html")); err != nil {
		t.Errorf("no report on the host: %v", err)
	}
	// The board keeps its binary, not the run.
	runs, _ := filepath.Glob(filepath.Join(remote, "runs", "*"))
	bins, _ := filepath.Glob(filepath.Join(remote, "bin", "fsbench-*"))
	if len(runs) != 0 || len(bins) != 1 {
		t.Errorf("on the board: runs %v, binaries %v", runs, bins)
	}
	checkNoLeftovers(t, dir)
}

// After the host dies mid-run, the board's partial results are fetched, and the board is
// cleaned: its kept run removed with --purge.
func TestBoardFetchAndCleanup(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	p := startBoard(t, dir)
	p.waitFor(t, "board measurements", func() bool { return boardMeasured(dir) >= 3 })
	p.signal(t, syscall.SIGKILL)
	p.wait(t)
	board := filepath.Join(dir, "board")
	// The board stops by itself when its input ends; wait for it, then clean the host's own
	// record of the killed run.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && len(leftovers(board, nil)) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := exec.Command(binary, "cleanup").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ssh := "FSBENCH_SSH=" + fakeSSH(t)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), ssh)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("fsbench %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("fetch", "ssh://board.example", "-o", filepath.Join(dir, "fetched"), "--remote-dir", board, "--remote-binary", binary)
	r, err := results.Load(filepath.Join(dir, "fetched"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Status != results.RunInterrupted || len(r.Measurements) < 3 || r.Remote == nil {
		t.Errorf("fetched: status %s, %d measurements, remote %+v", r.Status, len(r.Measurements), r.Remote)
	}
	out = run("cleanup", "--target", "ssh://board.example", "--remote-dir", board, "--remote-binary", binary)
	if !strings.Contains(out, "keeps 1 run(s)") {
		t.Errorf("cleanup does not list the kept run:\n%s", out)
	}
	// Something of the user's under runs/: --purge removes only what carries fsbench's marks.
	notes := filepath.Join(board, "runs", "notes")
	if err := os.MkdirAll(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notes, "thesis.tex"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = run("cleanup", "--target", "ssh://board.example", "--remote-dir", board, "--remote-binary", binary, "--purge")
	if runs, _ := filepath.Glob(filepath.Join(board, "runs", "*")); len(runs) != 1 || runs[0] != notes {
		t.Errorf("runs left after --purge: %v, want only %s", runs, notes)
	}
	if b, _ := os.ReadFile(filepath.Join(notes, "thesis.tex")); string(b) != "mine" || !strings.Contains(out, "left "+notes+" alone") {
		t.Errorf("the user's directory under runs/: %q; cleanup said:\n%s", b, out)
	}
	os.RemoveAll(notes)
	for _, l := range leftovers(board, nil) {
		t.Errorf("left on the board: %s", l)
	}
}

// probe and advise reach a board's device the same way.
func TestBoardProbe(t *testing.T) {
	needRoot(t)
	dev, _ := victim(t)
	dir := t.TempDir()
	cmd := exec.Command(binary, "advise", "ssh://board.example"+dev, "--remote-dir", filepath.Join(dir, "board"), "--remote-binary", binary,
		"--max-block", "1M", "--max-align", "4M", "-o", filepath.Join(dir, "probe"), "-q")
	cmd.Env = append(os.Environ(), "FSBENCH_SSH="+fakeSSH(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "probe", "probe.json")); err != nil {
		t.Errorf("no probe.json came back: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "mkfs.ext4") {
		t.Errorf("no advice:\n%s", out)
	}
}
