package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/mountinfo"
)

// node is a device node the jail's /dev holds: the same type and device number as on the machine.
type node struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"` // S_IFBLK or S_IFCHR with permission bits
	Rdev uint64 `json:"rdev"`
}

// harmless are the nodes every jail has: programs open them without naming them (libc, getrandom
// fallbacks, "write zeros to /dev/null"). Their numbers are fixed by the kernel (devices.txt).
var harmless = []node{
	{"/dev/null", unix.S_IFCHR | 0o666, unix.Mkdev(1, 3)},
	{"/dev/zero", unix.S_IFCHR | 0o666, unix.Mkdev(1, 5)},
	{"/dev/full", unix.S_IFCHR | 0o666, unix.Mkdev(1, 7)},
	{"/dev/random", unix.S_IFCHR | 0o666, unix.Mkdev(1, 8)},
	{"/dev/urandom", unix.S_IFCHR | 0o666, unix.Mkdev(1, 9)},
}

// systemDirs hold the programs, their libraries and their configuration (/etc/mke2fs.conf): the
// mounts on them stay in the jail, read-only.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// jail is what build makes of the calling thread's (already private) mount namespace.
type jail struct {
	nodes []node
	// keep are paths the jailed code needs (the program, its working directory, an image
	// builder's source, a mount target): the mounts they lie on stay, every other one is detached.
	keep []string
	// write are the writable places: the working directory, an image builder's output file.
	write []string
	// proc mounts a new /proc: only right in a new pid namespace (a /proc of the machine's pid
	// namespace would show every process's root). Without it /proc is an empty directory.
	proc bool
	// bare is a mount jail: its root is a tmpfs that holds only /dev with the nodes and the
	// directory it mounts on (mountDir), entered with chroot. The kernel resolves a mount
	// option's path from there, and some options (ext4's journal_path=) take the device
	// number of the node they find and open it without the nodev check of an open(2): no
	// other node may be in reach, on any mount.
	bare bool
}

// forceRemount makes build use the remount fallback of kernels without mount_setattr(2), so
// that the fallback is tested on kernels that have it.
var forceRemount = false

// build turns the current mount namespace, which must be a new one of the calling thread's
// (CLONE_NEWNS), into the jail. It needs CAP_SYS_ADMIN and CAP_MKNOD; nothing it does is seen
// outside the namespace.
func (j jail) build() error {
	// Private first: the unmounts and mounts below must not propagate to the machine's
	// namespace (systemd makes / shared).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	// thread-self: in the thread-only namespace of Mount, /proc/self is the thread group
	// leader's, which is still in the machine's namespace.
	ms, err := mountinfo.Read("/proc/thread-self/mountinfo")
	if err != nil {
		return err
	}
	left, err := j.detachUnneeded(ms)
	if err != nil {
		return err
	}
	if err := readOnly(left); err != nil {
		return err
	}
	if err := j.makeDev(); err != nil {
		return err
	}
	if j.bare {
		// chroot on this thread alone: CLONE_NEWNS unshared its filesystem context.
		if err := unix.Chroot(bareRoot); err != nil {
			return fmt.Errorf("enter the mount jail's root: %w", err)
		}
		return unix.Chdir("/")
	}
	if j.proc {
		// The /proc of the new pid namespace: /proc/1 is the jailed program itself.
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("mount /proc: %w", err)
		}
	}
	for _, w := range j.write {
		// A bind mount of the directory (or file) onto itself is a mount of its own, whose
		// read-only flag can be cleared without touching the rest; it stays nodev and nosuid.
		if err := unix.Mount(w, w, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", w, err)
		}
		if err := setAttr(w, false, 0, unix.MOUNT_ATTR_RDONLY); err != nil {
			return fmt.Errorf("make %s writable: %w", w, err)
		}
	}
	return nil
}

// detachUnneeded detaches (MNT_DETACH) every mount but those the jailed code needs: / and the
// mounts on the way to a kept path or a system directory, and what is mounted inside a system
// directory. /dev and /proc go too (replaced below), and /sys keeps only sysfs itself. A copy
// of another filesystem's mount in this namespace would keep that filesystem alive after its
// owner unmounted it, and with it the device busy (another run's next mkfs would fail EBUSY).
// It returns the mount points left.
func (j jail) detachUnneeded(ms []mountinfo.Entry) ([]string, error) {
	need := append(slices.Clone(j.keep), "/sys")
	need = append(need, systemDirs...)
	keep := func(mp string) bool {
		if mp == "/dev" || mp == "/proc" || under(mp, "/dev") || under(mp, "/proc") {
			return false
		}
		for _, p := range need {
			if mp == p || under(p, mp) {
				return true
			}
		}
		for _, d := range systemDirs {
			if under(mp, d) {
				return true
			}
		}
		return false
	}
	var drop, left []string
	for _, m := range ms {
		if m.MountPoint != "/" && !keep(m.MountPoint) {
			drop = append(drop, m.MountPoint)
		} else {
			left = append(left, m.MountPoint)
		}
	}
	// Shallowest first: MNT_DETACH takes a mount's whole subtree, and each umount2 costs an RCU
	// grace period, so one call per subtree.
	slices.SortStableFunc(drop, func(a, b string) int { return mountinfo.Depth(a) - mountinfo.Depth(b) })
	var done []string
	for _, mp := range drop {
		if slices.ContainsFunc(done, func(d string) bool { return mp == d || under(mp, d) }) {
			continue
		}
		done = append(done, mp)
		// Until it is no mount point (EINVAL): mounts stacked on one path go one by one.
		for range 16 {
			err := unix.Unmount(mp, unix.MNT_DETACH)
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("detach %s: %w", mp, err)
			}
		}
	}
	return left, nil
}

// under reports whether p lies strictly below dir.
func under(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// readOnly makes every mount left read-only, nodev (a device node on it cannot be opened: the
// kernel checks this for its own lookups too, e.g. a mount option's journal path) and nosuid.
func readOnly(mounts []string) error {
	const attrs = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOSUID
	err := setAttr("/", true, attrs, 0)
	if err == nil || !errors.Is(err, unix.ENOSYS) {
		if err != nil {
			return fmt.Errorf("make the mounts read-only: %w", err)
		}
		return nil
	}
	// Before Linux 5.12: remount each mount on its own (one that a later mount hides is out
	// of reach by path, for the program too).
	for _, mp := range mounts {
		flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NODEV | unix.MS_NOSUID)
		if err := unix.Mount("", mp, "", flags, ""); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("remount %s read-only: %w", mp, err)
		}
	}
	return nil
}

// setAttr sets and clears MOUNT_ATTR_* flags on the mount at path (and every mount below it when
// recursive), with mount_setattr(2); on kernels without it (or with forceRemount) it reports
// ENOSYS unless a single mount can be remounted instead.
func setAttr(path string, recursive bool, set, clear uint64) error {
	if !forceRemount {
		flags := uint(0)
		if recursive {
			flags = unix.AT_RECURSIVE
		}
		err := unix.MountSetattr(unix.AT_FDCWD, path, flags, &unix.MountAttr{Attr_set: set, Attr_clr: clear})
		if !errors.Is(err, unix.ENOSYS) {
			return err
		}
	}
	if recursive {
		return unix.ENOSYS
	}
	// One mount: MS_REMOUNT|MS_BIND replaces its per-mount flags with those given.
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_NODEV | unix.MS_NOSUID)
	if set&unix.MOUNT_ATTR_RDONLY != 0 {
		flags |= unix.MS_RDONLY
	}
	if set&unix.MOUNT_ATTR_NOEXEC != 0 {
		flags |= unix.MS_NOEXEC
	}
	if clear&unix.MOUNT_ATTR_NODEV != 0 {
		flags &^= unix.MS_NODEV
	}
	return unix.Mount("", path, "", flags, "")
}

// bareRoot is where a bare jail's root is made, in the tmpfs mounted on /dev.
const bareRoot = "/dev/.fsbench-root"

// makeDev mounts a new tmpfs on /dev with the jail's nodes, then makes it read-only. It is the
// only mount without nodev. A bare jail's nodes and mount directory go into bareRoot's own dev/
// instead, so that they keep their paths once it is the root.
func (j jail) makeDev() error {
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=65536"); err != nil {
		return fmt.Errorf("mount a tmpfs on /dev: %w", err)
	}
	nodes, prefix := append(slices.Clone(harmless), j.nodes...), ""
	if j.bare {
		// Nothing but the device: the kernel needs no /dev/null to mount.
		nodes, prefix = j.nodes, bareRoot
	}
	for _, n := range nodes {
		p := prefix + n.Path
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := unix.Mknod(p, n.Mode, int(n.Rdev)); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("make %s: %w", n.Path, err)
		}
		// mknod applies the umask.
		if err := unix.Chmod(p, n.Mode&0o7777); err != nil {
			return err
		}
	}
	if j.bare {
		if err := os.MkdirAll(prefix+mountDir, 0o700); err != nil {
			return err
		}
	}
	if j.proc {
		for name, to := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
			if err := os.Symlink(to, "/dev/"+name); err != nil {
				return err
			}
		}
		// POSIX semaphores and shared memory live in /dev/shm (nilfs_cleanerd's GC lock is a
		// semaphore): a small tmpfs of the jail's own, nodev, noexec, nosuid.
		if err := os.Mkdir("/dev/shm", 0o755); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=1048576"); err != nil {
			return fmt.Errorf("mount a tmpfs on /dev/shm: %w", err)
		}
	}
	if err := setAttr("/dev", false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, unix.MOUNT_ATTR_NODEV); err != nil {
		return fmt.Errorf("make /dev read-only: %w", err)
	}
	return nil
}
