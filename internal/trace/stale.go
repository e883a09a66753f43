package trace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// CleanStale removes the trace instances of fsbench processes that are gone (killed in the
// middle of a test: Stop never ran). Each instance holds per-CPU ring buffers in kernel memory,
// so without this every killed run would leak some. Only instances named fsbench-<pid>-<n>
// whose process no longer exists are touched; it returns what it removed.
func CleanStale() ([]string, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	root, err := findTracefs(mountinfoPath)
	if err != nil || root == "" {
		return nil, err
	}
	return cleanStaleIn(filepath.Join(root, "instances"), processGone)
}

func cleanStaleIn(dir string, gone func(pid int) bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		pid, ok := instancePID(e.Name())
		if !ok || !gone(pid) {
			continue
		}
		// An instance directory is removed with rmdir; tracefs frees its buffers then.
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil {
			errs = append(errs, fmt.Errorf("removing the trace instance %s of a gone process: %w", p, err))
			continue
		}
		removed = append(removed, "removed trace instance "+p)
	}
	return removed, errors.Join(errs...)
}

// instancePID parses fsbench-<pid>-<n>.
func instancePID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "fsbench-")
	if !ok {
		return 0, false
	}
	pidText, seq, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(pidText)
	if _, serr := strconv.Atoi(seq); err != nil || serr != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// processGone reports whether no process has this pid (signal 0 probes without sending).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
