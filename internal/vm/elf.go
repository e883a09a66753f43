package vm

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/fsbench/fsbench/internal/cpio"
)

// libResolver finds the shared libraries of host executables, as ld.so would, without running
// them (ldd runs the program's interpreter; reading the ELF headers is enough and works for a
// binary of another architecture too).
type libResolver struct {
	root string // host root, "" for "/"; tests point it at a fake tree
	// dirsFor holds the library search path per ELF machine, cached.
	dirsFor map[elf.Machine][]string
	// used lists, in order, the guest directories that received a library: the guest's
	// LD_LIBRARY_PATH, since the guest has no ld.so.cache.
	used []string
}

// multiarch is Debian's library directory name per machine (/lib/<tuple>).
var multiarch = map[elf.Machine]string{
	elf.EM_X86_64:  "x86_64-linux-gnu",
	elf.EM_AARCH64: "aarch64-linux-gnu",
	elf.EM_ARM:     "arm-linux-gnueabihf",
	elf.EM_386:     "i386-linux-gnu",
	elf.EM_RISCV:   "riscv64-linux-gnu",
}

// searchDirs is where ld.so looks on Debian and most other distributions: the multiarch
// directories come from /etc/ld.so.conf.d on Debian, the others are ld.so's built-in defaults.
func (r *libResolver) searchDirs(m elf.Machine) []string {
	if d, ok := r.dirsFor[m]; ok {
		return d
	}
	var dirs []string
	if t, ok := multiarch[m]; ok {
		dirs = append(dirs, "/lib/"+t, "/usr/lib/"+t)
	}
	dirs = append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib")
	if r.dirsFor == nil {
		r.dirsFor = map[elf.Machine][]string{}
	}
	r.dirsFor[m] = dirs
	return dirs
}

func (r *libResolver) host(p string) string { return filepath.Join(r.root, p) }

// addExecutable adds the host program hostPath to a as guestPath, with its ELF interpreter and
// every shared library it needs, recursively. A file that is not ELF (a script) is added as is.
func (r *libResolver) addExecutable(a *cpio.Archive, guestPath, hostPath string) error {
	a.File(guestPath, r.host(hostPath), 0o755)
	return r.addDeps(a, hostPath, 0)
}

// addDeps adds what the ELF file at hostPath needs to run. depth guards against a cycle that
// the "already in the archive" test would not catch (it cannot: a library is added before its
// own dependencies are looked at), and against corrupt files.
func (r *libResolver) addDeps(a *cpio.Archive, hostPath string, depth int) error {
	if depth > 32 {
		return fmt.Errorf("%s: shared libraries nested more than 32 deep", hostPath)
	}
	f, err := elf.Open(r.host(hostPath))
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) {
			return nil // not ELF: a script, whose interpreter the caller adds
		}
		return fmt.Errorf("read %s: %w", hostPath, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return fmt.Errorf("%s: read its ELF interpreter: %w", hostPath, err)
		}
		interp := strings.TrimRight(string(b), "\x00")
		// The interpreter's path is written into every program: it must be at exactly that
		// path in the guest (on Debian /lib64/ld-linux-x86-64.so.2, a symlink on the host,
		// a copy of the file it points to in the guest).
		if !a.Has(interp) {
			if _, err := os.Stat(r.host(interp)); err != nil {
				return fmt.Errorf("%s needs the ELF interpreter %s: %w", hostPath, interp, err)
			}
			a.File(interp, r.host(interp), 0o755)
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: read its shared libraries: %w", hostPath, err)
	}
	if len(needed) == 0 {
		return nil // static, like fsbench and busybox
	}
	dirs := r.searchDirs(f.Machine)
	if rp, err := f.DynString(elf.DT_RUNPATH); err == nil {
		dirs = append(splitRunpath(strings.Join(rp, ":")), dirs...)
	}
	if rp, err := f.DynString(elf.DT_RPATH); err == nil {
		dirs = append(splitRunpath(strings.Join(rp, ":")), dirs...)
	}
	for _, lib := range needed {
		found := ""
		for _, d := range dirs {
			p := path.Join(d, lib)
			if lf, err := elf.Open(r.host(p)); err == nil {
				// /lib may hold a library of the same name for another word size.
				ok := lf.Machine == f.Machine && lf.Class == f.Class
				lf.Close()
				if ok {
					found = p
					break
				}
			}
		}
		if found == "" {
			return fmt.Errorf("%s needs %s, found in none of %s", hostPath, lib, strings.Join(dirs, ", "))
		}
		if a.Has(found) {
			continue
		}
		a.File(found, r.host(found), 0o755)
		r.noteDir(path.Dir(found))
		if err := r.addDeps(a, found, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (r *libResolver) noteDir(d string) {
	for _, u := range r.used {
		if u == d {
			return
		}
	}
	r.used = append(r.used, d)
}

// splitRunpath splits a DT_RUNPATH or DT_RPATH; entries using $ORIGIN are dropped (no Debian
// mkfs tool has one, and resolving them needs the binary's own directory).
func splitRunpath(s string) []string {
	var out []string
	for _, d := range strings.Split(s, ":") {
		if d != "" && !strings.Contains(d, "$") {
			out = append(out, d)
		}
	}
	return out
}
