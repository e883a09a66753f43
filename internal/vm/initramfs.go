package vm

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fsbench/fsbench/internal/cpio"
	fsk "github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/kmod"
)

// guestTools are the programs fsbench may run in the guest besides the mkfs tools: util-linux's
// mount and umount (fsbench mounts nilfs2 through mount(8), whose helper mount.nilfs2 starts
// nilfs_cleanerd), the aging's helpers, kmod for modprobe (the module_load test), mmc-utils' mmc (probe identity,
// optional), and mtd-utils for flash filesystems on nandsim. The ones the host lacks are left
// out; fsbench in the guest then reports the variant as skipped, as it would on the host.
var guestTools = []string{
	"mount", "umount", "mount.nilfs2", "umount.nilfs2", "nilfs_cleanerd",
	// An aged variant's measures and its churn: nilfs-clean asks the cleaner for a pass
	// when the churn fills nilfs2 (fs.Reclaimer); e2freefrag and xfs_db read free-space
	// fragmentation (fs.FreeSpace).
	"nilfs-clean", "e2freefrag", "xfs_db",
	"modprobe", "insmod", "rmmod", "lsmod",
	"mmc",
	// The checkers the powercut suite runs after each cut (internal/fs fsckFor). nilfs-tools
	// has none: nilfs2 recovers at mount, by rolling forward from its last checkpoint.
	"e2fsck", "fsck.f2fs", "fsck.vfat", "xfs_repair",
	"flash_erase", "ubiformat", "ubiattach", "ubidetach", "ubimkvol", "ubirmvol", "ubiupdatevol", "ubiblock",
	"mkfs.ubifs", "mkfs.jffs2", "nandwrite",
}

// dlopened are shared libraries loaded at run time by name (see buildInitramfs).
var dlopened = []string{"libgcc_s.so.1"}

// guestEtc are configuration files the tools read; missing ones are left out (mke2fs has
// built-in defaults, nilfs_cleanerd too).
var guestEtc = []string{"/etc/mke2fs.conf", "/etc/nilfs_cleanerd.conf"}

// baseModules are what the guest needs before fsbench starts: the SD host controller and card
// driver (the card is /dev/mmcblk0), virtio PCI and 9p (the results share), the loop device.
// The filesystems' own modules are added from the fs package's list; fsbench loads those
// itself (module_load measures it).
var baseModules = []string{
	"virtio_pci", "9pnet_virtio", "9p", "sdhci_pci", "mmc_block", "loop", "fuse",
	"nls_cp437", "nls_iso8859_1", "nls_utf8", "nls_ascii",
	// Flash simulation: nandsim under mtd, ubi on top, and the block view of an MTD device.
	"nandsim", "ubi", "mtdblock", "mtdram", "jffs2", "ubifs",
}

// bootModules are loaded by the init script before fsbench starts. loop and fuse are loaded
// here because the guest has no udev: a module loaded on demand would not get its device nodes
// (/dev/loop-control, /dev/fuse), which devtmpfs creates only when the driver registers them.
// The powercut suite serves the simulated card inside the guest (FUSE) and checks each cut on
// a loop device over it.
var bootModules = []string{"virtio_pci", "9pnet_virtio", "9p", "sdhci_pci", "mmc_block", "loop", "fuse"}

// wholeModuleDirs are taken in whole, for soft dependencies and aliases (see kmod.Select).
var wholeModuleDirs = []string{"kernel/crypto", "kernel/arch/x86/crypto", "kernel/lib", "kernel/fs/nls"}

// guestPath is where the guest finds a program: the same path as on the host, so that the
// sbin lookups fsbench does on the host find it in the guest as well.
const guestFsbench = "/usr/bin/fsbench"

// initramfsSpec is what goes into the guest's initramfs.
type initramfsSpec struct {
	release    string   // guest kernel release
	modulesDir string   // host /lib/modules/<release>
	binary     string   // the fsbench executable to copy in
	busybox    string   // host busybox (the shell and basic commands of the init script)
	tools      []string // program names, looked up on the host; missing ones are skipped
	modules    []string // module names to include with their dependencies
}

// builtInitramfs says what was built.
type builtInitramfs struct {
	path         string
	size         uint64
	missingTools []string // tools the host lacks, left out
	missingMods  []string // module names modules.dep does not list (built in or absent)
	libDirs      []string // the guest's LD_LIBRARY_PATH
	modprobe     string   // where kmod's modprobe is in the guest, "" if the host has none
}

// buildInitramfs assembles the guest's initramfs in dir (a scratch directory the caller
// removes) and returns its path. init makes the /init script from the library directories the
// tools need (the guest has no ld.so.cache, so the script exports them as LD_LIBRARY_PATH).
func buildInitramfs(dir string, spec initramfsSpec, init func(libDirs []string, modprobe string) string) (builtInitramfs, error) {
	var b builtInitramfs
	a := cpio.New()
	r := &libResolver{}
	if err := b.addPrograms(a, r, spec); err != nil {
		return b, err
	}
	addSystemFiles(a, r)
	if err := b.addModules(a, dir, spec); err != nil {
		return b, err
	}
	b.libDirs = r.used
	a.Data("/init", []byte(init(r.used, b.modprobe)), 0o755)
	if err := b.write(a, filepath.Join(dir, "initramfs.cpio")); err != nil {
		return b, err
	}
	return b, nil
}

// addPrograms adds the directory tree, busybox, the fsbench binary and the tools with the
// libraries they load; a tool this host lacks is noted in b.missingTools.
func (b *builtInitramfs) addPrograms(a *cpio.Archive, r *libResolver, spec initramfsSpec) error {
	for _, d := range []string{"/proc", "/sys", "/dev", "/tmp", "/run", "/root", "/mnt", "/bin", "/usr/bin", "/usr/sbin"} {
		a.Dir(d, 0o755)
	}
	// /sbin is /usr/sbin, as on Debian since 12 (merged /usr): util-linux's mount looks for
	// its helpers (mount.nilfs2) only in /sbin, and mount.nilfs2 starts /sbin/nilfs_cleanerd.
	// With the tools in /usr/sbin and an empty /sbin, mount(8) fell back to the bare system
	// call: nilfs2 ran without its cleaner and its pp= option was refused.
	a.Symlink("/sbin", "usr/sbin")
	if err := r.addExecutable(a, "/bin/busybox", spec.busybox); err != nil {
		return fmt.Errorf("busybox: %w", err)
	}
	a.Symlink("/bin/sh", "busybox")
	if err := r.addExecutable(a, guestFsbench, spec.binary); err != nil {
		return fmt.Errorf("the fsbench binary: %w", err)
	}
	for _, t := range spec.tools {
		p, err := lookSbin(t)
		if err != nil {
			b.missingTools = append(b.missingTools, t)
			continue
		}
		// Copy the file a symlink points to under the looked-up name: kmod, mke2fs and
		// busybox-style multi-call programs choose what to do from argv[0], which is the
		// name fsbench runs (modprobe, mkfs.ext4).
		if err := r.addExecutable(a, p, p); err != nil {
			return fmt.Errorf("tool %s: %w", t, err)
		}
		if t == "modprobe" {
			b.modprobe = p
		}
	}
	return nil
}

// addSystemFiles adds the libraries loaded with dlopen and the few files of /etc the tools
// read.
func addSystemFiles(a *cpio.Archive, r *libResolver) {
	// Libraries glibc loads with dlopen, which no ELF header names: libgcc_s for
	// pthread_exit and thread cancellation (mksquashfs aborts with "libgcc_s.so.1 must be
	// installed for pthread_exit to work" without it). They go beside the libraries already
	// taken, for the same architecture.
	for _, lib := range dlopened {
		for _, d := range r.used {
			p := filepath.Join(d, lib)
			if _, err := os.Stat(r.host(p)); err == nil && !a.Has(p) {
				a.File(p, r.host(p), 0o755)
				break
			}
		}
	}
	for _, e := range guestEtc {
		if _, err := os.Stat(e); err == nil {
			a.File(e, e, 0o644)
		}
	}
	// util-linux's mount reads and nilfs' helpers check /etc/mtab.
	a.Symlink("/etc/mtab", "/proc/self/mounts")
	a.Data("/etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644)
	a.Data("/etc/group", []byte("root:x:0:\n"), 0o644)
}

// addModules adds the kernel modules the guest needs, with their dependencies; those the
// kernel does not have are noted in b.missingMods.
func (b *builtInitramfs) addModules(a *cpio.Archive, dir string, spec initramfsSpec) error {
	f, err := os.Open(filepath.Join(spec.modulesDir, "modules.dep"))
	if err != nil {
		return fmt.Errorf("guest kernel modules: %w (install the linux-image package of release %s)", err, spec.release)
	}
	deps, err := kmod.ReadDep(f)
	f.Close()
	if err != nil {
		return err
	}
	mods, missing := kmod.Select(deps, spec.modules, wholeModuleDirs)
	b.missingMods = missing
	stage := filepath.Join(dir, "modules")
	if err := stageModules(stage, spec.modulesDir, spec.release, mods); err != nil {
		return err
	}
	err = filepath.WalkDir(stage, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(stage, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			a.Dir("/"+rel, 0o755)
			return nil
		}
		a.File("/"+rel, p, 0o644)
		return nil
	})
	if err != nil {
		return fmt.Errorf("add the staged modules: %w", err)
	}
	return nil
}

// write writes the archive to path and records its path and size in b.
func (b *builtInitramfs) write(a *cpio.Archive, path string) error {
	b.path = path
	out, err := os.Create(b.path)
	if err != nil {
		return fmt.Errorf("create the initramfs: %w", err)
	}
	if err := a.Write(out); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("write the initramfs: %w", err)
	}
	if fi, err := os.Stat(b.path); err == nil {
		b.size = uint64(fi.Size())
	}
	return nil
}

// defaultTools are every mkfs tool fsbench knows plus guestTools.
func defaultTools() []string {
	var t []string
	for _, k := range fsk.Kinds() {
		t = append(t, k.Tool)
	}
	return uniq(append(t, guestTools...))
}

// defaultModules are baseModules plus the module of every filesystem fsbench knows.
func defaultModules() []string {
	m := append([]string(nil), baseModules...)
	for _, k := range fsk.Kinds() {
		if k.Module != "" {
			m = append(m, k.Module)
		}
	}
	return uniq(m)
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// shQuote quotes s for a POSIX shell: inside single quotes nothing is special but the quote.
func shQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=/.,:@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// Markers the init script prints on the console; the host reads the guest's progress from them.
const (
	markerStart = "fsbench-vm: start"
	markerExit  = "fsbench-vm: exit status "
	shareTag    = "fsbenchout"
)

// initScript is the guest's /init (run by busybox sh as PID 1). It mounts the pseudo
// filesystems, loads the drivers of the SD card and of the results share, mounts the share at
// outDir (the same path as on the host, so that paths in the arguments mean the same inside),
// waits for the card, runs command there, prints its exit status, and powers off. If anything
// goes wrong before, it still powers off: the host sees no exit status and reports the console.
//
// modprobe is kmod's modprobe in the guest: the kernel runs /sbin/modprobe when a mount needs a
// module (vfat asks for nls_cp437), and the init script points it at kmod's instead, which is
// where the host has it (/usr/sbin on merged-/usr Debian). Empty means busybox's.
func initScript(outDir string, libDirs []string, modprobe string, command []string) string {
	var sb strings.Builder
	q := shQuote(outDir)
	sorted := append([]string(nil), libDirs...)
	sort.Strings(sorted)
	fmt.Fprintf(&sb, `#!/bin/sh
# fsbench guest init, generated by internal/vm.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LD_LIBRARY_PATH=%s
export HOME=/root LC_ALL=C TERM=dumb
bb=/bin/busybox
say() { echo "fsbench-vm: $*"; }
off() { cd /; $bb sync; $bb umount %s 2>/dev/null; $bb poweroff -f; }
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
$bb mount -t devtmpfs devtmpfs /dev 2>/dev/null
$bb mkdir -p /dev/pts /dev/shm
$bb mount -t tmpfs -o mode=1777 tmpfs /tmp
$bb mount -t tmpfs tmpfs /run
# Block-request traces (and the flash-wear replay built on them) need tracefs, as on the host.
$bb mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
# Every magic SysRq key from the keyboard: the host's stall watch asks a guest that does
# nothing for its tasks' stacks that way (Debian's default mask leaves the dumps out).
echo 1 > /proc/sys/kernel/sysrq
say "kernel $($bb uname -r), $($bb nproc) cpus"
modprobe=%s
[ -x "$modprobe" ] || { $bb ln -s /bin/busybox /sbin/modprobe; modprobe=/sbin/modprobe; }
echo "$modprobe" > /proc/sys/kernel/modprobe
for m in %s; do "$modprobe" $m || say "modprobe $m failed"; done
$bb mkdir -p %s
if ! $bb mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 %s %s; then
	say "cannot mount the results share"
	off
fi
i=0
while [ ! -b /dev/mmcblk0 ] && [ $i -lt 200 ]; do $bb sleep 0.1; i=$((i+1)); done
[ -b /dev/mmcblk0 ] || say "no /dev/mmcblk0 after 20 s"
cd %s
say "start"
`, shQuote(strings.Join(sorted, ":")), q, shQuote(modprobe), strings.Join(bootModules, " "), q, shareTag, q, q)
	quoted := make([]string, len(command))
	for i, c := range command {
		quoted[i] = shQuote(c)
	}
	sb.WriteString(strings.Join(quoted, " "))
	sb.WriteString("\nrc=$?\necho\nsay \"exit status $rc\"\noff\n")
	return sb.String()
}
