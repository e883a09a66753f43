package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/confine"
)

// Runner runs an external program and returns its combined output (stdout and stderr through
// one pipe, in the order the program wrote them). The default uses os/exec with the context
// (killed at the deadline). Tests inject a fake to check argument lists.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// DefaultRunner runs programs for real. A nil Runner passed to this package means DefaultRunner.
var DefaultRunner Runner = execRunner

// waitDelay bounds how long a finished command's output pipe may stay open.
const waitDelay = 2 * time.Second

func execRunner(ctx context.Context, name string, args ...string) ([]byte, error) {
	path := name
	if !strings.Contains(name, "/") {
		// The mkfs tools live in /usr/sbin, which an ordinary user's PATH lacks; listing
		// tool versions needs no root.
		if p, err := hostLookPath(name); err == nil {
			path = p
		}
	}
	if j, ok := ctx.Value(jailKey{}).(jail); ok {
		return runConfined(ctx, j, path, args)
	}
	return runPlain(ctx, path, args)
}

// runPlain runs path as it is.
func runPlain(ctx context.Context, path string, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = toolEnv()
	// mount.nilfs2 starts nilfs_cleanerd, a daemon that may inherit the output pipe; without a
	// WaitDelay, CombinedOutput would wait for the daemon to exit, i.e. until unmount.
	cmd.WaitDelay = waitDelay
	out, err := cmd.CombinedOutput()
	if errors.Is(err, exec.ErrWaitDelay) {
		// The program itself exited successfully; only a descendant kept the pipe open.
		err = nil
	}
	return out, err
}

// toolEnv is the environment of every program fsbench runs. Messages are parsed (version lines,
// "unknown filesystem type") and stored with results: a localized tool would break the first and
// make the second unreadable to others.
func toolEnv() []string { return append(os.Environ(), "LC_ALL=C") }

// jail is what a program run against a device may touch: DefaultRunner runs it confined (package
// confine) when its context carries one (withJail). Only this package makes jails, for the
// programs it points at a device: mkfs, fsck, image builders.
type jail struct {
	devices []string // the device under test, the only one in the program's /dev
	read    []string // what it reads besides the system's directories (an image builder's source)
	// write are files it may write besides its directory (an image builder's output), made
	// (empty) if missing.
	write []string
	// userWords: its command line holds words a user gave (a variant's mkfs words), which
	// must not reach a program that cannot be confined.
	userWords bool
}

// sysAdmin reports whether the program at path, run with args, keeps CAP_SYS_ADMIN in its jail,
// and why. strace shows what the xfs tools use it for: mkfs.xfs sets the device's block size
// (BLKBSZSET) and exits when it cannot ("cannot set blocksize 512 on block device: Permission
// denied"); xfs_repair, when it repairs, flushes the device's buffers (BLKFLSBUF) and exits when
// that fails ("Flushing the data device failed, err=13"). The kernel allows both ioctls to
// CAP_SYS_ADMIN only (block/ioctl.c). xfs_repair -n (a check) and xfs_db -r need neither and
// run without it. What the capability would give beyond those two requests the system call
// filter takes away: every mount, namespace and node-making call, and every other ioctl
// (passthrough commands, a filesystem's shutdown or freeze) answer EPERM.
func sysAdmin(path string, args []string) (string, bool) {
	switch filepath.Base(path) {
	case "mkfs.xfs":
		return "sets the device's block size (BLKBSZSET) and exits when it cannot", true
	case "xfs_repair":
		if !slices.Contains(args, "-n") {
			return "flushes the device's buffers (BLKFLSBUF) after repairing and exits when it cannot", true
		}
	}
	return "", false
}

type jailKey struct{}

func withJail(ctx context.Context, j jail) context.Context {
	return context.WithValue(ctx, jailKey{}, j)
}

type workDirKey struct{}

// WithWorkDir names the run's work directory: the private directory of each confined program
// is made in it (it is the system's temporary directory otherwise).
func WithWorkDir(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, workDirKey{}, dir)
}

// UnconfinedError refuses to hand a user's words to a program when the kernel does not let
// fsbench confine it.
type UnconfinedError struct{ Why error }

func (e *UnconfinedError) Error() string {
	return "mkfs and mount options given in a configuration are refused on this machine: fsbench runs the tools they go to " +
		"in a jail the kernel enforces (a mount namespace whose /dev holds only the device under test), and this kernel " +
		"refuses one (" + e.Why.Error() + "); remove the options (the default mkfs and mount of each filesystem still run), " +
		"or run fsbench where it may make namespaces (as root, outside a restricted container)"
}

func (e *UnconfinedError) Unwrap() error { return e.Why }

// jailAvailable and mountJailAvailable are confine's answers; tests replace them to take the
// path of a machine that allows no jail.
var (
	jailAvailable      = confine.Available
	mountJailAvailable = confine.MountAvailable
)

// Confinement says whether the programs fsbench points at a device run confined here (nil), or
// why not.
func Confinement() error { return jailAvailable() }

// ConfinementMethod says, for a run's methods, how the tools ran here.
func ConfinementMethod() string {
	if err := jailAvailable(); err != nil {
		return "not confined: " + err.Error() + "; the variants' own mkfs and mount options were refused, the defaults ran as they are"
	}
	mounts := "mounts were made in such a jail, whose root holds only the device (fsopen, fsmount); the mount time includes a hand-over to the jail's thread (tens of microseconds)"
	if err := mountJailAvailable(); err != nil {
		mounts = "mounts were not (" + err.Error() + "): the variants' own mount options were refused, the default mounts ran as they are"
	}
	return "mkfs, fsck, image builders and every other program pointed at a device ran confined (a mount namespace whose /dev holds only that device, every other mount read-only and nodev, " +
		"a new pid namespace, a private working directory, capabilities dropped, no_new_privs, a system call allowlist); the mkfs time includes starting the tool in its jail (a few milliseconds); " +
		mounts
}

// runConfined runs path confined by j; where confinement is impossible, it runs it as it is if
// no user's word is on its command line, and refuses otherwise.
func runConfined(ctx context.Context, j jail, path string, args []string) ([]byte, error) {
	if !filepath.IsAbs(path) {
		_, err := exec.LookPath(path) // not installed: say so as exec does
		return nil, err
	}
	if err := jailAvailable(); err != nil {
		if j.userWords {
			return nil, &UnconfinedError{err}
		}
		return runPlain(ctx, path, args)
	}
	// The program's working directory, the one place it may write: made for this call in the
	// run's work directory (WithWorkDir) and used by nothing else, so whatever the program left
	// there goes with it (RemoveAll follows no symlink, and nothing can be mounted there from
	// the jail).
	base, _ := ctx.Value(workDirKey{}).(string)
	dir, err := os.MkdirTemp(base, ".confined-")
	if err != nil {
		return nil, fmt.Errorf("making the private directory of %s: %w", path, err)
	}
	defer os.RemoveAll(dir)
	for _, w := range j.write {
		f, err := os.OpenFile(w, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("making %s for %s to write: %w", w, path, err)
		}
		f.Close()
	}
	_, admin := sysAdmin(path, args)
	return confine.CombinedOutput(ctx, confine.Spec{Devices: j.devices, Dir: dir, Read: j.read, Write: j.write, Env: toolEnv(),
		WaitDelay: waitDelay, SysAdmin: admin},
		path, args...)
}

func runner(run Runner) Runner {
	if run == nil {
		return DefaultRunner
	}
	return run
}

// maxOutput is how much of a failed tool's output goes into an error: the end is what matters.
const maxOutput = 4096

// cmdError wraps err from running name args with the command line and the tool's output, so that
// the user can rerun the command by hand.
func cmdError(ctx context.Context, name string, args []string, err error, out []byte) error {
	line := commandLine(name, args)
	if ctx.Err() != nil {
		// exec reports only "signal: killed"; say why it was killed.
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	text := trimUsage(strings.TrimSpace(string(out)))
	if len(text) > maxOutput {
		text = "..." + text[len(text)-maxOutput:]
	}
	if text == "" {
		return fmt.Errorf("%s: %w (no output)", line, err)
	}
	return fmt.Errorf("%s: %w: %s", line, err, text)
}

// trimUsage drops a usage text from a tool's output: mkfs.xfs prints its whole 28-line usage
// after the one line that says what was wrong ("Filesystem must be larger than 300MB."), and that
// line is all a person (or a results cell) needs.
func trimUsage(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(l)), "usage:") {
			if before := strings.TrimSpace(strings.Join(lines[:i], "\n")); before != "" {
				return before + " (usage text left out)"
			}
			return strings.TrimSpace(l) + " (rest of the usage text left out)"
		}
	}
	return text
}

// commandLine renders a command as a shell would take it, quoting only where needed.
func commandLine(name string, args []string) string {
	parts := make([]string, 0, 1+len(args))
	parts = append(parts, shellQuote(name))
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("-_=+,.:/@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
