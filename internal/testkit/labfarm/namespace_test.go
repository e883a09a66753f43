package labfarm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/testkit/sessiontest"
)

// TestExporterHostDropsCopiedMounts: an exporter host's sshd runs in a mount namespace of its
// own, made while a filesystem of a test beside it is mounted (an ext4 on a loop device). Its
// namespace has /etc/hosts bound to the farm's file, and no copy of that mount (which would keep
// the loop device busy, unmounted here, until the sshd ended). Without the drop, it fails.
func TestExporterHostDropsCopiedMounts(t *testing.T) {
	sessiontest.RequireRoot(t)
	if _, err := FindSSHD(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "beside.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	l := sessiontest.Attach(t, img, session.LoopOptions{})
	sessiontest.MkfsExt4(t, l.Path)
	mnt := filepath.Join(dir, "beside")
	sessiontest.MountExt4(t, l.Path, mnt)

	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 board-behind-the-exporter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := startSSHD(filepath.Join(dir, "sshd"), hosts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	pid := s.p.cmd.Process.Pid
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	var hostsBound bool
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		switch f[4] {
		case mnt:
			t.Errorf("the exporter host's namespace holds a copy of %s: %s", mnt, line)
		case "/etc/hosts":
			hostsBound = true
		}
	}
	if !hostsBound {
		t.Errorf("the exporter host's namespace has no /etc/hosts of its own:\n%s", info)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/etc/hosts", pid)); err != nil || !strings.Contains(string(b), "board-behind-the-exporter") {
		t.Errorf("the exporter host's /etc/hosts: %q, %v: want the farm's", b, err)
	}
}
