package confine

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// inThreadJail runs fn on an OS thread of its own in a mount namespace of that thread's alone,
// built into j, then returns the thread to the machine's namespace (the jail's goes with its last
// user). The thread is never given back to the Go scheduler, whose other goroutines expect the
// filesystem context (cwd) all threads share: its goroutine ends locked, so the thread exits. Go
// starts new threads from a clean template thread, never from a locked one, so no other goroutine
// ever runs in the jail.
func inThreadJail(j jail, fn func() error) error {
	done := make(chan error, 1)
	onThread(func() {
		done <- func() (err error) {
			// The way back, for the main thread's sake (below) and so that the jail's
			// namespace goes as soon as fn is done.
			home, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return &SetupError{fmt.Errorf("open this thread's mount namespace: %w", err)}
			}
			defer unix.Close(home)
			// CLONE_NEWNS unshares this thread's filesystem context too (root, cwd): the
			// other threads keep theirs and the machine's namespace.
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return &SetupError{fmt.Errorf("unshare a mount namespace: %w", err)}
			}
			defer func() {
				if serr := unix.Setns(home, unix.CLONE_NEWNS); serr != nil && err == nil {
					err = &SetupError{fmt.Errorf("leave the jail's namespace: %w", serr)}
				}
			}()
			if err := j.build(); err != nil {
				return &SetupError{err}
			}
			// A relative path the kernel resolves (a mount option's) starts at /, not in the
			// user's directory, where a symlink may name a device.
			if err := unix.Chdir("/"); err != nil {
				return &SetupError{err}
			}
			return fn()
		}()
	})
	return <-done
}

// onThread runs fn in a new goroutine locked to an OS thread that is not the main one, and
// never unlocked. Go never lets the main thread exit (it parks it instead), and the main thread's
// mount namespace is the one /proc/self shows for the whole process: a jail there would show
// everyone the jail's mounts. A goroutine that lands on the main thread keeps it locked while
// it starts another, which therefore cannot land there.
func onThread(fn func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			fn()
			return
		}
		locked := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(locked)
			fn()
		}()
		<-locked
		runtime.UnlockOSThread()
	}()
}

// MountError is a mount(2) that the kernel refused in the jail, with its errno.
type MountError struct{ Err error }

func (e *MountError) Error() string { return e.Err.Error() }
func (e *MountError) Unwrap() error { return e.Err }

// mountDir is where a mount jail mounts with mount(2) (for the flags the new mount API has no
// name for), in its own root: the new mount is taken out as a detached copy, so the place does
// not matter.
const mountDir = "/dev/.fsbench-mount"

// jailIdle is how long an unused mount jail lives: a run mounts its device every few seconds,
// and building a jail costs a few milliseconds, which a timed mount must not include.
const jailIdle = time.Minute

// A mountJail is a thread in a jail whose /dev holds one device, mounting it on request. It
// keeps only / and the system directories: it pins no other filesystem however long it lives.
type mountJail struct {
	rdev uint64
	reqs chan mountReq
}

type mountReq struct {
	fstype string
	flags  uintptr
	data   string
	reply  chan mountReply
}

type mountReply struct {
	fd  int
	err error
}

var (
	jailsMu sync.Mutex
	jails   = map[string]*mountJail{}
)

// Mount is mount(2) of the device source on target, made in a jail whose root holds only
// /dev/source (nothing at all when source is not a path but a name the filesystem resolves, as
// jffs2's "mtd3" and ubifs's "ubi0:NAME"), then attached at target in the caller's mount
// namespace. A mount option's path (journal_path=,
// logdev=, device=) is resolved by the kernel in the jail: another device is not there, a node
// of one elsewhere cannot be opened (nodev), and a relative name starts at the jail's /. A
// *MountError carries the kernel's errno; a *SetupError says the jail could not be made (nothing
// was mounted). The jail for source is built on first use and kept while it is used, so that a
// mount costs on top of the kernel's work a hand-over to its thread and back, fsopen(2),
// fsconfig(2), fsmount(2) and move_mount(2): tens of microseconds.
func Mount(source, target, fstype string, flags uintptr, data string) error {
	reply := make(chan mountReply, 1)
	if err := send(source, mountReq{fstype: fstype, flags: flags, data: data, reply: reply}); err != nil {
		return err
	}
	r := <-reply
	if r.fd >= 0 {
		defer unix.Close(r.fd)
	}
	if r.err != nil {
		return r.err
	}
	if err := unix.MoveMount(r.fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return &MountError{fmt.Errorf("attach the jail's mount at %s: %w", target, err)}
	}
	return nil
}

// send hands req to source's jail, building one if there is none (or the device behind the path
// changed).
func send(source string, req mountReq) error {
	var nodes []node
	var rdev uint64
	if filepath.IsAbs(source) {
		var err error
		if nodes, err = nodesFor([]string{source}); err != nil {
			return &MountError{err} // what mount(2) would have said: ENOENT, ENOTBLK
		}
		rdev = nodes[0].Rdev
	}
	// Otherwise the source is a name the filesystem resolves itself (jffs2's "mtd3", ubifs's
	// "ubi0:fsbench"): the jail holds no device at all.
	jailsMu.Lock()
	defer jailsMu.Unlock()
	j := jails[source]
	if j == nil || j.rdev != rdev {
		var err error
		if j, err = startMountJail(source, nodes); err != nil {
			return err
		}
		jails[source] = j
	}
	j.reqs <- req // buffered, and the jail only leaves with its queue empty (under jailsMu)
	return nil
}

// startMountJail starts the thread of a mount jail for source and waits until its jail is built.
func startMountJail(source string, nodes []node) (*mountJail, error) {
	var rdev uint64
	if len(nodes) > 0 {
		rdev = nodes[0].Rdev
	}
	j := &mountJail{rdev: rdev, reqs: make(chan mountReq, 16)}
	built := make(chan error, 1)
	go func() {
		err := inThreadJail(jail{nodes: nodes, bare: true}, func() error {
			built <- nil
			j.serve(source)
			return nil
		})
		if err != nil {
			built <- err // only read if the jail was never built
		}
	}()
	if err := <-built; err != nil {
		return nil, err
	}
	return j, nil
}

// serve mounts what it is asked to, on its jail's thread, until it was idle for jailIdle.
func (j *mountJail) serve(source string) {
	idle := time.NewTimer(jailIdle)
	defer idle.Stop()
	for {
		select {
		case req := <-j.reqs:
			req.reply <- mountInJail(source, req.fstype, req.flags, req.data)
			idle.Reset(jailIdle)
		case <-idle.C:
			jailsMu.Lock()
			if len(j.reqs) > 0 {
				jailsMu.Unlock()
				continue
			}
			if jails[source] == j {
				delete(jails, source)
			}
			jailsMu.Unlock()
			return
		}
	}
}

// mountInJail makes the mount on the jail's thread and returns it detached, as a file
// descriptor. It uses the new mount API (fsopen, fsconfig, fsmount: Linux 5.2): the mount is
// born detached, in no namespace, so nothing of it stays in the jail (a mount left there would
// keep the filesystem, and the device, busy after fsbench unmounted it). Paths in the options
// are resolved on this thread, in the jail, by fsconfig or when the superblock is made.
func mountInJail(source, fstype string, flags uintptr, data string) mountReply {
	if flags&^newAPIFlags != 0 {
		return mountLegacy(source, fstype, flags, data)
	}
	fs, err := unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC)
	if err != nil {
		return mountReply{fd: -1, err: &MountError{err}}
	}
	defer unix.Close(fs)
	fail := func(err error) mountReply { return mountReply{fd: -1, err: &MountError{withLog(fs, err)}} }
	if err := unix.FsconfigSetString(fs, "source", source); err != nil {
		return fail(err)
	}
	for _, f := range sbFlags {
		if flags&f.flag != 0 {
			if err := unix.FsconfigSetFlag(fs, f.name); err != nil {
				return fail(err)
			}
		}
	}
	if data != "" {
		for _, opt := range strings.Split(data, ",") {
			key, val, has := strings.Cut(opt, "=")
			if has {
				err = unix.FsconfigSetString(fs, key, val)
			} else {
				err = unix.FsconfigSetFlag(fs, key)
			}
			if err != nil {
				return fail(err)
			}
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fail(err)
	}
	attrs := 0
	for _, a := range mountAttrs {
		if flags&a.flag != 0 {
			attrs |= a.attr
		}
	}
	fd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return fail(err)
	}
	return mountReply{fd: fd}
}

// sbFlags are mount(2)'s flags that belong to the superblock, by their fsconfig names.
var sbFlags = []struct {
	flag uintptr
	name string
}{{unix.MS_RDONLY, "ro"}, {unix.MS_SYNCHRONOUS, "sync"}, {unix.MS_DIRSYNC, "dirsync"}, {unix.MS_LAZYTIME, "lazytime"}, {unix.MS_MANDLOCK, "mand"}}

// mountAttrs are mount(2)'s flags that belong to the mount, as fsmount's attributes.
var mountAttrs = []struct {
	flag uintptr
	attr int
}{{unix.MS_RDONLY, unix.MOUNT_ATTR_RDONLY}, {unix.MS_NOSUID, unix.MOUNT_ATTR_NOSUID}, {unix.MS_NODEV, unix.MOUNT_ATTR_NODEV},
	{unix.MS_NOEXEC, unix.MOUNT_ATTR_NOEXEC}, {unix.MS_NOATIME, unix.MOUNT_ATTR_NOATIME}, {unix.MS_STRICTATIME, unix.MOUNT_ATTR_STRICTATIME},
	{unix.MS_NODIRATIME, unix.MOUNT_ATTR_NODIRATIME}}

// newAPIFlags are the flags the new mount API takes (MS_RELATIME is its default).
const newAPIFlags = unix.MS_RDONLY | unix.MS_SYNCHRONOUS | unix.MS_DIRSYNC | unix.MS_LAZYTIME | unix.MS_MANDLOCK |
	unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_STRICTATIME | unix.MS_NODIRATIME | unix.MS_RELATIME

// withLog adds what the kernel wrote to the filesystem context's log (read(2) on it gives one
// "e ..." line per message): the reason, where mount(2) leaves it in dmesg.
func withLog(fs int, err error) error {
	var msgs []string
	buf := make([]byte, 4096)
	for range 16 {
		n, rerr := unix.Read(fs, buf)
		if rerr != nil || n <= 0 {
			break
		}
		msg := strings.TrimSpace(string(buf[:n]))
		if len(msg) > 2 && msg[1] == ' ' {
			msg = msg[2:]
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) == 0 {
		return err
	}
	return fmt.Errorf("%w (the kernel: %s)", err, strings.Join(msgs, "; "))
}

// mountLegacy is mount(2) in the jail, for flags the new API has no name for (silent,
// iversion): the mount is taken out with open_tree(2) and the jail's own detached before the
// reply, so that it holds the filesystem no longer than the call.
func mountLegacy(source, fstype string, flags uintptr, data string) mountReply {
	if err := unix.Mount(source, mountDir, fstype, flags, data); err != nil {
		return mountReply{fd: -1, err: &MountError{err}}
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, mountDir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if uerr := unix.Unmount(mountDir, unix.MNT_DETACH); err == nil && uerr != nil {
		unix.Close(fd)
		fd, err = -1, uerr
	}
	if err != nil {
		return mountReply{fd: -1, err: &SetupError{fmt.Errorf("take the jail's mount out: %w", err)}}
	}
	return mountReply{fd: fd}
}
