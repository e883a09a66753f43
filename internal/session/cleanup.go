package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/mountinfo"
	"github.com/fsbench/fsbench/internal/procid"
	"golang.org/x/sys/unix"
)

// CleanupStale reads every ledger in dir whose process is gone (or whose pid was reused:
// start time differs, or the machine rebooted) and undoes it: unmounts what is mounted on its
// mountpoints (deepest first; on EBUSY retry, then lazy-unmount with MNT_DETACH and say so),
// detaches its loop devices ONLY if /sys/block/loopN/loop/backing_file still names the
// recorded backing file and the device and inode numbers the kernel reports for it match
// (a reused loop number belongs to someone else), removes its files, then the ledger.
//
// It returns a description of each action, and calls logf (if not nil) with each as it
// happens and with each warning. It never touches anything a ledger does not name, and
// never a ledger of a live process. A ledger whose cleanup failed is kept so that a later
// call can retry: every step is harmless to repeat.
func CleanupStale(dir string, logf func(format string, args ...any)) ([]string, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var actions []string
	act := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		actions = append(actions, s)
		logf("%s", s)
	}
	entries, err := procid.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("clean up stale runs: %w", err)
	}
	var errs []error
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if m := tempName.FindStringSubmatch(e.Name()); m != nil {
			// A half-written ledger of a process that died while saving; the complete one
			// beside it (if any) is handled on its own.
			if pid, _ := strconv.Atoi(m[1]); !procid.Exists(pid) {
				if err := os.Remove(path); err == nil {
					act("removed half-written ledger %s", path)
				}
			}
			continue
		}
		m := ledgerName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		rec, err := readLedger(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // its process finished and removed it since the directory was read
		}
		if err == nil && strconv.Itoa(rec.PID) != m[1] {
			err = fmt.Errorf("records pid %d but is named after pid %s", rec.PID, m[1])
		}
		if err != nil {
			// A ledger this fsbench cannot read may be a live run of another fsbench
			// version (a newer ledger format): that run cleans up after itself, and its
			// ledger is not in the way of this one. Only a dead writer's is reported.
			if pid, _ := strconv.Atoi(m[1]); procid.Exists(pid) {
				logf("ledger %s: %v; left alone: its process %d is running", path, err, pid)
				continue
			}
			errs = append(errs, fmt.Errorf("ledger %s: %w; inspect it and remove it by hand", path, err))
			continue
		}
		alive, why := processAlive(rec)
		if alive {
			continue
		}
		if err := undoLocked(path, rec, why, act, logf); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return actions, fmt.Errorf("clean up stale runs in %s: %w", dir, errors.Join(errs...))
	}
	return actions, nil
}

// ledgerLockWait is how long a cleanup waits for another that is undoing the same ledger.
var ledgerLockWait = 2 * time.Minute

// undoLocked undoes a dead process's ledger while holding it (procid.TakeOver: a run and
// "fsbench cleanup" can find the same dead ledger at once), then removes it.
func undoLocked(path string, rec ledgerRecord, why string, act, logf func(string, ...any)) error {
	release, o, err := procid.TakeOver(path, ledgerLockWait)
	defer release()
	switch {
	case err != nil:
		return fmt.Errorf("ledger %s: %w", path, err)
	case o == procid.Busy:
		act("left ledger %s to the fsbench that is undoing it (still at it after %v)", path, ledgerLockWait)
		return nil
	case o == procid.Gone:
		act("ledger %s was undone by another fsbench meanwhile", path)
		return nil
	}
	logf("ledger %s: process %d %s; undoing what it recorded", path, rec.PID, why)
	if err := undo(rec, act, logf); err != nil {
		return fmt.Errorf("ledger %s (kept for a later retry): %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove ledger: %w", err)
	}
	act("removed ledger %s", path)
	return nil
}

func readLedger(path string) (ledgerRecord, error) {
	var rec ledgerRecord
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("parse: %w", err)
	}
	if rec.Version < 1 || rec.Version > ledgerVersion {
		return rec, fmt.Errorf("version %d, this fsbench understands 1 to %d", rec.Version, ledgerVersion)
	}
	return rec, nil
}

// processAlive reports whether the process that wrote rec still runs, and if not, why.
func processAlive(rec ledgerRecord) (bool, string) {
	return procid.ID{PID: rec.PID, StartTime: rec.StartTime, BootID: rec.BootID}.Running()
}

// undo cleans up one dead process's records in the order their dependencies need, which is
// the reverse of the order a run makes them in: the filesystems it mounted on its loop devices
// (and its tmpfs) first, then the loop devices, then its child processes (the card server
// unmounts its own card when told to stop; the ssh client to a board, whose run then stops),
// then the labgrid places it acquired, then what is still mounted (a FUSE card whose server is
// gone), then its files, the trees it filled, and last its directories, once empty.
func undo(rec ledgerRecord, act, logf func(string, ...any)) error {
	// Phase 1: every mount under a recorded mount point but FUSE ones, deepest and newest first;
	// and but the cgroup2 hierarchy a run mounted for itself, which shows its cgroup until that
	// is removed below.
	if err := unmountRecorded(rec, act, logf, func(fstype string) bool { return !isFUSE(fstype) && fstype != "cgroup2" }); err != nil {
		// Do not go on to detach or delete what a file system that is still mounted uses.
		return err
	}
	var errs []error
	for _, lr := range rec.Loops {
		if err := detachStale(lr, act, logf); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sr := range rec.Schedulers {
		if err := restoreStale(sr, rec.Loops, act, logf); err != nil {
			errs = append(errs, err)
		}
	}
	for _, pr := range slices.Backward(rec.Processes) {
		if err := stopStale(pr, act); err != nil {
			errs = append(errs, err)
		}
	}
	// Its cgroup is empty once its processes are gone.
	for _, cg := range rec.Cgroups {
		if err := undoCgroup(cg, act); err != nil {
			errs = append(errs, err)
		}
	}
	// The board's run stops once its ssh client (one of the processes above) is gone: its
	// place can go back to the farm.
	for _, pr := range slices.Backward(rec.Places) {
		if err := releaseStale(pr, act); err != nil {
			errs = append(errs, err)
		}
	}
	if err := unmountRecorded(rec, act, logf, func(string) bool { return true }); err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, f := range slices.Backward(rec.Files) {
		// never RemoveAll: only what was recorded, one name at a time, and only the very file
		switch same, err := f.same(); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			errs = append(errs, fmt.Errorf("check %s: %w", f.Path, err))
		case !same:
			act("left %s alone: it is not the file the run made (device and inode differ), another took its name", f.Path)
		default:
			if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove %s: %w", f.Path, err))
			} else if err == nil {
				act("removed %s", f.Path)
			}
		}
	}
	for _, p := range append(slices.Clone(rec.LegacyFiles), rec.LegacyTrees...) {
		if _, err := os.Lstat(p); err == nil {
			act("left %s: an older fsbench recorded it by its path only, which may name another file by now; remove it by hand if it is that run's", p)
		}
	}
	for _, t := range slices.Backward(rec.Trees) {
		if err := removeTree(t, act); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range slices.Backward(rec.Dirs) {
		err := os.Remove(d)
		switch {
		case err == nil:
			act("removed directory %s", d)
		case errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
			// Something fsbench did not record is inside (a file the user put there): it is
			// not ours to delete, so the directory stays.
			act("left directory %s: it holds files fsbench did not make", d)
		default:
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// unmountRecorded unmounts every mount under rec's mount points whose type pick accepts,
// deepest first (newest first among equals).
func unmountRecorded(rec ledgerRecord, act, logf func(string, ...any), pick func(fstype string) bool) error {
	ms, err := mountinfo.Read("")
	if err != nil {
		return err
	}
	var mounts []string
	for _, mp := range rec.Mountpoints {
		if !filepath.IsAbs(mp) || filepath.Clean(mp) == "/" {
			logf("ignoring mount point %q: not an absolute path below /", mp)
			continue
		}
		d, err := canonical(mp)
		if err != nil {
			return err
		}
		var picked []mountinfo.Entry
		for _, m := range ms {
			if pick(m.FSType) {
				picked = append(picked, m)
			}
		}
		mounts = append(mounts, mountinfo.UnderIn(picked, d)...)
	}
	slices.SortStableFunc(mounts, func(a, b string) int { return mountinfo.Depth(b) - mountinfo.Depth(a) })
	for _, mp := range mounts {
		if err := unmount(mp, act); err != nil {
			return err
		}
	}
	return nil
}

func isFUSE(fstype string) bool { return fstype == "fuse" || strings.HasPrefix(fstype, "fuse.") }

// restoreStale puts back the I/O scheduler a dead run changed. A loop device's number is reused
// once its run's binding is gone: its scheduler is put back while it is free or still bound to
// the run's own file, and left alone when it serves someone else's (who may have chosen it).
// Any other device was named by the user for the run and gets its scheduler back.
func restoreStale(sr schedRecord, loops []loopRecord, act, logf func(string, ...any)) error {
	if sr.Was == "" || strings.ContainsAny(sr.Dev, "/") || sr.Dev == "" || sr.Dev == "." || sr.Dev == ".." {
		logf("ignoring scheduler record %q=%q", sr.Dev, sr.Was)
		return nil
	}
	if loopName.MatchString(sr.Dev) {
		cur, err := readLoopAttr(sr.Dev, "backing_file")
		switch {
		case errors.Is(err, fs.ErrNotExist): // free
		case err != nil:
			return fmt.Errorf("check %s: %w", sr.Dev, err)
		case !slices.ContainsFunc(loops, func(lr loopRecord) bool { return lr.Dev == sr.Dev && sameBacking(cur, lr.Backing) }):
			act("left the I/O scheduler of %s alone: the device now serves %s", sr.Dev, cur)
			return nil
		}
	}
	now, err := CurrentScheduler(sysfsRoot, sr.Dev)
	if err != nil {
		// A device that is gone (a card pulled out) has no scheduler to put back.
		act("could not put back the I/O scheduler of %s: %v", sr.Dev, err)
		return nil
	}
	if now == sr.Was {
		return nil
	}
	if _, err := SetScheduler(sysfsRoot, sr.Dev, sr.Was); err != nil {
		return err
	}
	act("put back the I/O scheduler of %s: %s (the run had set %s)", sr.Dev, sr.Was, now)
	return nil
}

// stopStale ends a recorded child process if it is still the one recorded (same start time):
// SIGTERM first for one that cleans up after itself, then SIGKILL.
func stopStale(pr procRecord, act func(string, ...any)) error {
	alive := func() bool {
		running, _ := procid.ID{PID: pr.PID, StartTime: pr.StartTime}.Running()
		return running
	}
	if pr.PID <= 1 || !alive() {
		return nil
	}
	if pr.Graceful {
		if err := unix.Kill(pr.PID, unix.SIGTERM); err == nil {
			for range 250 { // 25 s: the card server waits up to 20 s for a busy unmount
				if !alive() {
					act("stopped %s (pid %d)", pr.What, pr.PID)
					return nil
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	if err := unix.Kill(pr.PID, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", pr.What, pr.PID, err)
	}
	act("killed %s (pid %d)", pr.What, pr.PID)
	return nil
}

// removeTree removes a directory fsbench filled itself, if it is still that directory and nothing
// is mounted inside it: os.RemoveAll would walk into the mount and delete what is on it.
func removeTree(t fileRecord, act func(string, ...any)) error {
	dir := t.Path
	switch same, err := t.same(); {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("check %s: %w", dir, err)
	case !same:
		act("left %s alone: it is not the directory the run made (device and inode differ)", dir)
		return nil
	}
	under, err := MountsUnder(dir)
	if err != nil {
		return err
	}
	if len(under) > 0 {
		return fmt.Errorf("not removing %s: %s is mounted inside it", dir, under[0])
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	act("removed %s and its contents", dir)
	return nil
}

// unmount unmounts the top mount on mp, from a ledger: UMOUNT_NOFOLLOW, since a symlink
// planted in its place must not redirect the unmount elsewhere, and lazily when still busy
// (some process has files open there or its cwd inside): the kernel finishes, and releases the
// loop device, when the last user lets go.
func unmount(mp string, act func(string, ...any)) error {
	how, err := mountinfo.Unmount(context.Background(), mp, mountinfo.UnmountOptions{NoFollow: true, Lazy: true})
	switch {
	case err != nil:
		return err
	case how == mountinfo.Done:
		act("unmounted %s", mp)
	case how == mountinfo.Detached:
		act("lazily unmounted %s (MNT_DETACH): it was still busy; the kernel releases it when its last user closes it", mp)
	}
	return nil
}

// detachStale detaches a recorded loop device if, and only if, it is still bound to the
// recorded backing file. Loop numbers are reused: after the dead process's device detached
// (autoclear fires once nothing holds it), anyone may have bound the same number to
// something else.
func detachStale(lr loopRecord, act, logf func(string, ...any)) error {
	if !loopName.MatchString(lr.Dev) {
		logf("ignoring loop record %q: not a loop device name", lr.Dev)
		return nil
	}
	cur, err := readLoopAttr(lr.Dev, "backing_file")
	if errors.Is(err, fs.ErrNotExist) {
		act("%s already detached", lr.Dev)
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", lr.Dev, err)
	}
	if !sameBacking(cur, lr.Backing) {
		act("left %s alone: it is now bound to %s, not to the recorded %s", lr.Dev, cur, lr.Backing)
		return nil
	}
	// Hold the device open while checking and detaching: the identity we verify on this
	// descriptor cannot change under us, except by someone else's LOOP_CLR_FD.
	f, err := os.OpenFile(filepath.Join(devRoot, lr.Dev), os.O_RDONLY, 0)
	if errors.Is(err, unix.ENXIO) {
		// The kernel refuses new openers while it tears the device down: autoclear fired
		// between our sysfs read and the open.
		act("%s already detached", lr.Dev)
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", lr.Dev, err)
	}
	var info *unix.LoopInfo64
	err = withFd(f, func(fd int) (err error) { info, err = unix.IoctlLoopGetStatus64(fd); return err })
	if errors.Is(err, unix.ENXIO) {
		f.Close()
		act("%s already detached", lr.Dev)
		return nil
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("%s: LOOP_GET_STATUS64: %w", lr.Dev, err)
	}
	if info.Device != lr.BackingDev || info.Inode != lr.BackingIno {
		f.Close()
		act("left %s alone: its backing file is %s but a different file (device %d inode %d, recorded %d/%d)",
			lr.Dev, cur, info.Device, info.Inode, lr.BackingDev, lr.BackingIno)
		return nil
	}
	// If a file system on the device is still mounted somewhere we did not record, this is
	// still harmless: LOOP_CLR_FD only marks the device for autoclear, and the kernel
	// detaches it when that mount goes away.
	err = clearFd(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, unix.ENXIO) {
		act("%s already detached", lr.Dev)
		return nil
	}
	if err != nil {
		return fmt.Errorf("detach %s: %w", lr.Dev, err)
	}
	bound, err := waitUnbound(lr.Dev, lr.Backing, unbindTimeout)
	if err != nil {
		return fmt.Errorf("detach %s: %w", lr.Dev, err)
	}
	if bound {
		act("asked %s to detach from %s; another process still holds it open, so the kernel detaches it when that closes", lr.Dev, lr.Backing)
		return nil
	}
	act("detached %s from %s", lr.Dev, lr.Backing)
	return nil
}
