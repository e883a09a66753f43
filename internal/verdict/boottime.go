package verdict

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// leftLoadedNote adds to the boot/mount time verdict which variants' figure leaves out
// Repetitions that were no cold boot: their module_load found the module an earlier
// repetition had loaded, because the kernel would not unload it ("left_loaded"). Their boot
// time is that of the repetitions that did load it; the reader is told, so that a median over
// fewer repetitions (or none) is not taken for one over all of them.
func leftLoadedNote(v Verdict, r *results.Run) Verdict {
	type count struct{ left, loaded int }
	by := map[string]*count{}
	for _, m := range r.Measurements {
		if m.Test != catalog.ModuleLoad || m.Warmup {
			continue
		}
		c := by[m.Variant]
		if c == nil {
			c = &count{}
			by[m.Variant] = c
		}
		switch {
		case m.Extra["left_loaded"] > 0:
			c.left++
		case m.Status == results.OK && m.Value != nil:
			c.loaded++
		}
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(by)) {
		c := by[name]
		if c.left == 0 {
			continue
		}
		switch c.loaded {
		case 0:
			parts = append(parts, fmt.Sprintf("%s has none: its module stayed loaded in all %d", name, c.left))
		default:
			parts = append(parts, fmt.Sprintf("%s from the %d that loaded its module, without the %d that found it left loaded", name, c.loaded, c.left))
		}
	}
	if len(parts) == 0 {
		return v
	}
	note := "the kernel would not unload a module an earlier repetition loaded, so boot time counts only repetitions that loaded it (a cold boot): " + strings.Join(parts, "; ")
	if v.Note != "" {
		v.Note += "; " + note
	} else {
		v.Note = note
	}
	return v
}
