package fs

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// procModules is /proc/modules; a variable so that tests can fake it.
var procModules = "/proc/modules"

// LoadedModules lists the modules in /proc/modules (a kernel without module support has no such
// file: the list is then empty).
func LoadedModules() map[string]bool {
	out := map[string]bool{}
	f, err := os.Open(procModules)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, _, ok := strings.Cut(sc.Text(), " "); ok {
			out[name] = true
		}
	}
	return out
}

// ModuleLeftLoaded is module_load's note when the filesystem's module is loaded because an
// earlier repetition loaded it and the kernel would not unload it: the repetition is then no
// cold boot, and its boot time is left out.
const ModuleLeftLoaded = "left loaded by an earlier repetition (the kernel would not unload it)"

// UnloadKindModules unloads what loading k's module brought in during a repetition: k.Module and
// the modules modprobe loads with it (its modules.dep line), those of them that were not loaded
// at before. Each repetition then pays the module load again, as a boot does (Bootlin's boot
// time is module load + mount; btrfs's load took 1.04 s on the emulated arm64 board, and every
// later repetition found it loaded). Only those modules: nothing loaded before the repetition,
// nor a driver that something else loaded meanwhile. Users go first (btrfs, then its xor and
// raid6_pq), in rounds. It returns what was unloaded and what the kernel kept (in use, or a
// kernel that cannot unload modules).
func UnloadKindModules(ctx context.Context, run Runner, s System, k Kind, before map[string]bool) (unloaded, left []string) {
	if k.Module == "" {
		return nil, nil
	}
	mine := s.moduleClosure(k.Module)
	pending := func() []string {
		var out []string
		for m := range LoadedModules() {
			if mine[m] && !before[m] {
				out = append(out, m)
			}
		}
		slices.Sort(out)
		return out
	}
	for {
		cur := pending()
		if len(cur) == 0 {
			return unloaded, nil
		}
		removed := 0
		for _, m := range cur {
			if _, err := runner(run)(ctx, "rmmod", m); err == nil {
				unloaded = append(unloaded, m)
				removed++
			}
		}
		if removed == 0 || ctx.Err() != nil {
			return unloaded, pending()
		}
	}
}

// moduleClosure is module m and its dependencies as modules.dep lists them (all of them, not
// only the direct ones), by the names /proc/modules uses.
func (s System) moduleClosure(m string) map[string]bool {
	out := map[string]bool{normModule(m): true}
	if s.ModulesDir == "" {
		return out
	}
	b, err := os.ReadFile(filepath.Join(s.ModulesDir, "modules.dep"))
	if err != nil {
		return out
	}
	name := func(path string) string {
		n, _, _ := strings.Cut(filepath.Base(strings.TrimSpace(path)), ".ko")
		return normModule(n)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		mod, deps, ok := strings.Cut(sc.Text(), ":")
		if !ok || name(mod) != normModule(m) {
			continue
		}
		for _, d := range strings.Fields(deps) {
			out[name(d)] = true
		}
	}
	return out
}
