package vm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// KernelRelease reads the release ("6.1.0-56-amd64") out of an x86 bzImage, without booting
// it: the boot protocol header ("HdrS" at 0x202) holds at 0x20e the offset, minus 0x200, of the
// version string "6.1.0-56-amd64 (debian-kernel@lists.debian.org) #1 SMP ...". The release
// names the module directory the guest needs; the file name of the kernel need not say it.
func KernelRelease(kernel string) (string, error) {
	f, err := os.Open(kernel)
	if err != nil {
		return "", fmt.Errorf("read the guest kernel: %w (as root: Debian's /boot/vmlinuz-* are readable by root only)", err)
	}
	defer f.Close()
	var hdr [0x210]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return "", fmt.Errorf("read the guest kernel %s: %w", kernel, err)
	}
	if string(hdr[0x202:0x206]) != "HdrS" {
		return "", fmt.Errorf("%s is not an x86 bzImage (no \"HdrS\" boot header): give the vmlinuz of linux-image-amd64", kernel)
	}
	off := int64(binary.LittleEndian.Uint16(hdr[0x20e:0x210])) + 0x200
	buf := make([]byte, 256)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the version string of %s: %w", kernel, err)
	}
	s := buf[:n]
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	rel, _, _ := strings.Cut(string(s), " ")
	if rel == "" || !strings.ContainsAny(rel[:1], "0123456789") {
		return "", fmt.Errorf("%s: no kernel version string at offset %#x", kernel, off)
	}
	return rel, nil
}

// DefaultKernel picks the guest kernel: the newest /boot/vmlinuz-* (by modification time) whose
// module directory /lib/modules/<release> exists, since the guest loads its filesystems from
// there. Debian's linux-image-amd64 installs both.
func DefaultKernel() (string, error) {
	return defaultKernel("/boot", "/lib/modules")
}

func defaultKernel(bootDir, modulesDir string) (string, error) {
	cands, err := filepath.Glob(filepath.Join(bootDir, "vmlinuz-*"))
	if err != nil {
		return "", fmt.Errorf("look for kernels: %w", err)
	}
	type cand struct {
		path  string
		mtime int64
	}
	var ok []cand
	var why []string
	for _, c := range cands {
		rel, err := KernelRelease(c)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if _, err := os.Stat(filepath.Join(modulesDir, rel, "modules.dep")); err != nil {
			why = append(why, fmt.Sprintf("%s: no %s", c, filepath.Join(modulesDir, rel, "modules.dep")))
			continue
		}
		fi, err := os.Stat(c)
		if err != nil {
			continue
		}
		ok = append(ok, cand{c, fi.ModTime().UnixNano()})
	}
	if len(ok) == 0 {
		msg := fmt.Sprintf("no guest kernel with its modules in %s: install one (apt-get install linux-image-amd64, or run scripts/setup-vm-debian.sh)", bootDir)
		if len(why) > 0 {
			msg += " (" + strings.Join(why, "; ") + ")"
		}
		return "", errors.New(msg)
	}
	sort.Slice(ok, func(i, j int) bool { return ok[i].mtime > ok[j].mtime })
	return ok[0].path, nil
}

// moduleMetaFiles are the files of /lib/modules/<release> depmod reads besides the modules:
// which modules are built in (so that "modprobe ext4" on a kernel with ext4 built in succeeds
// instead of failing to find ext4.ko) and the order of modules.
var moduleMetaFiles = []string{"modules.builtin", "modules.builtin.modinfo", "modules.order"}

// stageModules copies the selected modules of hostModDir into stage/lib/modules/<release> and
// runs depmod there, so that the guest's modprobe has indices (modules.dep.bin, modules.alias.bin,
// modules.softdep) that list exactly what the guest has. kmod's modprobe reads only the binary
// indices, so copying the host's modules.dep would not do, and a subset needs its own anyway.
// Modules are copied as they are, compressed or not: the guest's modprobe is the host's kmod,
// built for the distribution's compression.
func stageModules(stage, hostModDir, release string, mods []string) error {
	dst := filepath.Join(stage, "lib", "modules", release)
	for _, m := range mods {
		if err := copyFile(filepath.Join(dst, m), filepath.Join(hostModDir, m), 0o644); err != nil {
			return err
		}
	}
	for _, m := range moduleMetaFiles {
		err := copyFile(filepath.Join(dst, m), filepath.Join(hostModDir, m), 0o644)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	depmod, err := lookSbin("depmod")
	if err != nil {
		return fmt.Errorf("depmod not found: install the Debian package kmod: %w", err)
	}
	out, err := exec.Command(depmod, "-b", stage, release).CombinedOutput()
	if err != nil {
		return fmt.Errorf("depmod -b %s %s: %w: %s", stage, release, err, bytes.TrimSpace(out))
	}
	return nil
}

// lookSbin is exec.LookPath that also searches the sbin directories, which an ordinary
// user's PATH (and some CI runners') lacks.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

func copyFile(dst, src string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}
