package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/confine"
	"github.com/fsbench/fsbench/internal/mountinfo"
)

// flagOpt is a mount option the kernel takes as an MS_* flag: it clears the bits in clear, then
// sets those in set.
type flagOpt struct{ set, clear uintptr }

// The atime options form one group: each clears the others, so the last one given wins. mount(8)
// would pass "strictatime,noatime" as two bits and the kernel would silently pick strictatime
// whatever the order; for a benchmark whose option string is recorded with the results, "last
// wins" is the reading a person expects.
const atimeBits = unix.MS_NOATIME | unix.MS_RELATIME | unix.MS_STRICTATIME

var flagOpts = map[string]flagOpt{
	"ro":            {set: unix.MS_RDONLY},
	"rw":            {clear: unix.MS_RDONLY},
	"nosuid":        {set: unix.MS_NOSUID},
	"suid":          {clear: unix.MS_NOSUID},
	"nodev":         {set: unix.MS_NODEV},
	"dev":           {clear: unix.MS_NODEV},
	"noexec":        {set: unix.MS_NOEXEC},
	"exec":          {clear: unix.MS_NOEXEC},
	"sync":          {set: unix.MS_SYNCHRONOUS},
	"async":         {clear: unix.MS_SYNCHRONOUS},
	"dirsync":       {set: unix.MS_DIRSYNC},
	"mand":          {set: unix.MS_MANDLOCK},
	"nomand":        {clear: unix.MS_MANDLOCK},
	"silent":        {set: unix.MS_SILENT},
	"loud":          {clear: unix.MS_SILENT},
	"iversion":      {set: unix.MS_I_VERSION},
	"noiversion":    {clear: unix.MS_I_VERSION},
	"lazytime":      {set: unix.MS_LAZYTIME},
	"nolazytime":    {clear: unix.MS_LAZYTIME},
	"nodiratime":    {set: unix.MS_NODIRATIME},
	"diratime":      {clear: unix.MS_NODIRATIME},
	"noatime":       {set: unix.MS_NOATIME, clear: atimeBits},
	"relatime":      {set: unix.MS_RELATIME, clear: atimeBits},
	"strictatime":   {set: unix.MS_STRICTATIME, clear: atimeBits},
	"atime":         {clear: unix.MS_NOATIME},
	"norelatime":    {clear: unix.MS_RELATIME},
	"nostrictatime": {clear: unix.MS_STRICTATIME},
	// "defaults" means rw,suid,dev,exec,async: all of them the kernel's defaults already, so
	// like mount(8) it sets nothing, and "ro,defaults" stays read-only.
	"defaults": {},
	// fstab and mount(8) options the kernel never sees: mount(8) drops them, and so do we
	// rather than hand them to the filesystem, which would reject them.
	"auto": {}, "noauto": {}, "nofail": {}, "_netdev": {},
	"user": {}, "nouser": {}, "users": {}, "owner": {}, "group": {},
}

// changeOpts change an existing mount or its propagation; Mount only ever makes a fresh one.
var changeOpts = map[string]bool{
	"remount": true, "bind": true, "rbind": true, "move": true,
	"shared": true, "rshared": true, "private": true, "rprivate": true,
	"slave": true, "rslave": true, "unbindable": true, "runbindable": true,
}

// MountFlags splits a mount -o string into MS_* flags and the filesystem-specific data string:
// ro, rw, noatime, nodiratime, relatime, strictatime, lazytime, dirsync, sync, nodev, nosuid,
// noexec, defaults, ... are flags; everything else (discard, compress=zstd, data=writeback,
// commit=60, ...) goes to data, in order. Contradictions like "ro,rw" resolve as mount(8) does:
// the last wins. fstab-only options (noauto, nofail, x-*, comment=...) are dropped. Whitespace
// and empty options are rejected: they are typos, and the kernel would take them literally.
func MountFlags(options string) (flags uintptr, data string, err error) {
	if options == "" {
		return 0, "", nil
	}
	if i := strings.IndexFunc(options, unicode.IsSpace); i >= 0 {
		return 0, "", fmt.Errorf("mount options %q contain whitespace: separate options with commas only", options)
	}
	var rest []string
	for _, opt := range strings.Split(options, ",") {
		if opt == "" {
			return 0, "", fmt.Errorf("mount options %q contain an empty option (two commas, or one at an end)", options)
		}
		if f, ok := flagOpts[opt]; ok {
			flags = flags&^f.clear | f.set
			continue
		}
		if changeOpts[opt] {
			return 0, "", fmt.Errorf("mount option %q changes an existing mount; fsbench only makes fresh mounts", opt)
		}
		if strings.HasPrefix(opt, "x-") || strings.HasPrefix(opt, "comment=") {
			continue
		}
		rest = append(rest, opt)
	}
	return flags, strings.Join(rest, ","), nil
}

// Mount mounts dev on dir with type k.Name and options (as for mount -o), with the mount(2)
// system call made in a jail whose root holds only dev (package confine): a path in an option is
// resolved there, where no other device is. jffs2's and ubifs's sources are names ("mtd3",
// "ubi0:fsbench"), not paths: their jail holds no device at all. nilfs2 is mounted the same way,
// and then its cleaner, nilfs_cleanerd, is started in a jail of its own, as mount.nilfs2 would
// (mountNilfs2). Where the kernel allows no jail (no namespaces, or no new mount API before
// Linux 5.2), options are refused and a mount without any runs as it is. Read-only kinds are
// always mounted read-only.
func Mount(ctx context.Context, k Kind, dev, dir, options string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", mountLine(k, dev, dir, options), err)
	}
	if err := checkDevice(ctx, dev); err != nil {
		return fmt.Errorf("%s: %w", mountLine(k, dev, dir, options), err)
	}
	if k.Name == "nilfs2" {
		return mountNilfs2(ctx, k, dev, dir, options)
	}
	flags, data, err := MountFlags(options)
	if err != nil {
		return fmt.Errorf("%s: %w", mountLine(k, dev, dir, options), err)
	}
	return mountJailed(k, dev, dir, options, flags, data)
}

// mountJailed makes the mount through a mount jail (confine.Mount), or, where the kernel allows
// none, as it is when options (the user's words) is empty, and refuses it otherwise.
func mountJailed(k Kind, dev, dir, options string, flags uintptr, data string) error {
	if k.ReadOnly {
		// squashfs and erofs cannot be written; asking for rw would only make the kernel open
		// the block device for writing.
		flags |= unix.MS_RDONLY
	}
	var err error
	var se *confine.SetupError
	if why := mountJailAvailable(); why != nil {
		if options != "" {
			return fmt.Errorf("%s: %w", mountLine(k, dev, dir, options), &UnconfinedError{why})
		}
		// No word of the user's: the default mount runs as it is.
		err = unix.Mount(dev, dir, k.Name, flags, data)
	} else if err = confine.Mount(dev, dir, k.Name, flags, data); errors.As(err, &se) {
		if options != "" {
			return fmt.Errorf("%s: %w", mountLine(k, dev, dir, options), &UnconfinedError{err})
		}
		err = unix.Mount(dev, dir, k.Name, flags, data)
	}
	if err != nil {
		return mountError(k, dev, dir, options, err)
	}
	return nil
}

// mountLine describes a mount as mount(8) would be asked for it.
func mountLine(k Kind, dev, dir, options string) string {
	if options == "" {
		options = "none"
	}
	return fmt.Sprintf("mount -t %s %s on %s (options %s)", k.Name, dev, dir, options)
}

// mountError explains a failed mount(2), keeping errno for errors.Is.
func mountError(k Kind, dev, dir, options string, err error) error {
	line := mountLine(k, dev, dir, options)
	var hint string
	switch {
	case errors.Is(err, unix.ENODEV):
		hint = fmt.Sprintf("this kernel has no %s (not in /proc/filesystems): load its module (modprobe %s) or use a kernel that has it",
			k.Name, k.Module)
	case errors.Is(err, unix.EINVAL):
		// The kernel says which in its log only: an option it does not know, or no valid
		// filesystem of this type on the device.
		hint = fmt.Sprintf("a bad option, or no valid %s on %s (dmesg says which)", k.Name, dev)
	case errors.Is(err, unix.ENOTBLK):
		hint = fmt.Sprintf("%s is not a block device: attach a file to a loop device first", dev)
	case errors.Is(err, unix.EBUSY):
		hint = fmt.Sprintf("%s is in use or already mounted", dev)
	case errors.Is(err, unix.EPERM):
		hint = "mounting needs root"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EROFS):
		hint = fmt.Sprintf("%s is read-only: add the option ro", dev)
	case errors.Is(err, unix.ENOENT):
		hint = fmt.Sprintf("%s or %s does not exist", dev, dir)
	}
	if hint == "" {
		return fmt.Errorf("%s: %w", line, err)
	}
	return fmt.Errorf("%s: %w: %s", line, err, hint)
}

// mountCommand mounts through mount(8), for nilfs2 where no jail can be made (mount.nilfs2 then
// starts nilfs_cleanerd itself).
func mountCommand(ctx context.Context, k Kind, dev, dir, options string) error {
	args := []string{"-t", k.Name}
	if options != "" {
		args = append(args, "-o", options)
	}
	args = append(args, dev, dir)
	out, err := DefaultRunner(ctx, "mount", args...)
	if err == nil {
		return nil
	}
	// mountLine already shows the command; cmdError adds the exit status and the output.
	e := cmdError(ctx, "mount", nil, err, out)
	line := mountLine(k, dev, dir, options)
	// mount(8) says "unknown filesystem type"; mount.nilfs2, which it hands nilfs2 to, says
	// "cannot find or load nilfs2 filesystem".
	if bytes.Contains(out, []byte("unknown filesystem type")) || bytes.Contains(out, []byte("cannot find or load")) {
		return fmt.Errorf("%s: %w: this kernel has no %s (not in /proc/filesystems): load its module (modprobe %s) or use a kernel that has it",
			line, e, k.Name, k.Module)
	}
	return fmt.Errorf("%s: %w", line, e)
}

// Unmount unmounts dir, retrying EBUSY briefly (udev and blkid may hold the device for a moment).
// A nilfs2 mount's cleaner is stopped first (as umount.nilfs2 does); one mounted through mount(8)
// (where no jail can be made) goes through umount(8), which stops it. Not mounted is no error.
func Unmount(ctx context.Context, k Kind, dir string) error {
	if k.Name == "nilfs2" {
		if c := takeCleaner(dir); c != nil {
			c.stop()
		} else if jailAvailable() != nil {
			return unmountCommand(ctx, dir)
		}
	}
	_, err := mountinfo.Unmount(ctx, dir, mountinfo.UnmountOptions{})
	return err
}

// unmountCommand unmounts through umount(8), retrying while it says the mount is busy.
func unmountCommand(ctx context.Context, dir string) error {
	give := time.Now().Add(5 * time.Second)
	delay := 10 * time.Millisecond
	for {
		mounted, err := mountinfo.MountedAt(dir)
		if err != nil {
			return fmt.Errorf("umount %s: %w", dir, err)
		}
		if !mounted {
			return nil
		}
		out, err := DefaultRunner(ctx, "umount", dir)
		if err == nil {
			return nil
		}
		if !bytes.Contains(out, []byte("busy")) || time.Now().After(give) {
			return cmdError(ctx, "umount", []string{dir}, err, out)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("umount %s: busy, gave up: %w", dir, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// MountTmpfs mounts a private tmpfs of at most size bytes on dir: the dataset source lives in RAM,
// as in Bootlin's method, so reading it costs the benchmark nothing. UnmountTmpfs undoes it.
func MountTmpfs(dir string, size uint64) error {
	if size == 0 {
		// size=0 would mean "no limit" to tmpfs: a runaway dataset could take all memory.
		return fmt.Errorf("mount tmpfs on %s: size 0: give a size in bytes", dir)
	}
	data := fmt.Sprintf("size=%d,mode=0755", size)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return mountError(Kind{Name: "tmpfs", Module: "tmpfs"}, "tmpfs", dir, data, err)
	}
	// Private propagation: if the parent mount is shared (systemd makes / shared), this mount
	// and its unmount would otherwise be copied into every peer namespace.
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		_, undo := mountinfo.Unmount(context.Background(), dir, mountinfo.UnmountOptions{})
		return errors.Join(fmt.Errorf("make tmpfs on %s private: %w", dir, err), undo)
	}
	return nil
}

// MountKernelFS mounts a filesystem of the kernel's own that has no device (tracefs, cgroup2)
// on dir, with the MS_* flags given; source is what the mount table shows for it.
func MountKernelFS(source, dir, fstype string, flags uintptr) error {
	if err := unix.Mount(source, dir, fstype, flags, ""); err != nil {
		return fmt.Errorf("mount %s on %s: %w", fstype, dir, err)
	}
	return nil
}

// UnmountTmpfs unmounts the tmpfs MountTmpfs put on dir; not mounted is no error.
func UnmountTmpfs(dir string) error {
	_, err := mountinfo.Unmount(context.Background(), dir, mountinfo.UnmountOptions{})
	return err
}
