// Package suite holds fsbench's named tests and runs them, in order, on a freshly made
// filesystem: one call of RunRepetition makes the filesystem of one variant and takes one
// sample of every test of the suite.
package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
)

// Test is how this package runs one named test. What the test is (its unit, which way is
// better, its title and doc line) is the catalog's: catalog.Get(Name), never repeated here.
type Test struct {
	Name string
	// ReadOnly is true when the test applies to read-only (image-built) filesystems too.
	ReadOnly bool
	// Needs lists tests whose work must have happened first in the same repetition; they run
	// (unrecorded) even when not selected.
	Needs []string
	// Always: the test sets up what every later test works on (mkfs and mount; on raw flash
	// init_time, mount_time and used_space), so it runs whatever is selected.
	Always bool
	// Setup: the test runs before the filesystem is mounted (mkfs, module_load, mount,
	// init_time, mount_time); every other test needs it mounted.
	Setup bool
	// Produces lists the tests whose figures this test's step measures too (mount gives
	// mount_mem): they are recorded, or recorded as not run, with it.
	Produces []string
	// Flash: the test runs on raw flash (a simulated NAND chip), not on a block device.
	Flash bool
	// run performs the test in a repetition and returns its measurements. nil when another
	// test's step produces it (see Produces).
	run func(r *rep, ctx context.Context) ([]results.Measurement, error)
}

// setup are the tests every repetition of every suite begins with: a fresh filesystem, mounted.
var setup = []Test{
	{Name: catalog.Mkfs, ReadOnly: true, Always: true, Setup: true, run: (*rep).mkfs},
	// module_load always runs (recorded when selected): otherwise the mount makes the kernel
	// load the module itself, through a modprobe it starts outside fsbench's cgroup (a usermode
	// helper), so the mount's time would include the load and the noise sentinel would blame
	// that modprobe's CPU on other work (2 of 8 tests of an idle guest run, each a mount, once
	// every repetition unloads the module again).
	{Name: catalog.ModuleLoad, ReadOnly: true, Always: true, Setup: true, run: (*rep).moduleLoad},
	{Name: catalog.Mount, ReadOnly: true, Always: true, Setup: true, Produces: []string{catalog.MountMem}, run: (*rep).mount},
	{Name: catalog.MountMem, ReadOnly: true},
}

// Bootlin is the suite of Bootlin's "Finding the Best Block Filesystem" (EOSS 2023) with the
// time and memory figures of Free Electrons' flash filesystem study (ELCE 2010).
var Bootlin = append(slices.Clone(setup),
	Test{Name: catalog.Write, run: (*rep).write},
	Test{Name: catalog.UsedSpace, ReadOnly: true, Needs: []string{catalog.Write}, run: (*rep).usedSpace},
	Test{Name: catalog.Read, ReadOnly: true, Needs: []string{catalog.Write}, run: (*rep).read},
	Test{Name: catalog.ReadRemoveWrite, Needs: []string{catalog.Write}, run: (*rep).readRemoveWrite},
	Test{Name: catalog.Remove, Needs: []string{catalog.Write}, run: (*rep).remove},
	Test{Name: catalog.VideoWrite, run: (*rep).videoWrite},
	Test{Name: catalog.VideoRead, Needs: []string{catalog.VideoWrite}, run: (*rep).videoRead},
)

// Suites maps a suite name to its tests, in the order they run. Every suite begins with the
// setup tests; a file defining another suite adds it with register in an init function.
var Suites = map[string][]Test{"bootlin": Bootlin}

// register adds a suite made of the setup tests followed by tests.
func register(name string, tests ...Test) {
	Suites[name] = append(slices.Clone(setup), tests...)
}

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
	// Order is every test of the selected suites, in the order they run, each once.
	Order []Test
}

// Select resolves the suites of a run (one, or several run one after the other on the same fresh
// filesystem) and the selected test names (all when empty).
func Select(suites plan.Suites, names []string) (Selection, error) {
	sel := Selection{Record: map[string]bool{}, Run: map[string]bool{}}
	for _, s := range suites {
		tests, ok := Suites[s]
		if !ok {
			return Selection{}, fmt.Errorf("unknown suite %q (known: %s)", s, strings.Join(SuiteNames(), ", "))
		}
		for _, t := range tests {
			if !slices.ContainsFunc(sel.Order, func(x Test) bool { return x.Name == t.Name }) {
				sel.Order = append(sel.Order, t)
			}
		}
	}
	find := func(n string) (Test, bool) {
		i := slices.IndexFunc(sel.Order, func(x Test) bool { return x.Name == n })
		if i < 0 {
			return Test{}, false
		}
		return sel.Order[i], true
	}
	if len(names) == 0 {
		for _, t := range sel.Order {
			sel.Record[t.Name] = true
		}
	}
	for _, n := range names {
		if _, ok := find(n); !ok {
			var known []string
			for _, t := range sel.Order {
				known = append(known, t.Name)
			}
			return Selection{}, fmt.Errorf("suite %s has no test %q (its tests: %s)", suites, n, strings.Join(known, ", "))
		}
		sel.Record[n] = true
	}
	// Every test works on a freshly made, mounted filesystem: the steps that make it always
	// run, and so do the steps that produce a recorded figure.
	for _, t := range sel.Order {
		if t.Always {
			sel.Run[t.Name] = true
		}
		for _, p := range t.Produces {
			if sel.Record[p] {
				sel.Run[t.Name] = true
			}
		}
	}
	for n := range sel.Record {
		sel.Run[n] = true
		t, _ := find(n)
		for _, d := range t.Needs {
			sel.Run[d] = true
		}
	}
	// video_write starts on the filesystem the remove test emptied: the tree's copies take
	// most of the device, so without the removal the video copies run out of space (a
	// 256 MiB run of write and video_write alone did). Whenever both writes run, so does
	// the removal between them, unrecorded unless selected.
	if sel.Run[catalog.Write] && sel.Run[catalog.VideoWrite] {
		if _, ok := find(catalog.Remove); ok {
			sel.Run[catalog.Remove] = true
		}
	}
	return sel, nil
}
