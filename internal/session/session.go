package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// MarkerName is the file that makes a directory an fsbench results directory. fsbench writes
// it first when it makes the directory, and never writes into (or deletes from) a directory
// that lacks it, except an empty one, which it claims.
const MarkerName = ".fsbench"

// marker is what MarkerName holds: who made the directory, and which run holds it now.
type marker struct {
	Fsbench string    `json:"fsbench"` // always "results directory"
	Created time.Time `json:"created"`
	PID     int       `json:"pid"`     // the run that holds (or last held) the directory
	Started time.Time `json:"started"` // when that run started
}

// SessionOptions say where a run's results go.
type SessionOptions struct {
	// Dir is the exact results directory (-o); empty makes <Root>/<timestamp>.
	Dir  string
	Root string
	// Force lets a run reuse a results directory an earlier fsbench run made. Even then nothing
	// is deleted: the new run's files replace the old ones of the same names.
	Force bool
	// LedgerDir is where the ledger goes (DefaultLedgerDir when empty).
	LedgerDir string
	// WorkRoot is where the work directory is made; empty: inside the results directory.
	WorkRoot string
	// Log receives warnings (another run active on the machine); may be nil.
	Log func(format string, args ...any)
}

// BusyError says that another fsbench run holds the results directory.
type BusyError struct {
	Dir string
	PID int
}

func (e *BusyError) Error() string {
	who := "another fsbench run"
	if e.PID > 0 {
		who += fmt.Sprintf(" (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s is in use by %s: wait for it to finish, or give this run its own -o", e.Dir, who)
}

// ExistsError refuses a results directory that holds an earlier run or files fsbench did not
// write. It is the user's to fix, so the command line reports it as a usage error.
type ExistsError struct{ Dir, Why string }

func (e *ExistsError) Error() string { return e.Dir + ": " + e.Why }

// ExitCode makes the command line exit with 2: a choice of directory, not a failure.
func (e *ExistsError) ExitCode() int { return 2 }

// Session is what a run owns on this machine and always undoes: its results directory (made or
// claimed, marked and locked against a second run), the ledger of everything it creates (so
// that `fsbench cleanup` or the next run can undo a killed run's work), a work directory inside
// the results directory, and the cleanups, run newest first by Close.
type Session struct {
	Dir    string // the results directory
	Work   string // the work directory, inside Dir; removed by Close
	Ledger *Ledger
	// Created is true when this session made Dir (Discard may then remove it).
	Created  bool
	lock     *os.File
	cleanups []cleanup
	log      func(string, ...any)
}

type cleanup struct {
	what string
	do   func() error
}

// OpenSession claims the results directory and opens the ledger. It never deletes anything: a
// directory that exists must be empty or an fsbench results directory (with Force), and is
// locked for the session. The work directory is new, made with a unique name, and recorded.
func OpenSession(opt SessionOptions) (s *Session, err error) {
	logf := opt.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ledgerDir := opt.LedgerDir
	if ledgerDir == "" {
		ledgerDir = DefaultLedgerDir
	}
	if others := liveLedgers(ledgerDir); len(others) > 0 {
		logf("warning: another fsbench run is active on this machine (pid %s): concurrent runs distort each other's figures",
			strings.Join(others, ", "))
	}
	dir := opt.Dir
	if dir == "" {
		if dir, err = newTimestampDir(opt.Root); err != nil {
			return nil, err
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	s = &Session{Dir: dir, log: logf}
	if s.Created, s.lock, err = claim(dir, opt.Force); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.unlock()
		}
	}()
	if s.Ledger, err = OpenLedger(ledgerDir); err != nil {
		return nil, err
	}
	root := opt.WorkRoot
	if root == "" {
		root = dir
	}
	work, err := os.MkdirTemp(root, ".work-")
	if err != nil {
		s.Ledger.Close()
		return nil, fmt.Errorf("making the work directory in %s: %w", dir, err)
	}
	if err := s.Ledger.AddDir(work); err != nil {
		os.Remove(work)
		s.Ledger.Close()
		return nil, err
	}
	s.Work = work
	s.OnClose("work directory", func() error { return removeDir(work) })
	return s, nil
}

// newTimestampDir makes <root>/<timestamp> (with -2, -3... when two runs start in the same
// second), marked as fsbench's.
func newTimestampDir(root string) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("creating the results directory: %w", err)
	}
	base := filepath.Join(root, time.Now().Format("20060102-150405"))
	for i := 1; ; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return "", fmt.Errorf("creating the results directory: %w", err)
		}
	}
}

// claim makes dir fsbench's for this session, or says why not: an empty (or new) directory is
// marked; a marked one needs force; anything else is refused. The marker counts only when it is a
// regular file holding what fsbench writes there: an empty one, a symbolic link (which would be
// followed to a file of the user's) or a directory that cannot be listed is refused unless force,
// and even then a link is replaced, never followed. The marker stays locked (flock) until the
// session ends, so that a second run on the same directory fails at once.
func claim(dir string, force bool) (created bool, lock *os.File, err error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return false, nil, fmt.Errorf("creating the results directory: %w", err)
	}
	switch err := os.Mkdir(dir, 0o755); {
	case err == nil:
		created = true
	case errors.Is(err, fs.ErrExist):
		fi, serr := os.Stat(dir)
		if serr != nil || !fi.IsDir() {
			return false, nil, &ExistsError{dir, "exists and is not a directory: choose another -o"}
		}
	default:
		return false, nil, fmt.Errorf("creating the results directory: %w", err)
	}
	path := filepath.Join(dir, MarkerName)
	if err := checkMarker(dir, path, force); err != nil {
		return false, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	switch {
	case err == nil:
		if !created {
			// An existing directory is claimed only when it is empty (the marker, just made,
			// aside): a directory of the user's is never written into. One that cannot be
			// listed is not known to be empty.
			entries, rerr := os.ReadDir(dir)
			if rerr != nil && !force {
				f.Close()
				os.Remove(path)
				return false, nil, &ExistsError{dir, fmt.Sprintf("cannot be listed (%v), so fsbench cannot tell that it holds nothing of yours: give -o a new or empty directory, or add --force", rerr)}
			}
			if len(entries) > 1 {
				f.Close()
				os.Remove(path)
				return false, nil, &ExistsError{dir, "exists and holds files fsbench did not write: give -o a new or empty directory"}
			}
		}
	case errors.Is(err, fs.ErrExist):
		// O_NOFOLLOW: a link put there since checkMarker is not followed (ELOOP).
		if f, err = os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0); err != nil {
			return false, nil, fmt.Errorf("opening %s: %w", path, err)
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return false, nil, &ExistsError{dir, MarkerName + " is not a regular file: give -o another directory"}
		}
	default:
		if created {
			os.Remove(dir)
		}
		return false, nil, fmt.Errorf("marking the results directory: %w", err)
	}
	// Lock before looking at what the directory holds: a run in progress holds the lock.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		var m marker
		b, _ := os.ReadFile(path)
		_ = json.Unmarshal(b, &m)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil, &BusyError{Dir: dir, PID: m.PID}
		}
		return false, nil, fmt.Errorf("locking %s: %w", path, err)
	}
	var m marker
	b, rerr := io.ReadAll(f)
	switch {
	case rerr != nil:
		f.Close()
		return false, nil, fmt.Errorf("reading %s: %w", path, rerr)
	case len(b) > 0:
		if json.Unmarshal(b, &m) != nil || m.Fsbench != "results directory" {
			f.Close()
			return false, nil, &ExistsError{dir, MarkerName + " is not fsbench's marker: give -o another directory"}
		}
		if !force {
			f.Close()
			return false, nil, &ExistsError{dir, fmt.Sprintf("holds an earlier fsbench run (started %s): "+
				"give -o another directory, or add --force to replace its results (nothing else in it is deleted)", m.Started.Format(time.RFC3339))}
		}
	default:
		// Made just now, or an empty one that force lets fsbench take.
		m = marker{Fsbench: "results directory", Created: time.Now().UTC().Truncate(time.Second)}
	}
	m.PID, m.Started = os.Getpid(), time.Now().UTC().Truncate(time.Second)
	b, _ = json.MarshalIndent(m, "", "  ")
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	if err != nil {
		f.Close()
		return false, nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return created, f, nil
}

// checkMarker looks at what is at the marker's path before fsbench opens it: nothing, or a
// regular file with content, is for claim to judge; a symbolic link, a directory or another
// kind of file, or an empty file (fsbench writes its content at once), is refused unless force.
// With force an empty marker is taken as fsbench's, and a link (never followed) is replaced by
// a marker of fsbench's own.
func checkMarker(dir, path string, force bool) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return &ExistsError{dir, fmt.Sprintf("%s cannot be read (%v): give -o another directory", MarkerName, err)}
	case fi.Mode()&fs.ModeSymlink != 0:
		if !force {
			return &ExistsError{dir, MarkerName + " is a symbolic link, not the marker fsbench writes: fsbench never follows it (it could lead to a file of yours); give -o another directory, or add --force to replace the link with fsbench's own marker"}
		}
		if entries, err := os.ReadDir(dir); err != nil || len(entries) > 1 {
			return &ExistsError{dir, MarkerName + " is a symbolic link and the directory holds files fsbench did not write: give -o a new or empty directory"}
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("replacing the link %s: %w", path, err)
		}
		return nil
	case !fi.Mode().IsRegular():
		return &ExistsError{dir, MarkerName + " is not a regular file: give -o another directory"}
	case fi.Size() == 0 && !force:
		return &ExistsError{dir, MarkerName + " is empty: fsbench writes its marker's content as soon as it makes it, so an empty one is not fsbench's; give -o another directory, or add --force if it is yours to reuse"}
	}
	return nil
}

// liveLedgers lists the pids of other fsbench runs with a ledger whose process still runs.
func liveLedgers(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		m := ledgerName.FindStringSubmatch(e.Name())
		// Its own ledger, and that of the fsbench that started it (a farm run, whose boards each
		// run as a child), are no other run.
		if m == nil || m[1] == strconv.Itoa(os.Getpid()) || m[1] == strconv.Itoa(os.Getppid()) {
			continue
		}
		rec, err := readLedger(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if alive, _ := processAlive(rec); alive {
			out = append(out, m[1])
		}
	}
	return out
}

// OnClose registers a cleanup, run by Close after the ones registered later.
func (s *Session) OnClose(what string, f func() error) {
	s.cleanups = append(s.cleanups, cleanup{what, f})
}

// Mkdir makes a new directory (never an existing one), recorded for cleanup: Close removes it
// once empty.
func (s *Session) Mkdir(path string) error {
	if err := s.Ledger.AddDir(path); err != nil {
		return err
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", path, err)
	}
	s.OnClose("directory "+path, func() error { return removeDir(path) })
	return nil
}

// Tree makes a new directory with a unique name in the work directory (prefix, then random),
// recorded as a tree: Close, or the cleanup of a killed run, removes it with what is in it
// (the private directories of the confined tools, whose tool may still run when fsbench is
// killed).
func (s *Session) Tree(prefix string) (string, error) {
	dir, err := os.MkdirTemp(s.Work, prefix)
	if err != nil {
		return "", err
	}
	rec, err := identify(dir)
	if err == nil {
		err = s.Ledger.AddTree(dir)
	}
	if err != nil {
		return "", errors.Join(err, os.Remove(dir))
	}
	s.OnClose("directory "+dir, func() error {
		if err := removeTree(rec, func(string, ...any) {}); err != nil {
			return err
		}
		return s.Ledger.RemoveTree(dir)
	})
	return dir, nil
}

// Mountpoint makes a new directory to mount on, recorded as a mount point: if the run is
// killed, whatever is mounted there is unmounted by the cleanup.
func (s *Session) Mountpoint(path string) error {
	if err := s.Ledger.AddMountpoint(path); err != nil {
		return err
	}
	return s.Mkdir(path)
}

// removeDir removes a directory the run made, when it is empty; one that holds something the
// run did not make is left, with no error (the user's file is not the run's to delete).
func removeDir(path string) error {
	err := os.Remove(path)
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		return nil
	}
	return err
}

// SetScheduler borrows dev's I/O scheduler for the run. The one it had goes into the ledger
// first, so that `fsbench cleanup` puts it back after a killed run (a loop device outlives the
// run and keeps its scheduler for its next user; a card is the user's), and it is restored
// when the session closes.
func (s *Session) SetScheduler(dev, sched string) error {
	was, err := CurrentScheduler("/sys", dev)
	if err != nil {
		return err
	}
	if err := s.Ledger.AddScheduler(dev, was); err != nil {
		return err
	}
	restore, err := SetScheduler("/sys", dev, sched)
	if err != nil {
		// Nothing changed; the record would only put back what is there.
		return errors.Join(err, s.Ledger.RemoveScheduler(dev))
	}
	s.OnClose("I/O scheduler of "+dev, func() error {
		if err := restore(); err != nil {
			return err
		}
		return s.Ledger.RemoveScheduler(dev)
	})
	return nil
}

// Close runs the cleanups, newest first, and returns the first failure. The ledger goes only
// when everything it names was undone; otherwise it stays for `fsbench cleanup` or the next run.
func (s *Session) Close() error {
	var first error
	clean := true
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		if err := s.cleanups[i].do(); err != nil {
			clean = false
			s.log("cleanup (%s): %v", s.cleanups[i].what, err)
			if first == nil {
				first = err
			}
		}
	}
	s.cleanups = nil
	defer s.unlock()
	if !clean {
		s.log("some cleanup failed: %s is kept; run `fsbench cleanup` once the cause is fixed", s.Ledger.Path())
		return first
	}
	return s.Ledger.Close()
}

// Discard removes the results directory this session made, for a run refused before it
// measured anything: the marker and the named files fsbench wrote there, then the directory if
// that leaves it empty. Call it after Close.
func (s *Session) Discard(files ...string) {
	if !s.Created {
		return
	}
	for _, f := range append(files, MarkerName) {
		os.Remove(filepath.Join(s.Dir, f))
	}
	os.Remove(s.Dir)
}

func (s *Session) unlock() {
	if s.lock != nil {
		s.lock.Close() // closing the descriptor releases the flock
		s.lock = nil
	}
}

// Claim makes dir a results directory of fsbench's, as a run does (see OpenSession), for
// commands that write one without a run (fetch): a new or empty directory, or with force one an
// earlier run made.
func Claim(dir string, force bool) error {
	_, f, err := claim(dir, force)
	if err != nil {
		return err
	}
	return f.Close()
}

// File makes path with make (which must create it exclusively), records it with its identity
// and registers its removal.
func (s *Session) File(path string, make func() error) error {
	if err := make(); err != nil {
		return err
	}
	if err := s.Ledger.AddFile(path); err != nil {
		return errors.Join(err, os.Remove(path))
	}
	s.OnClose("file "+path, func() error { return s.Ledger.RemoveOwnFile(path) })
	return nil
}

// Sub is a session for a part of the run in dir (a board run per variant): it records in this
// session's ledger and logs to its log; its cleanups are this session's business.
func (s *Session) Sub(dir string) *Session {
	return &Session{Dir: dir, Ledger: s.Ledger, log: s.log}
}
