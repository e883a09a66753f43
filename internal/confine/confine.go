package confine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// envSpec carries the jail's description to the re-executed binary.
const envSpec = "FSBENCH_CONFINE"

// cloneFlags are the namespaces a confined program gets: mounts, pids (its own /proc), IPC.
const cloneFlags = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC

// Spec says what a confined program may touch.
type Spec struct {
	// Devices are the device nodes it may open, by path under /dev; a symlink (a /dev/disk/by-id
	// name) is made as the node at both its own path and the one it resolves to.
	Devices []string
	// Dir is its working directory and the only place it may write; it must exist. TMPDIR
	// points there.
	Dir string
	// Read are paths it reads besides the system directories (an image builder's source): the
	// mounts they lie on stay in the jail, read-only.
	Read []string
	// Write are existing files it may write besides Dir (an image builder's output): each is
	// made writable on its own, its directory stays read-only.
	Write []string
	// Mounts are mount points of the filesystem under test it works on through the mount (the
	// nilfs2 cleaner's ioctls, which need the mount writable): kept in the jail and writable
	// there, nodev and nosuid as the rest.
	Mounts []string
	// ShareIPC, when set, puts the program in the IPC namespace of that running jail instead of
	// a new one (nilfs-clean reaches nilfs_cleanerd by POSIX message queue).
	ShareIPC *Process
	// Env is its environment (TMPDIR is set to Dir).
	Env []string
	// WaitDelay bounds how long its output pipe may stay open after it exits (exec.Cmd.WaitDelay).
	WaitDelay time.Duration
	// SysAdmin keeps CAP_SYS_ADMIN, for a tool that cannot run without it: mkfs.xfs sets the
	// device's block size (BLKBSZSET) and xfs_repair flushes its buffers (BLKFLSBUF), which the
	// kernel allows CAP_SYS_ADMIN only, and both exit when they cannot. The system call filter
	// still refuses it every mount, namespace and device-making call and every ioctl but the
	// allowed few, so that the capability buys those two requests on the device under test and
	// nothing else.
	SysAdmin bool
}

// SetupError says that the jail could not be made: the program did not run.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return "confining the program: " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// wire is the description the re-executed binary reads from envSpec.
type wire struct {
	Probe    bool `json:"probe,omitempty"` // build the jail, check it, exit 0: no program
	SysAdmin bool `json:"sys_admin,omitempty"`
	// Daemon: pid 1 stays the jail's init (it starts the program, reaps, forwards SIGTERM)
	// instead of becoming the program, so that a program that forks into the background and
	// exits keeps its daemon (the namespace dies with its pid 1).
	Daemon  bool     `json:"daemon,omitempty"`
	JoinIPC bool     `json:"join_ipc,omitempty"` // fd 4 is the IPC namespace to enter
	Path    string   `json:"path"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
	Dir     string   `json:"dir"`
	Write   []string `json:"write,omitempty"`
	Keep    []string `json:"keep"`
	Nodes   []node   `json:"nodes"`
}

// nodesFor describes the device nodes at paths (each under /dev) as the jail makes them.
func nodesFor(paths []string) ([]node, error) {
	var out []node
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("device %s: not an absolute path: %w", p, unix.ENOENT)
		}
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return nil, fmt.Errorf("device %s: %w", p, err)
		}
		typ := st.Mode & unix.S_IFMT
		if typ != unix.S_IFBLK && typ != unix.S_IFCHR {
			return nil, fmt.Errorf("%s is not a device node: %w", p, unix.ENOTBLK)
		}
		names := []string{filepath.Clean(p)}
		if real, err := filepath.EvalSymlinks(p); err == nil && real != names[0] {
			names = append(names, real)
		}
		for _, n := range names {
			if !under(n, "/dev") {
				return nil, fmt.Errorf("device %s: a confined program sees only /dev, and %s is not in it", p, n)
			}
			out = append(out, node{Path: n, Mode: typ | 0o600, Rdev: uint64(st.Rdev)})
		}
	}
	return out, nil
}

// keepPaths are the paths whose mounts a jail for program path in dir, reading read, keeps.
func keepPaths(path, dir string, read []string) []string {
	keep := append([]string{dir, filepath.Dir(path)}, read...)
	for i, p := range keep {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			keep[i] = r
		}
	}
	return keep
}

// CombinedOutput runs the program at path (absolute) with args, confined by spec, and returns
// what it wrote to its standard output and error, in the order written. Its exit status comes
// back as an *exec.ExitError, as from exec.Cmd; a jail that could not be made as a *SetupError.
// The context kills it (SIGKILL, which pid 1 of a namespace cannot ignore).
func CombinedOutput(ctx context.Context, spec Spec, path string, args ...string) ([]byte, error) {
	w, err := describe(spec, path, args)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd, status, err := start(ctx, w, &out, spec)
	if err != nil {
		return nil, err
	}
	err = cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		// The program itself exited successfully; only a descendant kept the pipe open.
		err = nil
	}
	if msg := <-status; len(msg) > 0 {
		return out.Bytes(), &SetupError{errors.New(string(msg))}
	}
	return out.Bytes(), err
}

// describe turns spec into the description the jail's pid 1 reads.
func describe(spec Spec, path string, args []string) (wire, error) {
	if !filepath.IsAbs(path) {
		return wire{}, fmt.Errorf("confine %s: give the program's absolute path", path)
	}
	dir, err := filepath.Abs(spec.Dir)
	if err != nil || spec.Dir == "" {
		return wire{}, fmt.Errorf("confine %s: no working directory", path)
	}
	nodes, err := nodesFor(spec.Devices)
	if err != nil {
		return wire{}, &SetupError{err}
	}
	env := slices.DeleteFunc(slices.Clone(spec.Env), func(e string) bool {
		return strings.HasPrefix(e, envSpec+"=") || strings.HasPrefix(e, "TMPDIR=")
	})
	for _, f := range spec.Write {
		fi, err := os.Lstat(f)
		if err != nil || !fi.Mode().IsRegular() || !filepath.IsAbs(f) {
			return wire{}, &SetupError{fmt.Errorf("%s: a confined program may write only an existing regular file, by absolute path", f)}
		}
	}
	for _, m := range spec.Mounts {
		if !filepath.IsAbs(m) {
			return wire{}, &SetupError{fmt.Errorf("%s: name a mount point by its absolute path", m)}
		}
	}
	write := append(slices.Clone(spec.Write), spec.Mounts...)
	return wire{Path: path, Args: args, Env: append(env, "TMPDIR="+dir), Dir: dir, Write: write, SysAdmin: spec.SysAdmin,
		JoinIPC: spec.ShareIPC != nil, Keep: keepPaths(path, dir, append(slices.Clone(spec.Read), write...)), Nodes: nodes}, nil
}

// start starts this binary as the jail's pid 1 with w. The status channel delivers, once the jail's
// pid 1 closed its end of the status pipe (at exec, or when a daemon's init started the program,
// or when it died), the message it wrote there: empty when the jail was built.
func start(ctx context.Context, w wire, out io.Writer, spec Spec) (*exec.Cmd, <-chan []byte, error) {
	b, err := json.Marshal(w)
	if err != nil {
		return nil, nil, err
	}
	sr, sw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	name := filepath.Base(w.Path)
	if w.Probe {
		name = "probe"
	}
	// /proc/self/exe rather than os.Executable(): the binary that is running, even if the file
	// was replaced since (an upgrade during a run).
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{"fsbench-confine " + name}
	cmd.Env = []string{envSpec + "=" + string(b)}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.ExtraFiles = []*os.File{sw}
	flags := uintptr(cloneFlags)
	if spec.ShareIPC != nil {
		ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/ipc", spec.ShareIPC.Pid()))
		if err != nil {
			sr.Close()
			sw.Close()
			return nil, nil, &SetupError{fmt.Errorf("the IPC namespace of the jail to share: %w", err)}
		}
		defer ns.Close()
		cmd.ExtraFiles = append(cmd.ExtraFiles, ns)
		flags &^= unix.CLONE_NEWIPC
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
	if w.Daemon {
		// A daemon outlives the call that started it: it dies with fsbench, even with a
		// SIGKILL that leaves no time to stop it.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	cmd.WaitDelay = spec.WaitDelay
	if err := cmd.Start(); err != nil {
		sr.Close()
		sw.Close()
		return nil, nil, &SetupError{fmt.Errorf("start a process in new namespaces: %w", err)}
	}
	sw.Close()
	status := make(chan []byte, 1)
	go func() {
		defer sr.Close()
		b, _ := io.ReadAll(sr)
		status <- b
	}()
	return cmd, status, nil
}

// A Process is a program started by Start, running in its jail.
type Process struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error
}

// Start runs the program at path with args, confined by spec, in the background: it returns once
// the program has started in its jail. The jail's pid 1 stays its init, so that a program that
// forks into the background and exits (a daemon: nilfs_cleanerd) keeps running; Stop ends it.
// The process dies with fsbench (PR_SET_PDEATHSIG).
func Start(spec Spec, path string, args ...string) (*Process, error) {
	w, err := describe(spec, path, args)
	if err != nil {
		return nil, err
	}
	w.Daemon = true
	p := &Process{out: &lockedBuffer{}, done: make(chan struct{})}
	cmd, status, err := start(context.Background(), w, p.out, spec)
	if err != nil {
		return nil, err
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if msg := <-status; len(msg) > 0 {
		<-p.done
		return nil, &SetupError{errors.New(string(msg))}
	}
	return p, nil
}

// Pid is the process id of the jail's pid 1, as this process sees it.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Running reports whether the jail still runs (its programs have not all exited).
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Output is what the jail's programs wrote to their standard output and error so far.
func (p *Process) Output() string { return p.out.String() }

// Stop asks the jail's programs to end (SIGTERM, which its init passes on to them all), waits up
// to grace for them, then kills the jail (SIGKILL). It returns how the first program ended.
func (p *Process) Stop(grace time.Duration) error {
	if p.Running() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	return p.err
}

// lockedBuffer is a buffer a program's output goes into while another goroutine reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<16 {
		return len(b), nil // a daemon's chatter: the start is what explains a failure
	}
	return l.b.Write(b)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func init() {
	if os.Getenv(envSpec) == "" {
		return
	}
	if os.Getpid() != 1 {
		// A confined child is always pid 1 of its own pid namespace: this is a stray variable
		// in someone's environment, not a jail to build.
		os.Unsetenv(envSpec)
		return
	}
	child()
}

// child builds the jail and execs the program; it never returns. It runs in init, before any
// other package's init that might start goroutines, on the main thread, which it keeps.
func child() {
	runtime.LockOSThread()
	status := os.NewFile(3, "confine status")
	fail := func(err error) {
		fmt.Fprint(status, err.Error())
		os.Exit(127)
	}
	// The status pipe closes at exec: the parent then reads nothing, and knows the program ran.
	unix.CloseOnExec(3)
	var w wire
	if err := json.Unmarshal([]byte(os.Getenv(envSpec)), &w); err != nil {
		fail(fmt.Errorf("read the jail's description: %w", err))
	}
	if w.JoinIPC {
		if err := unix.Setns(4, unix.CLONE_NEWIPC); err != nil {
			fail(fmt.Errorf("enter the IPC namespace to share: %w", err))
		}
		unix.Close(4)
	}
	last := lastCap() // before /proc is replaced
	j := jail{nodes: w.Nodes, keep: w.Keep, write: append([]string{w.Dir}, w.Write...), proc: true}
	if err := j.build(); err != nil {
		fail(err)
	}
	if err := unix.Chdir(w.Dir); err != nil {
		fail(fmt.Errorf("enter %s: %w", w.Dir, err))
	}
	if err := dropPrivileges(last, w.SysAdmin); err != nil {
		fail(err)
	}
	if w.Probe {
		os.Exit(0)
	}
	if w.Daemon {
		initDaemon(w, status, fail)
	}
	err := unix.Exec(w.Path, append([]string{w.Path}, w.Args...), w.Env)
	fail(fmt.Errorf("exec %s: %w", w.Path, err))
}

// initDaemon starts the program as a child of this pid 1, which it stays: it passes SIGTERM on
// to every process of the namespace and reaps them, and exits with the program's status once
// none is left. The program inherits this thread's capabilities, no_new_privs and filter.
func initDaemon(w wire, status *os.File, fail func(error)) {
	pid, err := syscall.ForkExec(w.Path, append([]string{w.Path}, w.Args...),
		&syscall.ProcAttr{Env: w.Env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		fail(fmt.Errorf("start %s: %w", w.Path, err))
	}
	status.Close()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-term
		unix.Kill(-1, unix.SIGTERM) // every process of this namespace but pid 1
	}()
	code := 0
	for {
		var ws unix.WaitStatus
		p, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.ECHILD) {
			break
		}
		if p == pid {
			code = ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
	}
	os.Exit(code)
}

var (
	availOnce, mountOnce sync.Once
	availErr, mountErr   error
)

// Available reports whether this kernel lets fsbench confine programs (nil), or why not: it
// builds a jail once and remembers the answer. Without it, the words a user gives mkfs cannot
// be let near a tool.
func Available() error {
	availOnce.Do(func() { availErr = probe() })
	return availErr
}

// MountAvailable reports whether fsbench can make its mounts in a jail (nil), or why not: that
// needs the new mount API (fsopen, fsmount, move_mount: Linux 5.2) besides a jail. Without it
// a mount option's path is resolved in fsbench's own namespace, and only the word check
// guards mount options.
func MountAvailable() error {
	mountOnce.Do(func() {
		if mountErr = Available(); mountErr != nil {
			return
		}
		// fsopen with a bad flag: EINVAL where the call exists, ENOSYS where not.
		if _, err := unix.Fsopen("", -1); errors.Is(err, unix.ENOSYS) {
			mountErr = errors.New("this kernel has no new mount API (fsopen, fsmount: Linux 5.2 or later)")
			return
		}
		mountErr = inThreadJail(jail{bare: true}, func() error { return nil })
	})
	return mountErr
}

func probe() error {
	if os.Geteuid() != 0 {
		return errors.New("fsbench does not run as root")
	}
	if auditArch == 0 {
		return fmt.Errorf("fsbench confines programs on amd64, arm and arm64, not on %s", runtime.GOARCH)
	}
	dir, err := os.MkdirTemp("", "fsbench-confine-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var out bytes.Buffer
	w := wire{Probe: true, Dir: dir, Keep: []string{dir}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd, status, err := start(ctx, w, &out, Spec{WaitDelay: time.Second})
	if err == nil {
		err = cmd.Wait()
		if msg := <-status; len(msg) > 0 {
			err = &SetupError{errors.New(string(msg))}
		}
	}
	if err != nil {
		return fmt.Errorf("%w %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}
