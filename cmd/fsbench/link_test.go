package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/labfarm"
)

// A link to the board that goes silent without closing (here: the host's ssh client stopped
// with SIGSTOP, so that its TCP connection stays open and says nothing, as behind a pulled cable
// or a frozen host) stops the board's run in order: the host feeds the board's watchdog every
// quarter of --link-timeout, and the board stops once nothing has come for --link-timeout. The
// board is a real OpenSSH server on 127.0.0.1, the board's fsbench a real run on loop devices.
// The bound checked: the board is clean (no fsbench running there, nothing mounted, no loop
// device) within the link timeout plus linkCleanup after the link went silent.
func TestBoardNoticesSilentLink(t *testing.T) {
	needRoot(t)
	if _, err := labfarm.FindSSHD(); err != nil {
		t.Skip(err)
	}
	const link = 10 * time.Second
	// linkCleanup is what the board may take, once it noticed, to stop the test in progress,
	// unmount and detach (a write of the 8 MiB dataset is the longest step here).
	const linkCleanup = 30 * time.Second
	dir := t.TempDir()
	sshd, err := labfarm.StartSSHD(filepath.Join(dir, "sshd"))
	if err != nil {
		t.Fatal(err)
	}
	defer sshd.Stop()
	b := sshd.Board
	known := filepath.Join(dir, "known_hosts")
	cfg := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(known, []byte(fmt.Sprintf("[%s]:%d %s\n", b.Address, b.Port, b.HostKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf("Host %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n",
		b.Address, b.Key, known)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	board := filepath.Join(dir, "board")
	p := &proc{cmd: exec.Command(binary, "run", "--target", fmt.Sprintf("ssh://root@%s:%d", b.Address, b.Port), "--ssh-config", cfg,
		"--remote-dir", board, "--remote-binary", binary, "--link-timeout", link.String(),
		"--size", "64M", "-n", "50", "--variants", "ext4,ext2", "--tests", "mkfs,mount,write", "--dataset-size", "8M",
		"-o", filepath.Join(dir, "res")), out: &syncBuf{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	var client int
	t.Cleanup(func() {
		if client != 0 {
			syscall.Kill(client, syscall.SIGKILL)
		}
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	p.waitFor(t, "the board's first measurement", func() bool { return boardMeasured(dir) >= 1 })
	client = childWith(p.cmd.Process.Pid, "--stop-on-stdin-eof")
	if client == 0 {
		t.Fatalf("no ssh client running the board's fsbench:\n%s", tail(p.out.String(), 20))
	}
	if err := syscall.Kill(client, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	var left []string
	for {
		left = boardBusy(board)
		if len(left) == 0 || time.Since(cut) > link+linkCleanup+time.Minute {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(cut)
	t.Logf("the link went silent; the board was clean %s later (link timeout %s, bound %s)", took.Round(100*time.Millisecond), link, link+linkCleanup)
	switch {
	case len(left) > 0:
		t.Fatalf("the board is not clean %s after the link went silent: %v", took.Round(time.Second), left)
	case took > link+linkCleanup:
		t.Errorf("the board took %s to be clean, over the bound of %s", took.Round(100*time.Millisecond), link+linkCleanup)
	case took < link/2:
		t.Errorf("the board stopped %s after the link went silent, before its watchdog could have fired: something else stopped it", took)
	}
	runs, _ := filepath.Glob(filepath.Join(board, "runs", "*", "res"))
	if len(runs) != 1 {
		t.Fatalf("the board's runs: %v", runs)
	}
	r, err := results.Load(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != results.RunInterrupted || !strings.Contains(r.Error, "went silent") {
		t.Errorf("the board's run: status %s, error %q; want interrupted because the link went silent", r.Status, r.Error)
	}
	// The host's side: its ssh client ends (as ServerAliveInterval would end it), it fetches
	// what the board kept and says the run was interrupted.
	syscall.Kill(client, syscall.SIGKILL)
	res := p.wait(t)
	if res.code == 0 {
		t.Errorf("the host's fsbench exited 0 after losing its board:\n%s", tail(res.out, 20))
	}
	checkNoLeftovers(t, dir)
}

// childWith is the pid of a child of parent whose command line holds word, or 0.
func childWith(parent int, word string) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(st), "cmdline"))
		if strings.Contains(string(cmdline), word) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			return pid
		}
	}
	return 0
}

// boardBusy lists what a board run under dir still holds: a process working there, a mount,
// a loop device over one of its files.
func boardBusy(dir string) []string {
	var out []string
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, c := range cwds {
		if d, err := os.Readlink(c); err == nil && strings.HasPrefix(d, dir) {
			out = append(out, "process "+filepath.Base(filepath.Dir(c))+" in "+d)
		}
	}
	for _, m := range mountsUnder(dir) {
		out = append(out, "mounted: "+m)
	}
	for _, l := range loopsOver(dir) {
		out = append(out, "loop device "+l)
	}
	return out
}
