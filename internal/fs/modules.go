package fs

import (
	"bufio"
	"context"
	"os"
	"strings"
)

// LoadedModules lists the modules in /proc/modules (a kernel without module support has no such
// file: the list is then empty).
func LoadedModules() map[string]bool {
	out := map[string]bool{}
	f, err := os.Open("/proc/modules")
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

// UnloadNewModules unloads the modules loaded since before was taken (LoadedModules), so that
// a trial mount leaves the kernel as it found it: the module_load test then still times a
// first load. Modules that depend on each other are unloaded in rounds, users first; one that
// stays in use is left loaded and named in the result.
func UnloadNewModules(ctx context.Context, run Runner, before map[string]bool) []string {
	for {
		cur := newSince(before)
		if len(cur) == 0 {
			return nil
		}
		removed := 0
		for _, m := range cur {
			if _, err := runner(run)(ctx, "rmmod", m); err == nil {
				removed++
			}
		}
		if removed == 0 || ctx.Err() != nil {
			return newSince(before)
		}
	}
}

func newSince(before map[string]bool) []string {
	var out []string
	for m := range LoadedModules() {
		if !before[m] {
			out = append(out, m)
		}
	}
	return out
}
