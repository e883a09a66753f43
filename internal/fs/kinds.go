// Package fs knows the filesystems fsbench benchmarks: which of them this machine can run (and,
// when it cannot, what to install or which kernel is missing what), and the real operations on
// them: mkfs, building read-only images, mount, unmount, kernel module loading, tool versions and
// statfs usage.
//
// Mounting has one owner. This package makes every mount of fsbench's own: the filesystem under
// test (Mount, with mount(8) only where a helper must start with it, nilfs2's cleaner), the
// dataset's tmpfs (MountTmpfs) and the kernel's own filesystems fsbench needs where nothing
// mounted them (MountKernelFS: tracefs for the block traces, cgroup2 for the run's cgroup).
// Every umount(2) goes through mountinfo.Unmount, with its retries (Unmount and UnmountTmpfs
// here, the cleanup of a killed run, a dead simulated card's lazy detach). The exceptions, and
// why they stay where they are:
//   - FUSE (internal/simcard): go-fuse makes the mount itself through /dev/fuse and fusermount,
//     handing the connection to the server that answers it, and server.Unmount closes that
//     connection cleanly; only the lazy fallback when it stays busy goes through mountinfo.
//   - UBI attach (internal/nand): ubiattach is not a mount but an ioctl attaching an MTD device
//     to UBI, and its tools do it; the UBIFS or squashfs mounted on top goes through Mount.
//   - the jail (internal/confine): its mounts are made by the jailed child in its own mount
//     namespace (the walls: a private /, /proc, /dev, the mount fsck or mkfs may need) and die
//     with it; this package imports confine, so confine cannot call back here.
//   - the guest's and the board's init (internal/vm, internal/board): shell run at boot, before
//     fsbench starts, mounting /proc, /sys and tracefs as any init does.
//   - test fixtures (internal/testkit/sessiontest): a test's own ext4 decoy, mounted and
//     unmounted with plain system calls so that what is tested does not set up its own test.
//
// External programs are run through a Runner so that tests can check argument lists without
// root; the mount and unmount system calls are made directly with golang.org/x/sys/unix.
package fs

import (
	"regexp"
	"strings"
)

// Kind is a filesystem fsbench knows.
type Kind struct {
	Name     string // "ext4" — also the mount type
	Tool     string // "mkfs.ext4", "mksquashfs", "mkfs.erofs", "mkfs.vfat", ...
	Package  string // Debian package providing Tool
	Module   string // kernel module providing it ("ext4" also serves ext2/ext3 on modern kernels)
	ReadOnly bool   // squashfs, erofs: an image is built from a directory, then written to the device
	Symlinks bool   // false for vfat
	// NoModes: the filesystem has no Unix permission bits (vfat): chmod fails with EPERM for
	// modes it cannot represent (the sticky bit of /tmp, for one), so copies must not set them.
	NoModes bool
	// Flash: the filesystem lives on raw flash (an MTD device: jffs2, ubifs on UBI), not on a
	// block device. It runs only in the free-electrons suite, on a simulated NAND chip.
	Flash bool
	// NotMainline, when set, says why no stock kernel has this filesystem (yaffs2): it is
	// listed, so that the 2010 study's column is accounted for, but never runs.
	NotMainline string
	Note        string // what is peculiar about it, for listings
	// MinBytes is the smallest device its mkfs makes a filesystem on (0: no limit that
	// matters), and MinWhy says whose limit it is.
	MinBytes uint64
	MinWhy   string
}

// spec holds what the package needs to drive a kind's tool; it is kept out of Kind so that Kind
// stays a plain comparable value the integrator can print and compare.
type spec struct {
	// mkfsFlags make the tool non-interactive (it must never ask "Proceed anyway?" on a device
	// that already holds a filesystem) and quiet; they come before the variant's own args.
	mkfsFlags []string
	// versionArgs is the option that makes the tool print its version. Not every tool has one:
	// mkfs.vfat (dosfstools 4.2) rejects -V and --version but prints its version line with
	// --help, and mkfs.erofs 1.5 rejects --version yet prints "mkfs.erofs 1.5" before complaining.
	versionArgs []string
	// versionLine matches the one line of the output that is the version.
	versionLine *regexp.Regexp
}

var kinds = []Kind{
	{Name: "ext4", Tool: "mkfs.ext4", Package: "e2fsprogs", Module: "ext4", Symlinks: true,
		Note: "journaled; the usual default"},
	{Name: "ext2", Tool: "mkfs.ext2", Package: "e2fsprogs", Module: "ext4", Symlinks: true,
		Note: "no journal; served by the ext4 driver on modern kernels"},
	{Name: "ext3", Tool: "mkfs.ext3", Package: "e2fsprogs", Module: "ext4", Symlinks: true,
		Note: "ext2 with a journal; served by the ext4 driver on modern kernels"},
	{Name: "xfs", Tool: "mkfs.xfs", Package: "xfsprogs", Module: "xfs", Symlinks: true,
		Note:     "mkfs.xfs refuses devices smaller than 300 MB",
		MinBytes: 300 << 20, MinWhy: "mkfs.xfs (xfsprogs 5.19 and later) refuses smaller devices"},
	{Name: "btrfs", Tool: "mkfs.btrfs", Package: "btrfs-progs", Module: "btrfs", Symlinks: true,
		Note:     "copy-on-write, checksummed; DUP metadata by default",
		MinBytes: 114294784, MinWhy: "mkfs.btrfs refuses smaller devices unless metadata and data share block groups (--mixed)"},
	{Name: "f2fs", Tool: "mkfs.f2fs", Package: "f2fs-tools", Module: "f2fs", Symlinks: true,
		Note: "log-structured, designed for flash"},
	{Name: "nilfs2", Tool: "mkfs.nilfs2", Package: "nilfs-tools", Module: "nilfs2", Symlinks: true,
		Note: "log-structured; needs nilfs_cleanerd, started by mount(8) and stopped before unmount"},
	{Name: "vfat", Tool: "mkfs.vfat", Package: "dosfstools", Module: "vfat", Symlinks: false, NoModes: true,
		Note: "no symlinks, no Unix owners or permissions"},
	{Name: "squashfs", Tool: "mksquashfs", Package: "squashfs-tools", Module: "squashfs", ReadOnly: true, Symlinks: true,
		Note: "read-only, compressed: the image is built from a directory, then written to the device"},
	{Name: "erofs", Tool: "mkfs.erofs", Package: "erofs-utils", Module: "erofs", ReadOnly: true, Symlinks: true,
		Note: "read-only, optionally compressed: the image is built from a directory, then written to the device"},
	{Name: "jffs2", Tool: "mkfs.jffs2", Package: "mtd-utils", Module: "jffs2", Flash: true, Symlinks: true,
		Note: "raw NAND/NOR, compressed; scans the whole partition at mount (suite free-electrons)"},
	{Name: "ubifs", Tool: "mkfs.ubifs", Package: "mtd-utils", Module: "ubifs", Flash: true, Symlinks: true,
		Note: "raw NAND on a UBI volume (ubiattach, ubimkvol), compressed (suite free-electrons)"},
	{Name: "yaffs2", Flash: true, Symlinks: true,
		NotMainline: "yaffs2 is not in mainline Linux: it lives out of tree (yaffs.net) and needs a kernel patched with it; fsbench runs stock kernels only",
		Note:        "raw NAND; out of tree, never merged into Linux"},
}

var e2fsSpec = spec{
	mkfsFlags: []string{"-F", "-q"},
	// mke2fs prints its version on stderr, followed by a second line about the library.
	versionArgs: []string{"-V"},
	versionLine: regexp.MustCompile(`^mke2fs \d`),
}

var specs = map[string]spec{
	"ext4": e2fsSpec,
	"ext2": e2fsSpec,
	"ext3": e2fsSpec,
	"xfs": {mkfsFlags: []string{"-f", "-q"}, versionArgs: []string{"-V"},
		versionLine: regexp.MustCompile(`^mkfs\.xfs version \d`)},
	"btrfs": {mkfsFlags: []string{"-f", "-q"}, versionArgs: []string{"--version"},
		versionLine: regexp.MustCompile(`^mkfs\.btrfs, part of btrfs-progs v\d`)},
	"f2fs": {mkfsFlags: []string{"-f", "-q"}, versionArgs: []string{"-V"},
		versionLine: regexp.MustCompile(`^mkfs\.f2fs \d`)},
	"nilfs2": {mkfsFlags: []string{"-f", "-q"}, versionArgs: []string{"-V"},
		versionLine: regexp.MustCompile(`^mkfs\.nilfs2 \(nilfs-utils \d`)},
	// mkfs.vfat has neither -f nor -q: -I skips the safety check that refuses whole devices
	// (a loop device or an SD card without a partition table).
	"vfat": {mkfsFlags: []string{"-I"}, versionArgs: []string{"--help"},
		versionLine: regexp.MustCompile(`^mkfs\.fat \d`)},
	"squashfs": {versionArgs: []string{"-version"},
		versionLine: regexp.MustCompile(`^mksquashfs version \d`)},
	// erofs-utils 1.5 prints "mkfs.erofs 1.5", later releases "mkfs.erofs (erofs-utils) 1.7.1";
	// the error line "mkfs.erofs: unrecognized option" must not match.
	"erofs": {versionArgs: []string{"--version"},
		versionLine: regexp.MustCompile(`^mkfs\.erofs (\(erofs-utils\) )?\d`)},
	// mkfs.jffs2 and mkfs.ubifs print "mkfs.jffs2: revision 1.60" / "mkfs.ubifs (mtd-utils)
	// 2.1.5" with --version. The flash suite builds images with them, never a device.
	"jffs2": {versionArgs: []string{"--version"}, versionLine: regexp.MustCompile(`^mkfs\.jffs2`)},
	"ubifs": {versionArgs: []string{"--version"}, versionLine: regexp.MustCompile(`^mkfs\.ubifs`)},
}

// Kinds returns every filesystem fsbench knows, in the order listings show them:
// ext4, ext2, ext3, xfs, btrfs, f2fs, nilfs2, vfat, squashfs, erofs, then the raw-flash ones
// jffs2, ubifs, yaffs2. The slice is a fresh copy.
func Kinds() []Kind {
	return append([]Kind(nil), kinds...)
}

// Lookup returns the kind called name ("ext4", "squashfs", ...; case does not matter).
func Lookup(name string) (Kind, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// Names returns the names of Kinds(), in the same order.
func Names() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return names
}
