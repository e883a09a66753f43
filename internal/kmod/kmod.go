// Package kmod reads a kernel's module index (modules.dep) and picks the modules a small
// root filesystem needs: the QEMU guest's initramfs (internal/vm) and the emulated boards'
// (internal/board) both carry only the modules their tests load, with what those depend on.
package kmod

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// Name is a module's name as modprobe and /sys/module spell it, from its path in
// modules.dep: "kernel/fs/nls/nls_iso8859-1.ko.xz" → "nls_iso8859_1".
func Name(p string) string {
	base := path.Base(p)
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return strings.ReplaceAll(base, "-", "_")
}

// ReadDep parses modules.dep: module path → the paths it depends on.
func ReadDep(r io.Reader) (map[string][]string, error) {
	deps := map[string][]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		mod, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		deps[strings.TrimSpace(mod)] = strings.Fields(rest)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read modules.dep: %w", err)
	}
	return deps, nil
}

// Select returns, sorted, the module paths (relative to the module directory) to carry: the
// modules named in roots (spelled with - or _) with everything they depend on, and every
// module under the directories in wholeDirs. Names in roots that modules.dep does not list
// are built in (or absent): they are returned in missing, for the caller to judge.
//
// Whole directories are there for soft dependencies and aliases: ext4 asks for
// "crypto-crc32c", btrfs for "blake2b-256", which modprobe resolves through modules.alias to
// one of several modules under kernel/crypto and kernel/arch/x86/crypto; taking those
// directories (a few MB) is simpler and surer than resolving aliases here.
func Select(deps map[string][]string, roots, wholeDirs []string) (mods, missing []string) {
	byName := map[string]string{}
	for p := range deps {
		byName[Name(p)] = p
	}
	seen := map[string]bool{}
	var visit func(p string)
	visit = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, d := range deps[p] {
			visit(d)
		}
	}
	for _, r := range roots {
		p, ok := byName[strings.ReplaceAll(r, "-", "_")]
		if !ok {
			missing = append(missing, r)
			continue
		}
		visit(p)
	}
	for p := range deps {
		for _, d := range wholeDirs {
			if strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
				visit(p)
			}
		}
	}
	for p := range seen {
		mods = append(mods, p)
	}
	sort.Strings(mods)
	return mods, missing
}
