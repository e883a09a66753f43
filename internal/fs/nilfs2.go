package fs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/confine"
	"github.com/fsbench/fsbench/internal/mountinfo"
)

// nilfs2 is mounted as mount.nilfs2 would mount it, without running mount.nilfs2: the mount(2)
// goes through a mount jail like every other (mount.nilfs2 would make it in fsbench's own
// namespace, and a mount helper cannot run in a jail that refuses it mount(2)), then
// nilfs_cleanerd, the garbage collector that is part of how nilfs2 runs, is started in a jail of
// its own with the arguments mount.nilfs2 gives it: `nilfs_cleanerd [-p PP] DEV DIR`. Its jail
// holds the device, keeps the new mount writable (its ioctls, NILFS_IOCTL_CLEAN_SEGMENTS among
// them, need CAP_SYS_ADMIN and a writable mount) and nothing else; it lives until the unmount,
// which stops it first, as umount.nilfs2 does.

// nilfsOptions splits mount.nilfs2's own options from those for the kernel: pp=SECONDS (the
// cleaner's protection period) and nogc (no cleaner) are the helper's; gcpid= is what the helper
// records for umount.nilfs2, not a user's to give.
func nilfsOptions(options string) (pp string, gc bool, rest string, err error) {
	gc = true
	var kept []string
	for _, o := range strings.Split(options, ",") {
		switch {
		case o == "":
		case o == "nogc":
			gc = false
		case strings.HasPrefix(o, "pp="):
			pp = strings.TrimPrefix(o, "pp=")
			if _, err := strconv.ParseUint(pp, 10, 32); err != nil {
				return "", false, "", fmt.Errorf("mount option %q: the protection period is a number of seconds", o)
			}
		case strings.HasPrefix(o, "gcpid="):
			return "", false, "", fmt.Errorf("mount option %q is mount.nilfs2's record of the cleaner it started; fsbench starts the cleaner itself", o)
		default:
			kept = append(kept, o)
		}
	}
	return pp, gc, strings.Join(kept, ","), nil
}

// cleaner is a nilfs_cleanerd running in its jail for one mount.
type cleaner struct {
	p   *confine.Process
	dev string
	dir string // its private working directory, removed when it stops
}

var cleaners = struct {
	sync.Mutex
	m map[string]*cleaner // by mount point
}{m: map[string]*cleaner{}}

func takeCleaner(mnt string) *cleaner {
	cleaners.Lock()
	defer cleaners.Unlock()
	c := cleaners.m[filepath.Clean(mnt)]
	delete(cleaners.m, filepath.Clean(mnt))
	return c
}

func cleanerOf(mnt string) *cleaner {
	cleaners.Lock()
	defer cleaners.Unlock()
	return cleaners.m[filepath.Clean(mnt)]
}

// stop ends the cleaner (SIGTERM, which it handles by finishing its pass) and removes its
// directory.
func (c *cleaner) stop() {
	c.p.Stop(10 * time.Second)
	os.RemoveAll(c.dir)
}

// mountNilfs2 mounts nilfs2 and starts its cleaner, each in a jail; where the kernel allows no
// jail, the defaults go through mount(8) (whose helper starts the cleaner) as they are, and
// options are refused.
func mountNilfs2(ctx context.Context, k Kind, dev, dir, options string) error {
	if why := jailAvailable(); why != nil {
		if options != "" {
			return fmt.Errorf("%s: %w", mountLine(k, dev, dir, options), &UnconfinedError{why})
		}
		return mountCommand(ctx, k, dev, dir, options)
	}
	pp, gc, rest, err := nilfsOptions(options)
	if err != nil {
		return fmt.Errorf("%s: %w", mountLine(k, dev, dir, options), err)
	}
	flags, data, err := MountFlags(rest)
	if err != nil {
		return fmt.Errorf("%s: %w", mountLine(k, dev, dir, options), err)
	}
	if err := mountJailed(k, dev, dir, options, flags, data); err != nil {
		return err
	}
	if !gc || flags&unix.MS_RDONLY != 0 {
		return nil // mount.nilfs2 starts no cleaner on a read-only mount either
	}
	c, err := startCleaner(ctx, dev, dir, pp)
	if err != nil {
		uerr := unmountQuietly(dir)
		return fmt.Errorf("%s: starting nilfs2's cleaner: %w%s", mountLine(k, dev, dir, options), err, uerr)
	}
	cleaners.Lock()
	cleaners.m[filepath.Clean(dir)] = c
	cleaners.Unlock()
	return nil
}

// unmountQuietly undoes a mount whose cleaner could not start; a failure is appended to the
// error that explains why.
func unmountQuietly(dir string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := mountinfo.Unmount(ctx, dir, mountinfo.UnmountOptions{}); err != nil {
		return fmt.Sprintf(" (and unmounting it again failed: %v)", err)
	}
	return ""
}

// startCleaner starts nilfs_cleanerd for the nilfs2 on dev mounted at mnt, in its jail, and waits
// until it said it runs (mount.nilfs2 waits for the same line).
func startCleaner(ctx context.Context, dev, mnt, pp string) (*cleaner, error) {
	path, err := hostLookPath("nilfs_cleanerd")
	if err != nil {
		return nil, fmt.Errorf("nilfs_cleanerd not found: install the Debian package nilfs-tools")
	}
	base, _ := ctx.Value(workDirKey{}).(string)
	dir, err := os.MkdirTemp(base, ".confined-")
	if err != nil {
		return nil, fmt.Errorf("making the cleaner's private directory: %w", err)
	}
	var args []string
	if pp != "" {
		args = append(args, "-p", pp)
	}
	args = append(args, dev, mnt)
	p, err := confine.Start(confine.Spec{Devices: []string{dev}, Dir: dir, Mounts: []string{mnt}, Env: toolEnv(), SysAdmin: true,
		WaitDelay: waitDelay}, path, args...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &cleaner{p: p, dev: dev, dir: dir}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.Output(), "NILFS_CLEANERD_PID=") {
		if !p.Running() || time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("%s: it did not start: %s", commandLine(path, args), strings.TrimSpace(p.Output()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c, nil
}

// runNilfsClean asks the cleaner of the nilfs2 on dev mounted at mnt for a pass (nilfs-clean
// ARGS DEV), from a jail that shares the cleaner's IPC namespace (it talks to the cleaner by
// POSIX message queue) and sees the mount writable (it looks for a read-write nilfs2 in the
// mount table). Without a jailed cleaner (mounted through mount(8)) it runs as it is: no user's
// word is on its command line.
func runNilfsClean(ctx context.Context, run Runner, dev, mnt string, args ...string) ([]byte, error) {
	argv := append(slices.Clone(args), dev)
	c := cleanerOf(mnt)
	if c == nil || run != nil {
		return runner(run)(ctx, "nilfs-clean", argv...)
	}
	path, err := hostLookPath("nilfs-clean")
	if err != nil {
		return nil, err
	}
	base, _ := ctx.Value(workDirKey{}).(string)
	dir, err := os.MkdirTemp(base, ".confined-")
	if err != nil {
		return nil, fmt.Errorf("making the private directory of nilfs-clean: %w", err)
	}
	defer os.RemoveAll(dir)
	return confine.CombinedOutput(ctx, confine.Spec{Devices: []string{dev}, Dir: dir, Mounts: []string{mnt}, ShareIPC: c.p,
		Env: toolEnv(), WaitDelay: waitDelay}, path, argv...)
}
