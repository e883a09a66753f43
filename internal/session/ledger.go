package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/fsbench/fsbench/internal/procid"
	"golang.org/x/sys/unix"
)

// DefaultLedgerDir is where ledgers live: /run is a tmpfs, so ledgers vanish at reboot
// together with the loop devices and mounts they describe.
const DefaultLedgerDir = "/run/fsbench"

// ledgerVersion 2 added dirs, trees and processes, 3 labgrid places; older ledgers (of an
// older fsbench killed before an upgrade) are still undone. Only a ledger that records a place
// is written as version 3 (see save): a version-2 fsbench on the same machine then refuses that
// one ledger rather than delete it without releasing the place, and reads every other.
const ledgerVersion = 3

// placesVersion is the first ledger version with places; a ledger without them is written as
// the version before.
const placesVersion = 3

var (
	ledgerName = regexp.MustCompile(`^([0-9]+)\.json$`)
	tempName   = regexp.MustCompile(`^\.([0-9]+)\.json\.tmp$`)
	loopName   = regexp.MustCompile(`^loop[0-9]+$`)
)

// A Ledger is a JSON file <dir>/<pid>.json (dir normally /run/fsbench: tmpfs, so it vanishes
// at reboot together with the loop devices and mounts it describes), rewritten atomically
// (write temp + fsync + rename) on every change. It records what this process created so
// that, if the process is killed before it cleans up, a later run's CleanupStale can undo it.
//
// Record things before creating them where that is safe (AddMountpoint before mounting, AddDir
// before os.Mkdir: cleanup tolerates records of things that never came to be, and only unmounts
// or removes empty directories). Files and trees, which cleanup deletes, are recorded just after
// this process created them, with their device and inode numbers: a later cleanup deletes only
// the very file it made, never another one that took its name (a failed exclusive create left
// nothing of ours), and a crash between creating and recording leaves a file behind rather than
// risking someone else's.
type Ledger struct {
	mu     sync.Mutex
	dir    string
	path   string
	rec    ledgerRecord
	closed bool
}

type ledgerRecord struct {
	Version int `json:"version"`
	PID     int `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat, in clock ticks since boot: with the pid it
	// identifies the process, since pids are reused.
	StartTime   uint64       `json:"start_time"`
	BootID      string       `json:"boot_id,omitempty"`
	Created     time.Time    `json:"created"`
	Mountpoints []string     `json:"mountpoints,omitempty"`
	Loops       []loopRecord `json:"loops,omitempty"`
	// Files are files (or empty directories) this process made, with their identity.
	Files []fileRecord `json:"file_ids,omitempty"`
	// LegacyFiles are files an older fsbench recorded by path only: a path may name another
	// file by now, so cleanup reports them and deletes none.
	LegacyFiles []string `json:"files,omitempty"`
	// Dirs are directories this process made, removed (when empty) after the files.
	Dirs []string `json:"dirs,omitempty"`
	// Trees are directories this process made with a unique name and filled itself (the
	// guest's initramfs build), with their identity: removed with everything in them, never
	// across a mount point.
	Trees       []fileRecord `json:"tree_ids,omitempty"`
	LegacyTrees []string     `json:"trees,omitempty"` // as LegacyFiles
	// Processes are children that must not outlive the run (the card server, QEMU).
	Processes []procRecord `json:"processes,omitempty"`
	// Places are boards reserved from a farm (labgrid places) for the run.
	Places []PlaceRecord `json:"places,omitempty"`
	// Schedulers are block devices whose I/O scheduler the run changed, with the one to put
	// back. An fsbench that predates the field ignores it: it leaves the scheduler as it was
	// found, which is what happened before the field existed.
	Schedulers []schedRecord `json:"schedulers,omitempty"`
	// Cgroups are the cgroup v2 directories this process made for itself (JoinCgroup):
	// removed once the processes in them are gone. An fsbench that predates the field leaves
	// them, empty, where they are.
	Cgroups []string `json:"cgroups,omitempty"`
}

// schedRecord is a device's I/O scheduler before a run changed it.
type schedRecord struct {
	Dev string `json:"dev"` // "loop3", "mmcblk0"
	Was string `json:"was"` // "none"
}

// procRecord identifies a child process: a pid alone may have been reused since.
type procRecord struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	What      string `json:"what"`
	// Graceful: the process cleans up on SIGTERM (the card server unmounts its card), so it
	// gets SIGTERM and time before SIGKILL.
	Graceful bool `json:"graceful,omitempty"`
}

// fileRecord is a file or directory this process made: its path and, as stat reported them
// just after it was made, its device and inode numbers.
type fileRecord struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// identify records what is at path now (not following a final symlink).
func identify(path string) (fileRecord, error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return fileRecord{}, err
	}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return fileRecord{}, err
	}
	return fileRecord{Path: p, Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
}

// Same reports whether path still names the file r recorded (ENOENT: gone).
func (r fileRecord) same() (bool, error) {
	var st unix.Stat_t
	if err := unix.Lstat(r.Path, &st); err != nil {
		return false, err
	}
	return uint64(st.Dev) == r.Dev && uint64(st.Ino) == r.Ino, nil
}

type loopRecord struct {
	Dev     string `json:"dev"`     // "loop3"
	Backing string `json:"backing"` // absolute path of the backing file
	// BackingDev and BackingIno identify the backing file as LOOP_GET_STATUS64 reports it
	// (lo_device, lo_inode); a path alone could name a different, newer file.
	BackingDev uint64 `json:"backing_dev"`
	BackingIno uint64 `json:"backing_ino"`
}

// OpenLedger creates the ledger of this process in dir (created if missing, mode 0700). It
// records the pid and the process start time from /proc/self/stat (field 22). It fails if
// a ledger for this pid already exists: run CleanupStale first (a dead process with the same
// pid may have left it).
func OpenLedger(dir string) (*Ledger, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	self, err := procid.Self()
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	l := &Ledger{
		dir:  dir,
		path: filepath.Join(dir, strconv.Itoa(self.PID)+".json"),
		rec: ledgerRecord{
			Version:   ledgerVersion,
			PID:       self.PID,
			StartTime: self.StartTime,
			BootID:    self.BootID,
			Created:   time.Now().UTC().Truncate(time.Second),
		},
	}
	if _, err := os.Lstat(l.path); err == nil {
		return nil, fmt.Errorf("open ledger: %s already exists: a ledger of this process is open, or a dead process with the same pid left it; clean up stale runs first", l.path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	if err := l.save(); err != nil {
		return nil, err
	}
	return l, nil
}

// Path returns the ledger file's path.
func (l *Ledger) Path() string { return l.path }

// AddMountpoint records that anything mounted on dir (or below it) is ours to unmount.
func (l *Ledger) AddMountpoint(dir string) error {
	d, err := canonical(dir)
	if err != nil {
		return fmt.Errorf("ledger: add mount point %s: %w", dir, err)
	}
	if d == "/" {
		return fmt.Errorf("ledger: refusing to record / as a mount point")
	}
	return l.update(func(r *ledgerRecord) {
		if !slices.Contains(r.Mountpoints, d) {
			r.Mountpoints = append(r.Mountpoints, d)
		}
	})
}

// AddLoop records that loop device dev ("/dev/loop3" or "loop3") is bound to backing by us.
// It stats backing to record its device and inode numbers, so call it after attaching.
func (l *Ledger) AddLoop(dev, backing string) error {
	name := filepath.Base(dev)
	if !loopName.MatchString(name) {
		return fmt.Errorf("ledger: add loop %q: not a loop device name", dev)
	}
	b, err := canonical(backing)
	if err != nil {
		return fmt.Errorf("ledger: add loop %s: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(b, &st); err != nil {
		return fmt.Errorf("ledger: add loop %s: stat backing file %s: %w", name, b, err)
	}
	rec := loopRecord{Dev: name, Backing: b, BackingDev: uint64(st.Dev), BackingIno: uint64(st.Ino)}
	return l.update(func(r *ledgerRecord) {
		if !slices.Contains(r.Loops, rec) {
			r.Loops = append(r.Loops, rec)
		}
	})
}

// RemoveLoop forgets a loop device that was detached.
func (l *Ledger) RemoveLoop(dev string) error {
	name := filepath.Base(dev)
	return l.update(func(r *ledgerRecord) {
		r.Loops = slices.DeleteFunc(r.Loops, func(lr loopRecord) bool { return lr.Dev == name })
	})
}

// AddFile records a file (or empty directory) this process has just created and may delete,
// with its device and inode numbers: call it after the (exclusive) create succeeded, never
// before, so that a failed create leaves no record of a file that is not ours.
func (l *Ledger) AddFile(path string) error {
	rec, err := identify(path)
	if err != nil {
		return fmt.Errorf("ledger: add file %s: %w", path, err)
	}
	return l.update(func(r *ledgerRecord) {
		r.Files = slices.DeleteFunc(r.Files, func(f fileRecord) bool { return f.Path == rec.Path })
		r.Files = append(r.Files, rec)
	})
}

// RemoveOwnFile removes a file this process recorded with AddFile, if path still names that
// very file, and forgets it; gone already is fine.
func (l *Ledger) RemoveOwnFile(path string) error {
	p, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	i := slices.IndexFunc(l.rec.Files, func(f fileRecord) bool { return f.Path == p })
	var rec fileRecord
	if i >= 0 {
		rec = l.rec.Files[i]
	}
	l.mu.Unlock()
	if i < 0 {
		return fmt.Errorf("remove %s: not a file this run recorded", p)
	}
	switch same, err := rec.same(); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !same:
		return fmt.Errorf("not removing %s: it is no longer the file this run made (another file took its name)", p)
	default:
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return l.RemoveFile(p)
}

// AddDir records a directory we are about to create (with os.Mkdir, so that an existing one is
// never taken over): cleanup removes it once empty, never its contents.
func (l *Ledger) AddDir(path string) error {
	p, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("ledger: add directory %s: %w", path, err)
	}
	return l.update(func(r *ledgerRecord) {
		if !slices.Contains(r.Dirs, p) {
			r.Dirs = append(r.Dirs, p)
		}
	})
}

// AddTree records a directory this process has just created under a unique name (os.MkdirTemp,
// os.Mkdir) and fills itself, with its identity: cleanup removes it and everything in it, if it
// is still that directory and nothing is mounted inside.
func (l *Ledger) AddTree(path string) error {
	rec, err := identify(path)
	if err != nil {
		return fmt.Errorf("ledger: add tree %s: %w", path, err)
	}
	if rec.Path == "/" || filepath.Dir(rec.Path) == rec.Path {
		return fmt.Errorf("ledger: refusing to record %s as a tree", rec.Path)
	}
	return l.update(func(r *ledgerRecord) {
		r.Trees = slices.DeleteFunc(r.Trees, func(f fileRecord) bool { return f.Path == rec.Path })
		r.Trees = append(r.Trees, rec)
	})
}

// RemoveTree forgets a tree that was removed.
func (l *Ledger) RemoveTree(path string) error {
	p, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return l.update(func(r *ledgerRecord) {
		r.Trees = slices.DeleteFunc(r.Trees, func(f fileRecord) bool { return f.Path == p })
	})
}

// AddProcess records a child process just started, with its start time so that a reused pid
// is never signalled. graceful: it cleans up on SIGTERM and gets time to do so.
func (l *Ledger) AddProcess(pid int, what string, graceful bool) error {
	st, err := procid.Read(pid)
	if err != nil {
		return fmt.Errorf("ledger: add process %d (%s): %w", pid, what, err)
	}
	rec := procRecord{PID: pid, StartTime: st.StartTime, What: what, Graceful: graceful}
	return l.update(func(r *ledgerRecord) {
		if !slices.Contains(r.Processes, rec) {
			r.Processes = append(r.Processes, rec)
		}
	})
}

// RemoveProcess forgets a process that has exited.
func (l *Ledger) RemoveProcess(pid int) error {
	return l.update(func(r *ledgerRecord) {
		r.Processes = slices.DeleteFunc(r.Processes, func(p procRecord) bool { return p.PID == pid })
	})
}

// AddPlace records a place about to be reserved.
func (l *Ledger) AddPlace(p PlaceRecord) error {
	return l.update(func(r *ledgerRecord) {
		if !slices.Contains(r.Places, p) {
			r.Places = append(r.Places, p)
		}
	})
}

// UpdatePlace replaces the record old of a place with new (its owner, once known).
func (l *Ledger) UpdatePlace(old, new PlaceRecord) error {
	return l.update(func(r *ledgerRecord) {
		for i := range r.Places {
			if r.Places[i] == old {
				r.Places[i] = new
			}
		}
	})
}

// RemovePlace forgets a place that was released (or never acquired).
func (l *Ledger) RemovePlace(p PlaceRecord) error {
	return l.update(func(r *ledgerRecord) {
		r.Places = slices.DeleteFunc(r.Places, func(x PlaceRecord) bool { return x == p })
	})
}

// AddScheduler records, before it is changed, the I/O scheduler dev had: the first record of a
// device wins, since a later change starts from fsbench's own choice.
func (l *Ledger) AddScheduler(dev, was string) error {
	rec := schedRecord{Dev: filepath.Base(dev), Was: was}
	return l.update(func(r *ledgerRecord) {
		if !slices.ContainsFunc(r.Schedulers, func(x schedRecord) bool { return x.Dev == rec.Dev }) {
			r.Schedulers = append(r.Schedulers, rec)
		}
	})
}

// RemoveScheduler forgets a device whose scheduler was put back.
func (l *Ledger) RemoveScheduler(dev string) error {
	name := filepath.Base(dev)
	return l.update(func(r *ledgerRecord) {
		r.Schedulers = slices.DeleteFunc(r.Schedulers, func(x schedRecord) bool { return x.Dev == name })
	})
}

// AddCgroup records a cgroup directory about to be made.
func (l *Ledger) AddCgroup(dir string) error {
	return l.update(func(r *ledgerRecord) {
		if !slices.Contains(r.Cgroups, dir) {
			r.Cgroups = append(r.Cgroups, dir)
		}
	})
}

// RemoveCgroup forgets a cgroup that was removed (or never made).
func (l *Ledger) RemoveCgroup(dir string) error {
	return l.update(func(r *ledgerRecord) {
		r.Cgroups = slices.DeleteFunc(r.Cgroups, func(x string) bool { return x == dir })
	})
}

// RemoveFile forgets a file: it is no longer ours to delete (e.g. the user keeps the image).
func (l *Ledger) RemoveFile(path string) error {
	p, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("ledger: remove file %s: %w", path, err)
	}
	return l.update(func(r *ledgerRecord) {
		r.Files = slices.DeleteFunc(r.Files, func(f fileRecord) bool { return f.Path == p })
	})
}

// Close deletes the ledger: call it once the run finished its own cleanup. Closing twice is
// harmless.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ledger: remove %s: %w", l.path, err)
	}
	l.closed = true
	return syncDir(l.dir)
}

func (l *Ledger) update(fn func(*ledgerRecord)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("ledger %s: already closed", l.path)
	}
	old := l.rec
	old.Mountpoints = slices.Clone(old.Mountpoints)
	old.Loops = slices.Clone(old.Loops)
	old.Files = slices.Clone(old.Files)
	old.LegacyFiles = slices.Clone(old.LegacyFiles)
	old.LegacyTrees = slices.Clone(old.LegacyTrees)
	old.Dirs = slices.Clone(old.Dirs)
	old.Trees = slices.Clone(old.Trees)
	old.Processes = slices.Clone(old.Processes)
	old.Places = slices.Clone(old.Places)
	old.Schedulers = slices.Clone(old.Schedulers)
	old.Cgroups = slices.Clone(old.Cgroups)
	fn(&l.rec)
	if err := l.save(); err != nil {
		l.rec = old
		return err
	}
	return nil
}

// save writes the record atomically: a reader (CleanupStale in another process, possibly
// after this one was killed mid-write) sees either the old or the new ledger, never half.
func (l *Ledger) save() error {
	l.rec.Version = ledgerVersion
	if len(l.rec.Places) == 0 {
		l.rec.Version = placesVersion - 1
	}
	b, err := json.MarshalIndent(l.rec, "", "  ")
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	b = append(b, '\n')
	tmp := filepath.Join(l.dir, "."+strconv.Itoa(l.rec.PID)+".json.tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("ledger: write %s: %w", l.path, err)
	}
	return syncDir(l.dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("ledger: sync %s: %w", dir, err)
	}
	return nil
}

// PlaceRecord is a board a run reserved from a farm (a labgrid place), in its ledger: after a
// kill, the cleanup releases it with the same client and coordinator, through the releaser the
// package that reserves places set (SetPlaceReleaser).
type PlaceRecord struct {
	Client      string `json:"client"`
	Coordinator string `json:"coordinator"`
	Place       string `json:"place"`
	// Owner and Changed are what the farm said right after the reservation: the cleanup
	// releases the place only while they are unchanged, so that a place reserved again since
	// (by the user, by hand) is never taken from them. Empty when the run was killed before it
	// could ask.
	Owner   string `json:"owner,omitempty"`
	Changed string `json:"changed,omitempty"`
}

// placeReleaser releases a place a dead run reserved, if it still holds it.
var placeReleaser func(pr PlaceRecord, act func(string, ...any)) error

// SetPlaceReleaser sets how the cleanup releases a dead run's places. The farm's client (package
// remote) sets it; without it, a ledger with places is kept, not deleted, so that no place is
// forgotten.
func SetPlaceReleaser(release func(pr PlaceRecord, act func(string, ...any)) error) {
	placeReleaser = release
}

func releaseStale(pr PlaceRecord, act func(string, ...any)) error {
	if placeReleaser == nil {
		return fmt.Errorf("place %s of a killed run was not released: this fsbench was built without a farm client", pr.Place)
	}
	return placeReleaser(pr, act)
}
