package board

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// apt runs apt-get and apt-cache for a foreign architecture with a state of its own under dir:
// the system's package lists, its dpkg status and its architectures are never read nor written.
// Dir::State::Status=/dev/null makes apt see nothing installed, so that dependencies are
// computed for an empty board, not for this machine.
type apt struct {
	dir  string // <cache>/apt
	arch string // Debian architecture
	log  func(string, ...any)
}

func (a apt) opts() []string {
	return []string{
		"-oAPT::Architecture=" + a.arch, "-oAPT::Architectures=" + a.arch,
		"-oDir::State::Lists=" + filepath.Join(a.dir, "lists"),
		"-oDir::Cache=" + filepath.Join(a.dir, "cache"),
		"-oDir::State::Status=/dev/null",
		"-oDebug::NoLocking=1", // the locks are the system's; this state is ours alone (flock in Up)
		"-q",
	}
}

func (a apt) run(ctx context.Context, dir, prog string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, prog, append(a.opts(), args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// update fetches the package lists of the system's sources (Debian's archive) for the board's
// architecture, once: a cache that has lists is reused.
func (a apt) update(ctx context.Context, force bool) error {
	lists := filepath.Join(a.dir, "lists")
	if m, _ := filepath.Glob(filepath.Join(lists, "*_Packages*")); len(m) > 0 && !force {
		return nil
	}
	for _, d := range []string{filepath.Join(lists, "partial"), filepath.Join(a.dir, "cache", "archives", "partial")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("apt state: %w", err)
		}
	}
	a.log("fetching Debian's %s package lists into %s", a.arch, lists)
	var err error
	for try := 0; try < 2; try++ {
		if _, err = a.run(ctx, a.dir, "apt-get", "update"); err == nil {
			return nil
		}
	}
	// One index that fails (a mirror in the middle of a sync: "File has unexpected size")
	// fails the whole update; the lists that did arrive are enough when a main component's
	// are among them.
	if m, _ := filepath.Glob(filepath.Join(lists, "*_main_binary-"+a.arch+"_Packages*")); len(m) > 0 {
		a.log("warning: some of Debian's %s package lists failed, using those that arrived: %v", a.arch, err)
		return nil
	}
	return fmt.Errorf("Debian's %s package lists (the sources of /etc/apt): %w", a.arch, err)
}

// depends returns the direct Depends and Pre-Depends of pkgs, as apt-cache depends prints them:
// virtual packages (<...>) are left out, ":any" qualifiers removed. A package apt does not know
// is returned in unknown.
func (a apt) depends(ctx context.Context, pkgs []string) (deps map[string][]string, unknown []string, err error) {
	deps = map[string][]string{}
	args := append([]string{"depends", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks",
		"--no-replaces", "--no-enhances"}, pkgs...)
	out, err := a.run(context.WithoutCancel(ctx), a.dir, "apt-cache", args...)
	if err != nil {
		// apt-cache fails as a whole on one unknown name: ask one by one to tell which.
		if len(pkgs) == 1 {
			return deps, pkgs, nil
		}
		for _, p := range pkgs {
			d, u, err := a.depends(ctx, []string{p})
			if err != nil {
				return nil, nil, err
			}
			unknown = append(unknown, u...)
			for k, v := range d {
				deps[k] = v
			}
		}
		return deps, unknown, nil
	}
	return parseDepends(out), nil, nil
}

// parseDepends reads apt-cache depends output.
func parseDepends(out []byte) map[string][]string {
	deps := map[string][]string{}
	cur := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '|' {
			cur = strings.TrimSpace(line)
			if _, ok := deps[cur]; !ok {
				deps[cur] = nil
			}
			continue
		}
		kind, name, ok := strings.Cut(strings.TrimLeft(line, " |"), ":")
		if !ok || (kind != "Depends" && kind != "PreDepends") {
			continue
		}
		name = strings.TrimSpace(name)
		if strings.HasPrefix(name, "<") {
			continue // a virtual package: a real one follows as an alternative
		}
		name, _, _ = strings.Cut(name, ":")
		deps[cur] = append(deps[cur], name)
	}
	return deps
}

// closure is roots with the libraries they depend on, recursively. Only library packages
// (libraryPackage) are followed: the programs' other dependencies (python3 for xfs_scrub_all, perl,
// debconf, logsave) are for an installed system, not for a board that runs mkfs.
func (a apt) closure(ctx context.Context, roots []string) (pkgs, unknown []string, err error) {
	seen := map[string]bool{}
	frontier := roots
	for len(frontier) > 0 {
		for _, p := range frontier {
			seen[p] = true
		}
		deps, unk, err := a.depends(ctx, frontier)
		if err != nil {
			return nil, nil, err
		}
		unknown = append(unknown, unk...)
		var next []string
		for _, ds := range deps {
			for _, d := range ds {
				if !seen[d] && libraryPackage(d) && !skipPackages[d] && !slicesContains(next, d) {
					next = append(next, d)
				}
			}
		}
		frontier = next
	}
	for p := range seen {
		if !slicesContains(unknown, p) {
			pkgs = append(pkgs, p)
		}
	}
	sort.Strings(pkgs)
	return pkgs, unknown, nil
}

// skipPackages are libraries no program fsbench runs needs: ICU (33 MB) is there for
// xfs_scrub's Unicode checks only, not for mkfs.xfs, and every boot would unpack it under TCG.
var skipPackages = map[string]bool{"libicu72": true}

// libraryPackage reports whether a dependency is a shared library's package: lib* by Debian's
// policy, with zlib's old name as the exception (dropbear and btrfs-progs need libz.so.1).
func libraryPackage(name string) bool {
	return strings.HasPrefix(name, "lib") || strings.HasPrefix(name, "zlib")
}

// kernelPackage is the versioned kernel package the metapackage depends on
// (linux-image-arm64 → linux-image-6.1.0-56-arm64).
func (a apt) kernelPackage(ctx context.Context, meta string) (string, error) {
	deps, unknown, err := a.depends(ctx, []string{meta})
	if err != nil {
		return "", err
	}
	if len(unknown) > 0 {
		return "", fmt.Errorf("Debian's %s archive has no %s", a.arch, meta)
	}
	for _, d := range deps[meta] {
		if strings.HasPrefix(d, "linux-image-") {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s depends on no linux-image-* package", meta)
}

// download puts the .deb of each package in dir, skipping those already there.
func (a apt) download(ctx context.Context, dir string, pkgs []string) (map[string]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	have := func() map[string]string {
		m := map[string]string{}
		debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
		for _, d := range debs {
			name, _, _ := strings.Cut(filepath.Base(d), "_")
			m[name] = d
		}
		return m
	}
	got := have()
	var want []string
	for _, p := range pkgs {
		if got[p] == "" {
			want = append(want, p)
		}
	}
	if len(want) > 0 {
		a.log("downloading %d %s packages into %s", len(want), a.arch, dir)
		if _, err := a.run(ctx, dir, "apt-get", append([]string{"download"}, want...)...); err != nil {
			return nil, err
		}
		got = have()
	}
	for _, p := range pkgs {
		if got[p] == "" {
			return nil, fmt.Errorf("apt-get download %s left no .deb in %s", p, dir)
		}
	}
	return got, nil
}

// unpack extracts a .deb's files into root with dpkg -x: the package is not installed, its
// maintainer scripts do not run.
func unpack(ctx context.Context, deb, root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "dpkg", "-x", deb, root).CombinedOutput()
	if err != nil {
		return fmt.Errorf("dpkg -x %s: %w: %s", filepath.Base(deb), err, bytes.TrimSpace(out))
	}
	return nil
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
