// Package procid names a process for good. A pid is given to another process once its own
// ends; a pid with the process's start time, and the boot it ran in, is not. What fsbench leaves
// on disk in case it is killed (a run's cleanup ledger, a capacity check's undo log, an emulated
// board's state) records such an ID, and a later fsbench asks whether that process still runs
// before it undoes what the record names.
package procid

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procRoot is where procfs is mounted.
const procRoot = "/proc"

// ID is one process: its pid, its start time (field 22 of /proc/<pid>/stat, in clock ticks
// since boot) and the boot it runs in ("" when unknown: the boot is then not compared).
type ID struct {
	PID       int
	StartTime uint64
	BootID    string
}

// Stat is what this package reads of /proc/<pid>/stat.
type Stat struct {
	State     byte   // field 3: R, S, D, ..., Z for a zombie, X for a dead process
	StartTime uint64 // field 22
}

// Exited reports whether the process has ended and only waits to be reaped (a zombie) or is
// being torn down: it has released its descriptors and files, and what it recorded is left for
// others to undo.
func (s Stat) Exited() bool { return s.State == 'Z' || s.State == 'X' }

// Read reads the state and start time of a process.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return Parse(string(b))
}

// Parse parses the contents of /proc/<pid>/stat. The command name (field 2) is in parentheses
// and may itself hold spaces and parentheses, so fields are counted from the last ')'.
func Parse(s string) (Stat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("parse /proc/<pid>/stat: no ')' in %q", s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("parse /proc/<pid>/stat: too few fields in %q", s)
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return Stat{}, fmt.Errorf("parse /proc/<pid>/stat: start time: %w", err)
	}
	return Stat{State: f[0][0], StartTime: st}, nil
}

// Boot is the id of the running boot (/proc/sys/kernel/random/boot_id); "" when unreadable.
func Boot() string {
	b, err := os.ReadFile(filepath.Join(procRoot, "sys", "kernel", "random", "boot_id"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Self is this process's ID.
func Self() (ID, error) {
	pid := os.Getpid()
	st, err := Read(pid)
	if err != nil {
		return ID{}, err
	}
	return ID{PID: pid, StartTime: st.StartTime, BootID: Boot()}, nil
}

// Exists reports whether some process has pid, whichever it is.
func Exists(pid int) bool {
	_, err := os.Stat(filepath.Join(procRoot, strconv.Itoa(pid)))
	return err == nil
}

// Running reports whether the process id names still runs and, when it does not, why.
func (id ID) Running() (bool, string) {
	if id.PID <= 0 {
		return false, "has no pid"
	}
	if cur := Boot(); id.BootID != "" && cur != "" && id.BootID != cur {
		return false, "belongs to an earlier boot"
	}
	st, err := Read(id.PID)
	if err != nil {
		// Gone (ENOENT), or unreadable: a process we cannot see is not one we can wait for.
		return false, "is gone"
	}
	if st.StartTime != id.StartTime {
		return false, "is gone (its pid now belongs to another process)"
	}
	if st.Exited() {
		return false, "has exited"
	}
	return true, ""
}

// ReadDir lists dir, a directory where processes keep such records: a directory that does not
// exist holds none (no process has written one yet).
func ReadDir(dir string) ([]os.DirEntry, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return ents, err
}
