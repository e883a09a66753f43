// Package suite holds fsbench's named tests and runs them, in order, on a freshly made
// filesystem: one call of RunRepetition makes the filesystem of one variant and takes one
// sample of every test of the suite.
package suite

import (
	"fmt"
	"slices"
	"strings"
)

// Test describes one named test.
type Test struct {
	Name string
	// Unit of the headline figure: "s" (seconds, lower is better) or "bytes" (lower is better).
	Unit string
	// ReadOnly is true when the test applies to read-only (image-built) filesystems too.
	ReadOnly bool
	// Needs lists tests whose work must have happened first in the same repetition; they run
	// (unrecorded) even when not selected.
	Needs []string
	Doc   string
}

// Test names of the bootlin suite, in the order they run.
const (
	Mkfs            = "mkfs"
	ModuleLoad      = "module_load"
	Mount           = "mount"
	MountMem        = "mount_mem"
	Write           = "write"
	UsedSpace       = "used_space"
	Read            = "read"
	ReadRemoveWrite = "read_remove_write"
	Remove          = "remove"
	VideoWrite      = "video_write"
	VideoRead       = "video_read"
)

// Bootlin is the suite of Bootlin's "Finding the Best Block Filesystem" (EOSS 2023) with the
// time and memory figures of Free Electrons' flash filesystem study (ELCE 2010).
var Bootlin = []Test{
	{Name: Mkfs, Unit: "s", ReadOnly: true, Doc: "mkfs time; for read-only filesystems the image build time (image size in extra.image_bytes, time to write it to the device in extra.image_write_s)"},
	{Name: ModuleLoad, Unit: "s", ReadOnly: true, Doc: "modprobe time when the filesystem is a module not yet loaded; otherwise n/a with the reason (built-in or already loaded)"},
	{Name: Mount, Unit: "s", ReadOnly: true, Doc: "mount(2) time, cold: sync and drop_caches first"},
	{Name: MountMem, Unit: "bytes", ReadOnly: true, Doc: "kernel memory taken by the mount (see methods.mount_mem)"},
	{Name: Write, Unit: "s", Doc: "copy the rootfs dataset N times from RAM (tmpfs) into the filesystem, syncfs inside the timed part"},
	{Name: UsedSpace, Unit: "bytes", ReadOnly: true, Needs: []string{Write}, Doc: "used bytes as df shows (statfs) after storing the dataset; logical_bytes beside it"},
	{Name: Read, Unit: "s", ReadOnly: true, Needs: []string{Write}, Doc: "unmount, drop caches, mount, then read every byte of every file"},
	{Name: ReadRemoveWrite, Unit: "s", Needs: []string{Write}, Doc: "N times: remove the oldest copy, copy the oldest remaining one to a new one; syncfs"},
	{Name: Remove, Unit: "s", Needs: []string{Write}, Doc: "remove everything, syncfs"},
	{Name: VideoWrite, Unit: "s", Doc: "copy an incompressible file N times, syncfs"},
	{Name: VideoRead, Unit: "s", Needs: []string{VideoWrite}, Doc: "unmount, drop caches, mount, read the video copies"},
}

// Suites maps a suite name to its tests.
var Suites = map[string][]Test{"bootlin": Bootlin}

// SuiteNames lists the known suites, sorted.
func SuiteNames() []string {
	var names []string
	for n := range Suites {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestNames lists the test names of every suite, without duplicates, in suite order.
func TestNames() []string {
	var names []string
	for _, s := range SuiteNames() {
		for _, t := range Suites[s] {
			if !slices.Contains(names, t.Name) {
				names = append(names, t.Name)
			}
		}
	}
	return names
}

// Lookup returns the named test of a suite.
func Lookup(suite, name string) (Test, bool) {
	for _, t := range Suites[suite] {
		if t.Name == name {
			return t, true
		}
	}
	return Test{}, false
}

// Selection is the set of tests a run records and the set it must perform.
type Selection struct {
	Record map[string]bool // tests whose figures are recorded
	Run    map[string]bool // Record plus what they need
}

// Select resolves the selected test names of a suite (all when empty) into a Selection.
func Select(suite string, names []string) (Selection, error) {
	tests, ok := Suites[suite]
	if !ok {
		return Selection{}, fmt.Errorf("unknown suite %q (known: %s)", suite, strings.Join(SuiteNames(), ", "))
	}
	sel := Selection{Record: map[string]bool{}, Run: map[string]bool{}}
	if len(names) == 0 {
		for _, t := range tests {
			sel.Record[t.Name] = true
		}
	}
	for _, n := range names {
		if _, ok := Lookup(suite, n); !ok {
			var known []string
			for _, t := range tests {
				known = append(known, t.Name)
			}
			return Selection{}, fmt.Errorf("suite %s has no test %q (its tests: %s)", suite, n, strings.Join(known, ", "))
		}
		sel.Record[n] = true
	}
	// Every test works on a freshly made, mounted filesystem: mkfs and mount always run.
	sel.Run[Mkfs], sel.Run[Mount] = true, true
	for n := range sel.Record {
		sel.Run[n] = true
		t, _ := Lookup(suite, n)
		for _, d := range t.Needs {
			sel.Run[d] = true
		}
	}
	return sel, nil
}
