package board

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/cpio"
	"github.com/fsbench/fsbench/internal/kmod"
)

// Image is what a board boots: its kernel and initramfs, built once into the cache.
type Image struct {
	// Format is imageFormat when the image was built: an image of another format (built by an
	// older fsbench, with other packages or rules) is rebuilt.
	Format            int
	Kernel, Initramfs string
	// KernelRelease is the kernel's release (6.1.0-56-arm64).
	KernelRelease string
	// Packages are the Debian packages unpacked into the initramfs; Missing those the archive
	// lacked (the board runs without them).
	Packages, Missing []string
	// Bytes is the initramfs' size.
	Bytes int64
}

const imageManifest = "image.json"

// imageFormat changes whenever what goes into the image changes.
const imageFormat = 4

// skipPrefixes are parts of the packages a board does not need: documentation, manuals,
// translations. Dropping them makes the initramfs smaller, which the guest unpacks under TCG
// at every boot.
var skipPrefixes = []string{"usr/share/doc/", "usr/share/man/", "usr/share/info/", "usr/share/locale/",
	"usr/share/lintian/", "usr/share/bug/", "usr/share/bash-completion/", "usr/share/initramfs-tools/",
	"usr/share/bash-completion/", "lib/systemd/", "usr/lib/systemd/", "etc/init.d/", "etc/cron.d/",
	"usr/lib/python3/", "usr/share/xfsprogs/", "usr/share/gcc/", "usr/share/gdb/"}

// BuildImage makes (or reuses) the kernel and initramfs of arch in cache: Debian's packages are
// downloaded with a private apt state and unpacked there, the kernel's modules chosen and
// indexed with depmod, and authorizedKey (an OpenSSH public key line) is root's only way in.
func BuildImage(ctx context.Context, arch Arch, cache string, authorizedKey []byte, rebuild bool, log func(string, ...any)) (Image, error) {
	if !rebuild {
		if img, ok := cachedImage(cache); ok {
			return img, nil
		}
	}
	var img Image
	start := time.Now()
	a := apt{dir: filepath.Join(cache, "apt"), arch: arch.Debian, log: log}
	set, err := fetchPackages(ctx, a, arch, cache, rebuild, log)
	if err != nil {
		return img, err
	}
	// A fresh tree each build: what an older build unpacked must not linger.
	root, kroot := filepath.Join(cache, "root"), filepath.Join(cache, "kernel")
	for _, d := range []string{root, kroot, filepath.Join(cache, "modules")} {
		if err := os.RemoveAll(d); err != nil {
			return img, err
		}
	}
	missing, err := unpackPackages(ctx, set, root, log)
	if err != nil {
		return img, err
	}
	if err := unpack(ctx, set.debs[set.kernel], kroot); err != nil {
		return img, err
	}
	release := strings.TrimPrefix(set.kernel, "linux-image-")
	kernel := filepath.Join(kroot, "boot", "vmlinuz-"+release)
	if _, err := os.Stat(kernel); err != nil {
		return img, fmt.Errorf("the kernel package %s: %w", set.kernel, err)
	}
	modStage, err := stageModules(ctx, kroot, filepath.Join(cache, "modules"), release)
	if err != nil {
		return img, err
	}
	t := cpio.New()
	if err := addRoot(t, root); err != nil {
		return img, err
	}
	if err := addTreeAt(t, modStage, "/usr/lib/modules/"+release); err != nil {
		return img, err
	}
	addBase(t, arch, authorizedKey)
	initrd := filepath.Join(cache, "initramfs.cpio")
	if err := writeArchive(t, initrd); err != nil {
		return img, fmt.Errorf("initramfs: %w", err)
	}
	fi, _ := os.Stat(initrd)
	var installed []string
	for _, p := range set.pkgs {
		if !slicesContains(missing, p) {
			installed = append(installed, p)
		}
	}
	img = Image{Format: imageFormat, Kernel: kernel, Initramfs: initrd, KernelRelease: release, Packages: installed,
		Missing: append(set.unknown, missing...), Bytes: fi.Size()}
	b, _ := json.MarshalIndent(img, "", "  ")
	if err := os.WriteFile(filepath.Join(cache, imageManifest), b, 0o644); err != nil {
		return img, err
	}
	log("built the %s board's initramfs (%s, %d packages, kernel %s) in %s", arch.Name, bytesize.Format(uint64(img.Bytes)), len(installed), release, time.Since(start).Round(time.Second))
	return img, nil
}

// cachedImage is the image an earlier build left in cache, when its manifest is of this
// format and its kernel and initramfs are still there.
func cachedImage(cache string) (Image, bool) {
	var img Image
	b, err := os.ReadFile(filepath.Join(cache, imageManifest))
	if err != nil || json.Unmarshal(b, &img) != nil || img.Format != imageFormat {
		return img, false
	}
	if _, err := os.Stat(img.Initramfs); err != nil {
		return img, false
	}
	if _, err := os.Stat(img.Kernel); err != nil {
		return img, false
	}
	return img, true
}

// packageSet is what a build downloaded: the user-space packages, the kernel package, the
// names the archive does not have, and each package's .deb file.
type packageSet struct {
	pkgs    []string
	kernel  string
	unknown []string
	debs    map[string]string
}

// fetchPackages updates the private apt state and downloads the packages the board needs,
// with their dependencies; a required package the archive lacks is an error, another is
// logged and left out.
func fetchPackages(ctx context.Context, a apt, arch Arch, cache string, rebuild bool, log func(string, ...any)) (packageSet, error) {
	var set packageSet
	if err := a.update(ctx, rebuild); err != nil {
		return set, err
	}
	var err error
	if set.kernel, err = a.kernelPackage(ctx, arch.KernelPackage); err != nil {
		return set, err
	}
	if set.pkgs, set.unknown, err = a.closure(ctx, userPackages); err != nil {
		return set, err
	}
	for _, u := range set.unknown {
		if requiredPackages[u] {
			return set, fmt.Errorf("Debian's %s archive has no %s, which the board cannot do without", arch.Debian, u)
		}
		log("Debian's %s archive has no %s: the board goes without it", arch.Debian, u)
	}
	set.debs, err = a.download(ctx, filepath.Join(cache, "debs"), append(append([]string(nil), set.pkgs...), set.kernel))
	return set, err
}

// unpackPackages unpacks the user-space packages into root and returns those that failed
// and the board goes without (a required one that fails is an error).
func unpackPackages(ctx context.Context, set packageSet, root string, log func(string, ...any)) ([]string, error) {
	log("unpacking %d packages with dpkg -x into %s", len(set.pkgs), root)
	var missing []string
	for _, p := range set.pkgs {
		if err := unpack(ctx, set.debs[p], root); err != nil {
			if requiredPackages[p] {
				return nil, err
			}
			log("%v: the board goes without %s", err, p)
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// writeArchive writes t to path atomically: a reader sees the old archive or the whole new one.
func writeArchive(t *cpio.Archive, path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = t.Write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// skipped reports whether a path of the unpacked packages (relative, slash-separated) stays
// out of the initramfs.
func skipped(rel string) bool {
	for _, p := range skipPrefixes {
		if strings.HasPrefix(rel+"/", p) {
			return true
		}
	}
	return false
}

// mergedUsr maps a path of a Debian 12 package to where it is in a merged-/usr tree: /bin,
// /sbin and /lib are symlinks into /usr on the board (as on Debian since 12), so that a
// program is found whether fsbench, a script or the kernel asks for /sbin/X or /usr/sbin/X.
func mergedUsr(rel string) string {
	for _, d := range []string{"bin", "sbin", "lib"} {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return "usr/" + rel
		}
	}
	return rel
}

// addRoot adds the unpacked packages under root to t, merged into /usr.
func addRoot(t *cpio.Archive, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if skipped(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return addEntry(t, "/"+mergedUsr(rel), p, d)
	})
}

// addTreeAt adds the files under dir to t below the guest directory at.
func addTreeAt(t *cpio.Archive, dir, at string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return addEntry(t, path.Join(at, filepath.ToSlash(rel)), p, d)
	})
}

func addEntry(t *cpio.Archive, guest, host string, d fs.DirEntry) error {
	fi, err := d.Info()
	if err != nil {
		return err
	}
	switch {
	case d.IsDir():
		t.Dir(guest, uint32(fi.Mode().Perm()))
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(host)
		if err != nil {
			return err
		}
		t.Symlink(guest, target)
	case fi.Mode().IsRegular():
		t.File(guest, host, uint32(fi.Mode().Perm()))
	}
	return nil
}

// addBase adds what no package brings: the merged-/usr links, root's account and key, the
// init script.
func addBase(t *cpio.Archive, arch Arch, authorizedKey []byte) {
	for _, d := range []string{"bin", "sbin", "lib"} {
		t.Symlink("/"+d, "usr/"+d)
	}
	for _, d := range []string{"/proc", "/sys", "/dev", "/run", "/mnt", "/etc/dropbear", "/var/log"} {
		t.Dir(d, 0o755)
	}
	t.Dir("/tmp", 0o1777)
	t.Dir("/var/tmp", 0o1777)
	// dropbear refuses keys in a home or .ssh directory others can write to.
	t.Dir("/root", 0o700)
	t.Dir("/root/.ssh", 0o700)
	t.Data("/root/.ssh/authorized_keys", authorizedKey, 0o600)
	// "x": a password that matches nothing, not empty (dropbear refuses an account with an
	// empty password unless -B) nor locked ("!": it would refuse keys too).
	t.Data("/etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644)
	t.Data("/etc/group", []byte("root:x:0:\n"), 0o644)
	t.Data("/etc/shells", []byte("/bin/sh\n"), 0o644)
	t.Data("/etc/hostname", []byte("fsbench-"+arch.Name+"\n"), 0o644)
	t.Data("/etc/os-release", []byte("PRETTY_NAME=\"fsbench emulated "+arch.Name+" board (Debian 12 packages)\"\nID=debian\n"), 0o644)
	// util-linux's mount reads and nilfs' helpers check /etc/mtab.
	t.Symlink("/etc/mtab", "/proc/self/mounts")
	t.Data("/init", []byte(initScript(arch)), 0o755)
}

// sshdFailed is what /init prints on the console when dropbear does not start: the host then
// stops waiting for SSH.
const sshdFailed = "dropbear did not start"

// initScript is the board's /init, run by busybox sh as PID 1.
func initScript(arch Arch) string {
	return `#!/bin/busybox sh
# fsbench emulated board init, generated by internal/board.
# busybox --install finds itself through /proc/self/exe: /proc first.
/bin/busybox mount -t proc proc /proc
/bin/busybox --install -s 2>/dev/null # applets where no package put a real program
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
say() { echo "fsbench-board: $*"; }
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
hostname fsbench-` + arch.Name + `
# The kernel runs this program when a mount needs a module (vfat asks for nls_cp437).
echo /usr/sbin/modprobe > /proc/sys/kernel/modprobe
for m in ` + strings.Join(bootModules, " ") + `; do modprobe $m 2>/dev/null || say "modprobe $m failed"; done
# QEMU's user network: the guest is 10.0.2.15, the host 10.0.2.2. No DHCP client needed.
ip link set lo up
ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 || say "no network"
i=0
# The card: QEMU's SD card, or a virtio disk (a card with a cache the host flushes).
while [ ! -b /dev/mmcblk0 ] && [ ! -b /dev/vda ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
[ -b /dev/mmcblk0 ] || [ -b /dev/vda ] || say "no /dev/mmcblk0 after 30 s"
# -R makes the host keys at the first connection (the host's client takes whatever key it is
# shown: the board is on loopback and new at each boot); -s: keys only, no passwords.
dropbear -R -s -p 22 || say "` + sshdFailed + `"
say "kernel $(uname -r) on $(uname -m), $(nproc) cpus"
say ready
# PID 1 must not exit (the kernel panics); a shell reading a console without input would.
while :; do sleep 3600; done
`
}

// stageModules copies the chosen modules of the unpacked kernel kroot into dst and indexes them
// with depmod (the .deb ships no modules.dep); it returns the module directory of the release.
func stageModules(ctx context.Context, kroot, dst, release string) (string, error) {
	src := ""
	for _, d := range []string{"lib/modules", "usr/lib/modules"} {
		p := filepath.Join(kroot, d, release)
		if _, err := os.Stat(p); err == nil {
			src = p
			break
		}
	}
	if src == "" {
		return "", fmt.Errorf("the kernel package has no modules for %s", release)
	}
	depmod, err := lookSbin("depmod")
	if err != nil {
		return "", fmt.Errorf("depmod not found: install the Debian package kmod: %w", err)
	}
	// Index the whole tree first, to learn every module's dependencies.
	base := filepath.Dir(filepath.Dir(src)) // <kroot>/lib or <kroot>/usr/lib
	baseRoot := filepath.Dir(base)
	if filepath.Base(base) == "lib" && filepath.Base(baseRoot) == "usr" {
		baseRoot = filepath.Dir(baseRoot)
	}
	if out, err := exec.CommandContext(ctx, depmod, "-b", baseRoot, release).CombinedOutput(); err != nil {
		return "", fmt.Errorf("depmod -b %s %s: %w: %s", baseRoot, release, err, bytes.TrimSpace(out))
	}
	f, err := os.Open(filepath.Join(src, "modules.dep"))
	if err != nil {
		return "", err
	}
	deps, err := kmod.ReadDep(f)
	f.Close()
	if err != nil {
		return "", err
	}
	mods, _ := kmod.Select(deps, append(append([]string(nil), bootModules...), fsModules...), wholeModuleDirs)
	out := filepath.Join(dst, "lib", "modules", release)
	for _, m := range append(mods, "modules.builtin", "modules.builtin.modinfo", "modules.order") {
		if err := copyFile(filepath.Join(out, m), filepath.Join(src, m)); err != nil && !os.IsNotExist(err) {
			return "", err
		}
	}
	if b, err := exec.CommandContext(ctx, depmod, "-b", dst, release).CombinedOutput(); err != nil {
		return "", fmt.Errorf("depmod -b %s %s: %w: %s", dst, release, err, bytes.TrimSpace(b))
	}
	return out, nil
}

func copyFile(dst, src string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// lookSbin is exec.LookPath that also searches the sbin directories.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}
