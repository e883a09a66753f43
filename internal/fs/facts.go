package fs

import (
	"fmt"
	"strings"
)

// Facts is a snapshot of what a machine can run: each kind's availability and the drivers the
// raw-NAND suite needs. A board writes it (`fsbench facts`), so that the host plans a run there
// (which variants run, which are skipped and why) before anything is started on the board.
type Facts struct {
	Arch          string                  `json:"arch"`
	KernelRelease string                  `json:"kernel_release"`
	Kinds         map[string]Availability `json:"kinds"`
	Modules       map[string]bool         `json:"modules"`
}

// FactModules are the drivers Facts records besides filesystems.
var FactModules = []string{"nandsim", "ubi", "loop", "fuse"}

// Snapshot records what s can run.
func Snapshot(s System, arch string) Facts {
	f := Facts{Arch: arch, KernelRelease: s.KernelRelease, Kinds: map[string]Availability{}, Modules: map[string]bool{}}
	for _, k := range Kinds() {
		f.Kinds[k.Name] = s.Check(k)
	}
	for _, m := range FactModules {
		f.Modules[m] = s.HasModule(m)
	}
	return f
}

// Check is the recorded availability of k (unknown kinds do not run).
func (f Facts) Check(k Kind) Availability {
	if a, ok := f.Kinds[k.Name]; ok {
		return a
	}
	return Availability{Kernel: KernelMissing, Reason: "the board did not report " + k.Name}
}

// HasModule is the recorded presence of a driver.
func (f Facts) HasModule(m string) bool { return f.Modules[m] }

// boardPackages says, per tool package, what provides it on the systems boards run: Buildroot's
// option and Yocto's recipe.
var boardPackages = map[string][2]string{
	"e2fsprogs":      {"BR2_PACKAGE_E2FSPROGS", "e2fsprogs"},
	"xfsprogs":       {"BR2_PACKAGE_XFSPROGS", "xfsprogs (meta-filesystems)"},
	"btrfs-progs":    {"BR2_PACKAGE_BTRFS_PROGS", "btrfs-tools"},
	"f2fs-tools":     {"BR2_PACKAGE_F2FS_TOOLS", "f2fs-tools (meta-filesystems)"},
	"nilfs-tools":    {"BR2_PACKAGE_NILFS_UTILS", "nilfs-utils (meta-filesystems)"},
	"dosfstools":     {"BR2_PACKAGE_DOSFSTOOLS_MKFS_FAT", "dosfstools"},
	"squashfs-tools": {"BR2_PACKAGE_SQUASHFS", "squashfs-tools"},
	"erofs-utils":    {"BR2_PACKAGE_EROFS_UTILS", "erofs-utils"},
	"mtd-utils":      {"BR2_PACKAGE_MTD", "mtd-utils"},
}

// kernelConfigs names the kernel option of each filesystem.
var kernelConfigs = map[string]string{
	"ext4": "CONFIG_EXT4_FS", "ext2": "CONFIG_EXT4_FS (with CONFIG_EXT4_USE_FOR_EXT2) or CONFIG_EXT2_FS",
	"ext3": "CONFIG_EXT4_FS or CONFIG_EXT3_FS", "xfs": "CONFIG_XFS_FS", "btrfs": "CONFIG_BTRFS_FS",
	"f2fs": "CONFIG_F2FS_FS", "nilfs2": "CONFIG_NILFS2_FS", "vfat": "CONFIG_VFAT_FS",
	"squashfs": "CONFIG_SQUASHFS", "erofs": "CONFIG_EROFS_FS", "jffs2": "CONFIG_JFFS2_FS", "ubifs": "CONFIG_UBIFS_FS",
}

// BoardHint says what a board lacks to run k, for the three ways boards are built: the Debian or
// Ubuntu package, the Buildroot option and the Yocto recipe for a missing tool, the kernel option
// for a missing filesystem.
func BoardHint(k Kind, a Availability) string {
	var parts []string
	if strings.Contains(a.Reason, k.Tool+" not found") && k.Package != "" {
		s := fmt.Sprintf("install %s: Debian/Ubuntu apt install %s", k.Tool, k.Package)
		if bp, ok := boardPackages[k.Package]; ok {
			s += fmt.Sprintf("; Buildroot %s=y; Yocto IMAGE_INSTALL += \"%s\"", bp[0], bp[1])
		}
		parts = append(parts, s)
	}
	if a.Kernel == KernelMissing {
		if c, ok := kernelConfigs[k.Name]; ok {
			parts = append(parts, fmt.Sprintf("build the board's kernel with %s=y or =m", c))
		}
	}
	return strings.Join(parts, "; ")
}
