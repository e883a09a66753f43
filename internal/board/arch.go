// Package board builds and boots emulated ARM boards: Debian's arm64 or armhf kernel under
// QEMU (TCG), an initramfs of Debian arm packages (busybox, dropbear, the mkfs tools, kernel
// modules), an SD card image as /dev/mmcblk0 and SSH on a loopback port. fsbench reaches such a
// board as it would reach a real one, with --target ssh://root@127.0.0.1:PORT/dev/mmcblk0: the
// boards are what tests, CI and users run the remote path against without hardware.
//
// The packages come from Debian's archive through a private apt state (never the system's: no
// dpkg --add-architecture, no dpkg -i) and are unpacked with dpkg -x into a cache directory that
// later boots reuse. A running board is recorded in a state directory (its QEMU pid and start
// time, its port), so that Down ends exactly that process and nothing else.
package board

import (
	"fmt"
	"sort"
	"strings"
)

// Arch describes one kind of emulated board.
type Arch struct {
	// Name is fsbench's name of the architecture (the release binary's suffix): arm64, armv7.
	Name string
	// Debian is Debian's architecture (arm64, armhf) and Multiarch its library directory tuple.
	Debian, Multiarch string
	// KernelPackage is the metapackage naming the current kernel (linux-image-arm64).
	KernelPackage string
	// QEMU is the emulator, Machine and CPU its -M and -cpu.
	QEMU, Machine, CPU string
	// Mem is the default memory size in MiB.
	Mem int
	// Console is the kernel's console device.
	Console string
}

// arches are the boards fsbench knows how to emulate.
var arches = map[string]Arch{
	"arm64": {Name: "arm64", Debian: "arm64", Multiarch: "aarch64-linux-gnu", KernelPackage: "linux-image-arm64",
		QEMU: "qemu-system-aarch64", Machine: "virt", CPU: "cortex-a53", Mem: 1536, Console: "ttyAMA0"},
	// 32-bit: the LPAE flavour runs on QEMU's virt machine, whose RAM and PCI windows sit
	// above 4 GiB; cortex-a15 is the CPU that flavour is built for.
	"armv7": {Name: "armv7", Debian: "armhf", Multiarch: "arm-linux-gnueabihf", KernelPackage: "linux-image-armmp-lpae",
		QEMU: "qemu-system-arm", Machine: "virt", CPU: "cortex-a15", Mem: 1024, Console: "ttyAMA0"},
}

// LookupArch returns the board of an architecture name (arm64, armv7; aarch64 and armhf are
// accepted too).
func LookupArch(name string) (Arch, error) {
	switch name {
	case "aarch64":
		name = "arm64"
	case "armhf", "arm", "armv7l":
		name = "armv7"
	}
	a, ok := arches[name]
	if !ok {
		return Arch{}, fmt.Errorf("no emulated board for %q: choose one of %s", name, strings.Join(ArchNames(), ", "))
	}
	return a, nil
}

// ArchNames lists the emulated boards' architectures.
func ArchNames() []string {
	var n []string
	for k := range arches {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// userPackages are the Debian packages whose programs the board gets, with the shared
// libraries they need (resolved from the packages' own files, not the host's). Each is fetched
// with the libraries it depends on; a package missing from the archive is reported, not fatal,
// except the first three, without which there is no board.
var userPackages = []string{
	"busybox-static", // /init, the shell, ip, mount for the init script
	"dropbear-bin",   // sshd: small, and it needs no host keys made in advance (-R)
	"e2fsprogs",
	"kmod", // modprobe that reads depmod's binary indices (busybox's reads modules.dep only)
	"xfsprogs", "btrfs-progs", "f2fs-tools", "dosfstools", "squashfs-tools", "erofs-utils",
	"nilfs-tools", "mount", // mount(8): fsbench mounts nilfs2 through it (mount.nilfs2 starts the cleaner)
	"libgcc-s1", // loaded with dlopen by glibc's thread cancellation (mksquashfs aborts without it)
}

// requiredPackages must unpack, or the board cannot boot or be reached.
var requiredPackages = map[string]bool{"busybox-static": true, "dropbear-bin": true, "e2fsprogs": true}

// bootModules are loaded by /init: the network card (SSH), the SD host controller and card
// (/dev/mmcblk0), loop devices, and crc32c before ext4 and jbd2, which ask for it through an
// alias the kernel resolves only once a provider is loaded.
var bootModules = []string{"virtio_net", "virtio_pci", "virtio_blk", "sdhci_pci", "mmc_block", "loop", "crc32c_generic", "libcrc32c"}

// fsModules are the filesystems' modules (and what vfat's default code pages need): fsbench on
// the board loads them itself (its module_load test measures that).
var fsModules = []string{"ext4", "xfs", "btrfs", "f2fs", "nilfs2", "vfat", "msdos", "squashfs", "erofs",
	"nls_cp437", "nls_iso8859_1", "nls_utf8", "nls_ascii", "dm_mod", "dm_flakey", "dm_log_writes"}

// wholeModuleDirs are taken in whole: soft dependencies and aliases (ext4 asks for
// "crypto-crc32c", btrfs for "blake2b-256") are resolved by modprobe at run time through
// modules.alias to one of several modules there.
var wholeModuleDirs = []string{"kernel/crypto", "kernel/arch/arm64/crypto", "kernel/arch/arm/crypto", "kernel/lib", "kernel/fs/nls"}
