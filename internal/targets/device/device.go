package device

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/mountinfo"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
)

func init() {
	plan.RegisterTargetForm(plan.TargetDevice, plan.TargetForm{Usage: "device:/dev/X with --destroy /dev/X",
		Parse: func(arg string) (plan.TargetSpec, error) {
			if arg == "" {
				return plan.TargetSpec{}, errors.New("no device after device:")
			}
			return plan.TargetSpec{Kind: plan.TargetDevice, Device: arg}, nil
		},
		Format: func(t plan.TargetSpec) string { return "device:" + t.Device },
	})
	targets.RegisterKind(plan.TargetDevice, targets.LocalDevice|targets.UserDevice, func(b targets.Base) targets.Target { return &deviceTarget{b} })
}

// sysfsRoot is where sysfs is mounted.
var sysfsRoot = "/sys"

// swapsPath lists the active swap areas (proc(5)); a variable so that tests can fake it.
var swapsPath = "/proc/swaps"

// devNum is a block device's major:minor.
type devNum struct{ major, minor uint32 }

func (d devNum) String() string { return fmt.Sprintf("%d:%d", d.major, d.minor) }

func devNumOf(rdev uint64) devNum { return devNum{unix.Major(rdev), unix.Minor(rdev)} }

// RefusedError says why a device may not be written to, and what to do about it. CheckDevice
// returns it (wrapped) for every refusal, so that callers can tell a refusal from an I/O error.
type RefusedError struct {
	Device string // the device as named by the user
	Reason string // why, and what to do
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refusing to use %s: %s", e.Device, e.Reason)
}

// CheckDevice decides whether fsbench may destroy the block device at path, named by the user
// a second time with --destroy. It refuses (a *RefusedError saying why and what to do) a path
// that:
//   - is not a block device (an image file goes through --image, a directory nowhere);
//   - is not the device named by destroy: both are resolved (symlinks such as
//     /dev/disk/by-id/...) and their major:minor compared, so two spellings of one device pass
//     and a typo in either fails;
//   - is mounted, or holds a mounted partition (/proc/self/mountinfo major:minor, and the
//     mount source for filesystems such as btrfs whose mountinfo number is anonymous);
//   - is an active swap area or holds one (/proc/swaps);
//   - is used by LVM, MD RAID, dm-crypt or any device-mapper target (a non-empty
//     /sys/class/block/NAME/holders, for the device or one of its partitions);
//   - holds this system's root: it is the device of the / mount or that device's parent disk;
//   - cannot be opened with O_EXCL: the kernel refuses an exclusive open while a filesystem,
//     swap, md or dm holds the device, which catches a claim the checks above missed (a mount
//     in another mount namespace).
//
// On success it returns the device's identity from sysfs.
func CheckDevice(path, destroy string) (blockdev.Identity, error) {
	refuse := func(format string, args ...any) (blockdev.Identity, error) {
		return blockdev.Identity{}, &RefusedError{Device: path, Reason: fmt.Sprintf(format, args...)}
	}
	if destroy == "" {
		return refuse("--destroy was not given: writing to a real device destroys everything on it; repeat the device's name with --destroy %s to confirm", path)
	}
	real, num, err := statBlock(path)
	if err != nil {
		return refuse("%v", err)
	}
	dreal, dnum, err := statBlock(destroy)
	if err != nil {
		return refuse("--destroy %s: %v", destroy, err)
	}
	if num != dnum {
		return refuse("--destroy names %s (%s, device %s) but the device to use is %s (%s, device %s): name the same device twice to confirm",
			destroy, dreal, dnum, path, real, num)
	}
	name, err := sysfsName(num)
	if err != nil {
		return refuse("%v", err)
	}
	// The device and its partitions: a mount, swap or holder on any of them is a user.
	parts, err := partitions(name)
	if err != nil {
		return blockdev.Identity{}, fmt.Errorf("check %s: %w", path, err)
	}
	family := map[devNum]string{num: name}
	for n, p := range parts {
		family[n] = p
	}

	mounts, err := mountsByDev()
	if err != nil {
		return blockdev.Identity{}, fmt.Errorf("check %s: %w", path, err)
	}
	for n, who := range family {
		if mps := mounts[n]; len(mps) > 0 {
			what := "it is"
			if who != name {
				what = "its partition " + who + " is"
			}
			return refuse("%s mounted on %s: unmount it first (umount %s), and check that it is the device you mean to erase",
				what, strings.Join(mps, ", "), mps[0])
		}
	}
	swaps, err := swapDevs()
	if err != nil {
		return blockdev.Identity{}, fmt.Errorf("check %s: %w", path, err)
	}
	for n, who := range family {
		if swaps[n] {
			return refuse("%s is an active swap area: swapoff /dev/%s first, and remove it from /etc/fstab", who, who)
		}
	}
	for _, who := range family {
		hs, err := holders(who)
		if err != nil {
			return blockdev.Identity{}, fmt.Errorf("check %s: %w", path, err)
		}
		if len(hs) > 0 {
			return refuse("%s is in use by %s (LVM, RAID, dm-crypt or another device-mapper target: /sys/class/block/%s/holders): deactivate that first (vgchange -an, mdadm --stop, cryptsetup close, dmsetup remove)",
				who, strings.Join(hs, ", "), who)
		}
	}
	if root, ok, err := rootDev(); err != nil {
		return blockdev.Identity{}, fmt.Errorf("check %s: %w", path, err)
	} else if ok {
		rootName, _ := sysfsName(root)
		if root == num {
			return refuse("it holds this system's root filesystem (/)")
		}
		if parent, err := parentDisk(root); err == nil && parent == name {
			return refuse("it is the disk that holds this system's root filesystem (/ is on %s)", rootName)
		}
	}
	// The last word is the kernel's: a block device opened with O_EXCL (without O_CREAT) is
	// claimed exclusively, which fails with EBUSY while anything else holds it.
	f, err := os.OpenFile(real, os.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EBUSY) {
		return refuse("the kernel refuses an exclusive open (EBUSY): something holds it (a mount in another namespace, md, dm, a running fsck); find it with lsblk and fuser -vm %s", real)
	}
	if err != nil {
		return blockdev.Identity{}, fmt.Errorf("open %s: %w", real, err)
	}
	f.Close()
	id, err := blockdev.Identify(sysfsRoot, name)
	if err != nil {
		return blockdev.Identity{}, fmt.Errorf("check %s: %w", path, err)
	}
	return id, nil
}

// OpenDevice opens a device that CheckDevice accepted, for reading and writing, with O_EXCL
// so that nobody can mount it while fsbench writes to it (and the open fails with EBUSY if
// someone did since the check), and with O_DIRECT when direct is set.
func OpenDevice(path string, direct bool) (*os.File, error) {
	flags := os.O_RDWR | unix.O_EXCL | unix.O_CLOEXEC
	if direct {
		flags |= unix.O_DIRECT
	}
	f, err := os.OpenFile(path, flags, 0)
	if errors.Is(err, unix.EBUSY) {
		return nil, fmt.Errorf("open %s exclusively: it is in use (mounted or claimed since it was checked): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return f, nil
}

// statBlock resolves path and returns it with its major:minor, or an error saying why it is
// not a block device.
func statBlock(path string) (string, devNum, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", devNum{}, fmt.Errorf("%w (name an existing block device such as /dev/mmcblk0 or /dev/sdb; lsblk lists them)", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(real, &st); err != nil {
		return "", devNum{}, fmt.Errorf("stat %s: %w", real, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		kind := "not a block device"
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			kind = "a regular file, not a block device (for an image file use fsbench run --image FILE)"
		case unix.S_IFDIR:
			kind = "a directory, not a block device"
		case unix.S_IFCHR:
			kind = "a character device, not a block device"
		}
		return "", devNum{}, fmt.Errorf("%s is %s", real, kind)
	}
	return real, devNumOf(uint64(st.Rdev)), nil
}

// sysfsName returns the kernel name of a block device ("mmcblk0p2") from /sys/dev/block/M:m,
// a symlink to its sysfs directory.
func sysfsName(n devNum) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Join(sysfsRoot, "dev", "block", n.String()))
	if err != nil {
		return "", fmt.Errorf("block device %s is not in %s/dev/block: %w", n, sysfsRoot, err)
	}
	return filepath.Base(dir), nil
}

// readDevNum parses a sysfs "dev" attribute ("179:2").
func readDevNum(path string) (devNum, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return devNum{}, err
	}
	var n devNum
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d:%d", &n.major, &n.minor); err != nil {
		return devNum{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}

// partitions returns the partitions of disk name (none for a partition): the subdirectories
// of its sysfs directory that have a "partition" attribute.
func partitions(name string) (map[devNum]string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Join(sysfsRoot, "class", "block", name))
	if err != nil {
		return nil, fmt.Errorf("sysfs directory of %s: %w", name, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", name, err)
	}
	out := map[devNum]string{}
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "partition")); err != nil {
			continue
		}
		n, err := readDevNum(filepath.Join(dir, e.Name(), "dev"))
		if err != nil {
			return nil, fmt.Errorf("partition %s of %s: %w", e.Name(), name, err)
		}
		out[n] = e.Name()
	}
	return out, nil
}

// parentDisk returns the kernel name of the whole disk holding n (n's own name for a disk).
func parentDisk(n devNum) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Join(sysfsRoot, "dev", "block", n.String()))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		return filepath.Base(filepath.Dir(dir)), nil
	}
	return filepath.Base(dir), nil
}

// holders lists /sys/class/block/NAME/holders: the dm and md devices built on NAME.
func holders(name string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(sysfsRoot, "class", "block", name, "holders"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read holders of %s: %w", name, err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out, nil
}

// mountInfoLine is what device checks need from one mountinfo line.
type mountInfoLine struct {
	dev        devNum
	mountPoint string
	source     string
}

// readMountInfo parses field 3 (major:minor) besides what parseMountinfo returns.
func readMountInfo() ([]mountInfoLine, error) {
	f, err := os.Open(mountinfo.TablePath)
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	defer f.Close()
	var out []mountInfoLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), " ")
		sep := -1
		for i := 6; i < len(fields); i++ {
			if fields[i] == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || len(fields) < sep+3 {
			continue // parseMountinfo reports malformed lines; here a line we cannot read proves nothing
		}
		var l mountInfoLine
		if _, err := fmt.Sscanf(fields[2], "%d:%d", &l.dev.major, &l.dev.minor); err != nil {
			continue
		}
		l.mountPoint = mountinfo.Unescape(fields[4])
		l.source = mountinfo.Unescape(fields[sep+2])
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	return out, nil
}

// mountsByDev maps device numbers to their mount points. btrfs (and overlay-like filesystems)
// show an anonymous 0:N in mountinfo, so the source, when it is a block device node, counts
// too.
func mountsByDev() (map[devNum][]string, error) {
	lines, err := readMountInfo()
	if err != nil {
		return nil, err
	}
	out := map[devNum][]string{}
	for _, l := range lines {
		out[l.dev] = append(out[l.dev], l.mountPoint)
		if strings.HasPrefix(l.source, "/dev/") {
			var st unix.Stat_t
			if unix.Stat(l.source, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
				if n := devNumOf(uint64(st.Rdev)); n != l.dev {
					out[n] = append(out[n], l.mountPoint)
				}
			}
		}
	}
	return out, nil
}

// rootDev returns the device of the / mount (ok false when / is not on a block device, e.g.
// an overlay or a virtiofs root).
func rootDev() (devNum, bool, error) {
	lines, err := readMountInfo()
	if err != nil {
		return devNum{}, false, err
	}
	var root *mountInfoLine
	for i := range lines {
		if lines[i].mountPoint == "/" {
			root = &lines[i] // the last one is the top of the stack
		}
	}
	if root == nil {
		return devNum{}, false, nil
	}
	if strings.HasPrefix(root.source, "/dev/") {
		var st unix.Stat_t
		if unix.Stat(root.source, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
			return devNumOf(uint64(st.Rdev)), true, nil
		}
	}
	if root.dev.major == 0 {
		return devNum{}, false, nil // anonymous: tmpfs, overlay, nfs...
	}
	return root.dev, true, nil
}

// swapDevs returns the block devices in /proc/swaps (swap files are not devices and are
// skipped).
func swapDevs() (map[devNum]bool, error) {
	b, err := os.ReadFile(swapsPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no swap support in this kernel
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", swapsPath, err)
	}
	out := map[devNum]bool{}
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[1:] { // the first line is the header
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(mountinfo.Unescape(fields[0]), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK {
			out[devNumOf(uint64(st.Rdev))] = true
		}
	}
	return out, nil
}

// deviceTarget is a real block device (an SD card, an eMMC partition), named twice: with
// --target device:/dev/X and --destroy /dev/X. Every check runs before anything touches it, and
// again when the run starts; afterwards only the named device is ever opened.
type deviceTarget struct{ targets.Base }

func (t *deviceTarget) Check(cfg plan.Config) error {
	if err := targets.CheckNoPowerCut(cfg, "a real device (--target device:)", targets.NoSwitch); err != nil {
		return err
	}
	if err := targets.CheckBlockSuite(cfg); err != nil {
		return err
	}
	if _, err := CheckDevice(t.Spec().Device, t.Opt.Destroy); err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			return &plan.InputError{Err: err}
		}
		return err
	}
	return nil
}

func (t *deviceTarget) Prepare(ctx context.Context, s *session.Session, cfg plan.Config) (*targets.Prepared, error) {
	id, err := CheckDevice(t.Spec().Device, t.Opt.Destroy)
	if err != nil {
		return nil, err
	}
	t.Opt.Logf("device %s: %s, %s, rotational=%s: everything on it will be destroyed", id.Path, DeviceModel(id), bytesize.Format(id.SizeBytes), id.Queue["rotational"])
	return &targets.Prepared{Device: id.Path, DeviceName: id.Name, Size: id.SizeBytes, Identity: &id, Underlying: id.Path,
		Result: results.Target{Kind: results.KindDevice, Device: id.Path, SizeBytes: id.SizeBytes}}, nil
}

// DeviceModel names a device for a person: its model or mmc name and vendor, as sysfs has them.
func DeviceModel(id blockdev.Identity) string {
	var parts []string
	for _, k := range []string{"vendor", "model", "name", "manfid", "oemid", "date"} {
		if v := strings.TrimSpace(id.Device[k]); v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	if len(parts) == 0 {
		return "no model in sysfs"
	}
	return strings.Join(parts, ", ")
}
