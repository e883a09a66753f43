package session

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	fsb "github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/mountinfo"
)

// The process's own cgroup is one for the whole process: sessions of one process (tests run
// several) share it, and the last one to close takes the process out and removes it.
var ownCgroup struct {
	sync.Mutex
	refs   int
	dir    string // the cgroup made for this process
	parent string // the cgroup it was in before
	mount  string // where fsbench mounted cgroup2 itself, when nothing had
}

// cgroupPrefix names the cgroups fsbench makes: fsbench-<pid>.
const cgroupPrefix = "fsbench-"

// JoinCgroup moves this process into a cgroup v2 of its own, made inside the one it is in (so
// that any limit the user put on fsbench still holds), so that fsbench and every process it
// starts from now on (mkfs, the card server, QEMU, also the ones that end within a test) are
// counted together: the noise sentinel reads the cgroup's CPU time and pressure, and blames
// only the rest on other work. It returns the cgroup's directory. The cgroup is recorded in
// the ledger before it is made, and Close takes the process back out and removes it; after a
// killed run, cleanup removes it. Where the kernel has cgroup v2 but nothing mounted it (a
// board with busybox for init), fsbench mounts it in its work directory for the run. It fails,
// changing nothing, where there is no cgroup v2 (a kernel without it, a read-only cgroup mount
// in a container): the caller then goes on without one and says so.
func (s *Session) JoinCgroup() (string, error) {
	ownCgroup.Lock()
	defer ownCgroup.Unlock()
	if ownCgroup.refs == 0 {
		parent, err := currentCgroup("/proc/self")
		if errors.Is(err, errNoCgroup2Mount) {
			parent, err = s.mountCgroup2()
		}
		if err != nil {
			return "", err
		}
		dir := filepath.Join(parent, cgroupPrefix+strconv.Itoa(os.Getpid()))
		if err := s.Ledger.AddCgroup(dir); err != nil {
			unmountCgroup2()
			return "", err
		}
		if err := makeCgroup(dir); err != nil {
			s.Ledger.RemoveCgroup(dir)
			unmountCgroup2()
			return "", err
		}
		if err := moveTo(parent, dir); err != nil {
			os.Remove(dir)
			s.Ledger.RemoveCgroup(dir)
			unmountCgroup2()
			return "", err
		}
		ownCgroup.dir, ownCgroup.parent = dir, parent
	} else if err := s.Ledger.AddCgroup(ownCgroup.dir); err != nil {
		return "", err
	}
	ownCgroup.refs++
	dir := ownCgroup.dir
	s.OnClose("cgroup "+dir, func() error { return s.leaveCgroup(dir) })
	return dir, nil
}

// leaveCgroup is JoinCgroup's undo: the last session of the process moves it back to the
// cgroup it came from and removes its own.
func (s *Session) leaveCgroup(dir string) error {
	ownCgroup.Lock()
	defer ownCgroup.Unlock()
	ownCgroup.refs--
	if ownCgroup.refs > 0 {
		return s.Ledger.RemoveCgroup(dir)
	}
	if err := moveTo(dir, ownCgroup.parent); err != nil {
		return err
	}
	if err := removeCgroup(dir, 5*time.Second); err != nil {
		return err
	}
	ownCgroup.dir, ownCgroup.parent = "", ""
	if err := s.Ledger.RemoveCgroup(dir); err != nil {
		return err
	}
	return unmountCgroup2()
}

// errNoCgroup2Mount: the kernel has cgroup v2, but nothing mounted it (a board whose init is
// busybox, not systemd).
var errNoCgroup2Mount = errors.New("no cgroup v2 is mounted")

// mountCgroup2 mounts the cgroup v2 hierarchy in the work directory, for the run only, where
// nothing mounted it: the hierarchy is the kernel's one and only, wherever it is mounted, so
// this changes nothing for anyone else. It returns the cgroup the process is in.
func (s *Session) mountCgroup2() (string, error) {
	mp := filepath.Join(s.Work, "cgroup2")
	if err := s.Mountpoint(mp); err != nil {
		return "", err
	}
	if err := fsb.MountKernelFS("cgroup2", mp, "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC); err != nil {
		return "", fmt.Errorf("no cgroup v2 is mounted, and mounting one on %s failed: %w", mp, err)
	}
	ownCgroup.mount = mp
	dir, err := currentCgroup("/proc/self")
	if err != nil {
		unmountCgroup2()
	}
	return dir, err
}

// unmountCgroup2 unmounts the hierarchy mountCgroup2 mounted, if it did.
func unmountCgroup2() error {
	if ownCgroup.mount == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := mountinfo.Unmount(ctx, ownCgroup.mount, mountinfo.UnmountOptions{}); err != nil {
		return err
	}
	ownCgroup.mount = ""
	return nil
}

// makeCgroup makes dir, taking over one an earlier process with the same pid left empty.
func makeCgroup(dir string) error {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		if os.Remove(dir) == nil { // an empty cgroup: a dead process's with this pid
			err = os.Mkdir(dir, 0o755)
		}
	}
	if err != nil {
		return fmt.Errorf("making a cgroup of fsbench's own: %w", err)
	}
	return nil
}

// moveTo moves this process (all its threads) from cgroup from to cgroup to.
func moveTo(from, to string) error {
	pid := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(to, "cgroup.procs"), []byte(pid), 0); err != nil {
		return fmt.Errorf("moving fsbench from cgroup %s to %s: %w", from, to, err)
	}
	return nil
}

// removeCgroup removes an empty cgroup, waiting up to wait for processes that are ending to
// leave it (a process leaves its cgroup once it has been reaped).
func removeCgroup(dir string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			if pids := cgroupPIDs(dir); len(pids) > 0 {
				return fmt.Errorf("removing cgroup %s: processes %s still run in it: %w", dir, strings.Join(pids, ", "), err)
			}
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroupPIDs lists the processes in a cgroup.
func cgroupPIDs(dir string) []string {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return strings.Fields(string(b))
}

// currentCgroup returns the directory of the cgroup v2 that the process at procDir
// (/proc/self; /proc/filesystems is read beside it) is in: its path in /proc/<pid>/cgroup ("0::/user.slice/..."), under the cgroup2
// mount that shows it (also the "unified" one of a hybrid system, whose controllers are still
// cgroup v1's).
func currentCgroup(procDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(procDir, "cgroup"))
	if err != nil {
		return "", fmt.Errorf("no cgroups here: %w", err)
	}
	path := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			path = p
		}
	}
	if path == "" {
		// The kernel shows the v2 line only once cgroup2 has been mounted (cgrp_dfl_visible):
		// a kernel that has it but whose init never mounted it shows none.
		if fsList, err := os.ReadFile(filepath.Join(filepath.Dir(procDir), "filesystems")); err == nil && hasFSType(string(fsList), "cgroup2") {
			return "", errNoCgroup2Mount
		}
		return "", errors.New("this kernel has no cgroup v2 (no cgroup2 in /proc/filesystems)")
	}
	ms, err := mountinfo.Read(filepath.Join(procDir, "mountinfo"))
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if m.FSType != "cgroup2" {
			continue
		}
		// The mount shows the hierarchy from m.Root down: the process's cgroup must be in it.
		if m.Root != "/" && path != m.Root && !strings.HasPrefix(path, m.Root+"/") {
			continue
		}
		dir := filepath.Join(m.MountPoint, strings.TrimPrefix(path, strings.TrimSuffix(m.Root, "/")))
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
			return dir, nil
		}
	}
	return "", errNoCgroup2Mount
}

// hasFSType reports whether /proc/filesystems text lists fstype.
func hasFSType(procFilesystems, fstype string) bool {
	for _, line := range strings.Split(procFilesystems, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[len(f)-1] == fstype {
			return true
		}
	}
	return false
}

// undoCgroup removes a killed run's cgroup once its processes are gone; one that still holds
// processes (children of the run that were not recorded and still run) stays, for the next
// cleanup.
func undoCgroup(dir string, act func(string, ...any)) error {
	if !strings.HasPrefix(filepath.Base(dir), cgroupPrefix) {
		return fmt.Errorf("the ledger names %s as a cgroup, which is not one fsbench makes: left alone", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := removeCgroup(dir, time.Second); err != nil {
		return err
	}
	act("removed cgroup %s", dir)
	return nil
}
