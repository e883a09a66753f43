// Package presets holds fsbench's ready-made configurations: TOML files in the plan format
// (see package plan), embedded in the binary, each reproducing one tuning question of the
// studies fsbench automates (mount options, ext4, btrfs, f2fs, squashfs and erofs settings,
// device size, I/O scheduler).
package presets

import (
	"embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed files/*.toml
var files embed.FS

// Info describes a preset beyond its configuration file.
type Info struct {
	Name string
	// Series groups presets meant to be run one after the other and compared, because what
	// they vary is one value per run (the device size): "scaling" for scaling-64m, -256m, -1g.
	Series string
}

// catalog lists the presets with what their files cannot say.
var catalog = []Info{
	{Name: "alignment"},
	{Name: "btrfs-tuning"},
	{Name: "erofs-compression"},
	{Name: "ext4-tuning"},
	{Name: "f2fs-compression"},
	{Name: "io-scheduler-bfq", Series: "io-scheduler"},
	{Name: "io-scheduler-mq-deadline", Series: "io-scheduler"},
	{Name: "io-scheduler-none", Series: "io-scheduler"},
	{Name: "mount-options"},
	{Name: "scaling-1g", Series: "scaling"},
	{Name: "scaling-256m", Series: "scaling"},
	{Name: "scaling-64m", Series: "scaling"},
	{Name: "squashfs-compression"},
}

// Names lists the presets, sorted.
func Names() []string {
	out := make([]string, 0, len(catalog))
	for _, i := range catalog {
		out = append(out, i.Name)
	}
	slices.Sort(out)
	return out
}

// Lookup returns a preset's Info.
func Lookup(name string) (Info, bool) {
	i := slices.IndexFunc(catalog, func(i Info) bool { return i.Name == name })
	if i < 0 {
		return Info{}, false
	}
	return catalog[i], true
}

// Series lists the presets of a series in run order (smallest device first for "scaling").
func Series(series string) []string {
	var out []string
	for _, i := range catalog {
		if i.Series == series {
			out = append(out, i.Name)
		}
	}
	order := map[string]int{"scaling-64m": 0, "scaling-256m": 1, "scaling-1g": 2}
	slices.SortStableFunc(out, func(a, b string) int { return order[a] - order[b] })
	return out
}

// Load returns a preset's configuration, to be given to plan.Parse, and the file name to
// use in its error messages ("preset:NAME.toml").
func Load(name string) (filename string, data []byte, err error) {
	if _, ok := Lookup(name); !ok {
		return "", nil, fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	data, err = files.ReadFile("files/" + name + ".toml")
	if err != nil {
		return "", nil, fmt.Errorf("preset %s: %w", name, err)
	}
	return "preset:" + name + ".toml", data, nil
}
