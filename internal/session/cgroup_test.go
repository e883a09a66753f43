package session

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCurrentCgroup(t *testing.T) {
	tests := []struct {
		name      string
		cgroup    string // /proc/self/cgroup
		mountinfo string // with MNT for the mount point
		dir       string // the cgroup made under MNT
		want      string // relative to MNT; "" for an error
	}{
		{"unified", "0::/user.slice/session-1.scope\n", "30 1 0:26 / MNT rw - cgroup2 cgroup2 rw\n", "user.slice/session-1.scope", "user.slice/session-1.scope"},
		{"hybrid", "4:memory:/x\n0::/\n", "30 1 0:26 / MNT rw - cgroup2 cgroup2 rw\n", "", ""},
		{"a namespace's view", "0::/job/7\n", "30 1 0:26 /job MNT rw - cgroup2 cgroup2 rw\n", "7", "7"},
		{"a mount of another branch", "0::/jobs\n", "30 1 0:26 /job MNT rw - cgroup2 cgroup2 rw\n", "", "error"},
		{"v1 only", "4:memory:/x\n", "30 1 0:26 / MNT rw - cgroup cgroup rw,memory\n", "", "error"},
		{"cgroup2 never mounted", "", "30 1 0:26 / MNT rw - tmpfs tmpfs rw\n", "", "unmounted"},
		{"no cgroup2 mounted", "0::/\n", "30 1 0:26 / MNT rw - tmpfs tmpfs rw\n", "", "error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			proc, mnt := filepath.Join(root, "proc", "self"), filepath.Join(root, "cg")
			os.MkdirAll(proc, 0o755)
			os.WriteFile(filepath.Join(root, "proc", "filesystems"), []byte("nodev\tcgroup\nnodev\tcgroup2\n\text4\n"), 0o644)
			os.MkdirAll(filepath.Join(mnt, tc.dir), 0o755)
			os.WriteFile(filepath.Join(mnt, tc.dir, "cgroup.procs"), nil, 0o644)
			os.WriteFile(filepath.Join(proc, "cgroup"), []byte(tc.cgroup), 0o644)
			os.WriteFile(filepath.Join(proc, "mountinfo"), []byte(strings.ReplaceAll(tc.mountinfo, "MNT", mnt)), 0o644)
			got, err := currentCgroup(proc)
			switch {
			case tc.want == "unmounted" && !errors.Is(err, errNoCgroup2Mount):
				t.Errorf("currentCgroup = %q, %v; want %v", got, err, errNoCgroup2Mount)
			case tc.want == "unmounted":
			case tc.want == "error" && err == nil:
				t.Errorf("currentCgroup = %s, want an error", got)
			case tc.want != "error" && (err != nil || got != filepath.Join(mnt, tc.want)):
				t.Errorf("currentCgroup = %q, %v; want %s", got, err, filepath.Join(mnt, tc.want))
			}
		})
	}
}

// requireCgroup2 skips unless this process can make cgroups v2.
func requireCgroup2(t *testing.T) string {
	t.Helper()
	requireRoot(t)
	dir, err := currentCgroup("/proc/self")
	if err != nil {
		t.Skipf("no cgroup v2 here: %v", err)
	}
	return dir
}

// TestJoinCgroup: a run's processes go into a cgroup of its own (children too), and Close takes
// the process back out and removes it.
func TestJoinCgroup(t *testing.T) {
	parent := requireCgroup2(t)
	base := t.TempDir()
	s, err := OpenSession(SessionOptions{Dir: filepath.Join(base, "res"), LedgerDir: filepath.Join(base, "ledgers")})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := s.JoinCgroup()
	if err != nil {
		s.Close()
		t.Fatal(err)
	}
	if filepath.Dir(dir) != parent {
		t.Errorf("cgroup %s is not inside %s, the one the process was in", dir, parent)
	}
	out, err := exec.Command("cat", "/proc/self/cgroup").Output()
	if err != nil || !strings.Contains(string(out), "/"+filepath.Base(dir)+"\n") {
		t.Errorf("a child's /proc/self/cgroup = %q (%v), want it in %s", out, err, dir)
	}
	if rec := readLedgerT(t, s.Ledger.Path()); len(rec.Cgroups) != 1 || rec.Cgroups[0] != dir {
		t.Errorf("ledger cgroups = %q, want %s", rec.Cgroups, dir)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s still there after Close (%v)", dir, err)
	}
	if now, _ := currentCgroup("/proc/self"); now != parent {
		t.Errorf("after Close the process is in %s, want %s", now, parent)
	}
}

// TestCleanupStaleCgroup: a run killed in its cgroup leaves it; cleanup removes it.
func TestCleanupStaleCgroup(t *testing.T) {
	requireCgroup2(t)
	base := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=cgroup", helperDirEnv+"="+base)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	ready := make(chan string, 1)
	go func() {
		for lines.Scan() {
			ready <- lines.Text()
		}
		close(ready)
	}()
	var dir string
	select {
	case line := <-ready:
		var ok bool
		if dir, ok = strings.CutPrefix(line, "READY "); !ok {
			t.Fatalf("helper: %q", line)
		}
	case <-time.After(time.Minute):
		t.Fatal("helper did not get ready within a minute")
	}
	t.Cleanup(func() { os.Remove(dir) })
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the killed run's cgroup is gone already: %v", err)
	}
	acts, err := CleanupStale(filepath.Join(base, "ledgers"), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(acts, "\n"), "removed cgroup "+dir) {
		t.Errorf("actions %q do not say the cgroup was removed", acts)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s still there after cleanup (%v)", dir, err)
	}
}

// TestJoinCgroupUnmounted: where nothing mounted cgroup2 (a board with busybox for init), the
// run mounts it for itself, and takes it away again.
func TestJoinCgroupUnmounted(t *testing.T) {
	requireCgroup2(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare not found (Debian package util-linux)")
	}
	base := t.TempDir()
	cmd := exec.Command(unshare, "-m", "--propagation", "private", os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=cgroup-unmounted", helperDirEnv+"="+base)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CLOSED") {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "JOINED "+filepath.Join(base, "res")) || !strings.Contains(string(out), "/fsbench-") {
		t.Errorf("the helper did not run in a cgroup of its own under a cgroup2 it mounted:\n%s", out)
	}
	t.Logf("%s", out)
}
