package confine

import (
	"fmt"
	"runtime"
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

// mountDir is where a mount jail mounts, in its own /dev: the new mount is taken out as a
// detached copy, so the place does not matter, and one inside the jail's tmpfs keeps every other
// directory of the machine out of the jail.
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

// Mount is mount(2) of the device source on target, made in a jail whose /dev holds only source,
// then attached at target in the caller's mount namespace. A mount option's path (journal_path=,
// logdev=, device=) is resolved by the kernel in the jail: another device is not there, a node
// of one elsewhere cannot be opened (nodev), and a relative name starts at the jail's /. A
// *MountError carries mount(2)'s errno; a *SetupError says the jail could not be made (nothing
// was mounted). The jail for source is built on first use and kept while it is used, so that a
// mount costs a hand-over to its thread and back on top of mount(2): open_tree(2) and
// move_mount(2), tens of microseconds.
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
	nodes, err := nodesFor([]string{source})
	if err != nil {
		return &MountError{err} // what mount(2) would have said: ENOENT, ENOTBLK
	}
	jailsMu.Lock()
	defer jailsMu.Unlock()
	j := jails[source]
	if j == nil || j.rdev != nodes[0].Rdev {
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
	j := &mountJail{rdev: nodes[0].Rdev, reqs: make(chan mountReq, 16)}
	built := make(chan error, 1)
	go func() {
		err := inThreadJail(jail{nodes: nodes, mountDir: true}, func() error {
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
			req.reply <- j.mount(source, req)
			// The jail's own mount goes once the copy is out; the copy keeps the filesystem.
			unix.Unmount(mountDir, unix.MNT_DETACH)
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

func (j *mountJail) mount(source string, req mountReq) mountReply {
	if err := unix.Mount(source, mountDir, req.fstype, req.flags, req.data); err != nil {
		return mountReply{fd: -1, err: &MountError{err}}
	}
	// A detached copy of the new mount: it belongs to no namespace until attached, and holds
	// the filesystem when the jail's own mount goes.
	fd, err := unix.OpenTree(unix.AT_FDCWD, mountDir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return mountReply{fd: -1, err: &SetupError{fmt.Errorf("take the jail's mount out: %w", err)}}
	}
	return mountReply{fd: fd}
}
