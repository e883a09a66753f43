// Package suite is the engine of a repetition: one call of RunRepetition makes the filesystem
// of one variant and takes one sample of every selected test of the run's suites, in order, on
// it. The tests of a registered suite run through suites.Rep, which the repetition in
// progress implements (its measurement span, its clearing, its unmount); the package's own
// tests are the setup tests every block suite begins with and the bootlin and free-electrons
// suites, which are part of how a repetition runs (see init in this file).
package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
)

// Test is how the engine runs one named test: suites.Test, the contract every suite's
// package fills in. What the test is (its unit, which way is better, its title and doc line) is
// the catalog's: catalog.Get(Name), never repeated here.
type Test = suites.Test

// step adapts one of this package's own tests (a method of the repetition in progress) to the
// contract: the engine only ever runs it on its own *rep.
func step(f func(r *rep, ctx context.Context) ([]results.Measurement, error)) func(context.Context, suites.Rep) ([]results.Measurement, error) {
	return func(ctx context.Context, r suites.Rep) ([]results.Measurement, error) { return f(r.(*rep), ctx) }
}

// named is a test whose catalog entry the catalog itself holds.
func named(name string) catalog.Test { return catalog.Test{Name: name} }

// setup are the tests every repetition of every block suite begins with: a fresh filesystem,
// mounted (catalog.Setup names them).
var setup = []Test{
	{Test: named(catalog.Mkfs), ReadOnly: true, Always: true, Setup: true, Run: step((*rep).mkfs)},
	// module_load always runs (recorded when selected): otherwise the mount makes the kernel
	// load the module itself, through a modprobe it starts outside fsbench's cgroup (a usermode
	// helper), so the mount's time would include the load and the noise sentinel would blame
	// that modprobe's CPU on other work (2 of 8 tests of an idle guest run, each a mount, once
	// every repetition unloads the module again).
	{Test: named(catalog.ModuleLoad), ReadOnly: true, Always: true, Setup: true, Run: step((*rep).moduleLoad)},
	{Test: named(catalog.Mount), ReadOnly: true, Always: true, Setup: true, Produces: []string{catalog.MountMem}, Run: step((*rep).mount)},
	{Test: named(catalog.MountMem), ReadOnly: true},
}

// bootlin are the tests of Bootlin's "Finding the Best Block Filesystem" (EOSS 2023) with the
// time and memory figures of Free Electrons' flash filesystem study (ELCE 2010), after setup.
var bootlin = []Test{
	{Test: named(catalog.Write), Run: step((*rep).write)},
	{Test: named(catalog.UsedSpace), ReadOnly: true, Needs: []string{catalog.Write}, Run: step((*rep).usedSpace)},
	{Test: named(catalog.Read), ReadOnly: true, Needs: []string{catalog.Write}, Run: step((*rep).read)},
	{Test: named(catalog.ReadRemoveWrite), Needs: []string{catalog.Write}, Run: step((*rep).readRemoveWrite)},
	{Test: named(catalog.Remove), Needs: []string{catalog.Write}, Run: step((*rep).remove)},
	{Test: named(catalog.VideoWrite), Run: step((*rep).videoWrite)},
	{Test: named(catalog.VideoRead), Needs: []string{catalog.VideoWrite}, Run: step((*rep).videoRead)},
}

// The engine's own suites: bootlin's tests make the observation matrix and its verdicts
// (internal/verdict), free-electrons prepares its own raw NAND chip (prepareFlash) and has the
// study's tables (internal/report); both are part of how a repetition runs.
func init() {
	suites.Register(suites.Suite{Name: catalog.SuiteBootlin, Rank: 10, Tests: bootlin,
		Title: `Bootlin's "Finding the Best Block Filesystem" (EOSS 2023), with the time and memory figures of Free Electrons' flash filesystem study (ELCE 2010)`})
	suites.Register(suites.Suite{Name: catalog.SuiteFreeElectrons, Rank: 60, Flash: true, Tests: freeElectrons,
		Title: "Free Electrons' flash filesystem study on raw NAND (ELCE 2010)"})
}

// order is every test of a registered suite in the order a repetition runs them.
func order(s suites.Suite) []Test {
	if s.Flash || s.OwnSetup {
		return s.Tests
	}
	return append(slices.Clone(setup), s.Tests...)
}

// Selection is the set of tests a run records and the set it must perform.
type Selection struct {
	Record map[string]bool // tests whose figures are recorded
	Run    map[string]bool // Record plus what they need
	// Order is every test of the selected suites, in the order they run, each once.
	Order []Test
}

// Select resolves the suites of a run (names_) (one, or several run one after the other on the same fresh
// filesystem) and the selected test names (all when empty).
func Select(names_ plan.Suites, names []string) (Selection, error) {
	sel := Selection{Record: map[string]bool{}, Run: map[string]bool{}}
	for _, name := range names_ {
		s, ok := suites.Lookup(name)
		if !ok {
			return Selection{}, fmt.Errorf("unknown suite %q (known: %s)", name, strings.Join(suites.Names(), ", "))
		}
		for _, t := range order(s) {
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
			return Selection{}, fmt.Errorf("suite %s has no test %q (its tests: %s)", names_, n, strings.Join(known, ", "))
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

// Lookup returns the named test of a registered suite, as this package runs it.
func Lookup(suiteName, test string) (Test, bool) {
	s, ok := suites.Lookup(suiteName)
	if !ok {
		return Test{}, false
	}
	for _, t := range order(s) {
		if t.Name == test {
			return t, true
		}
	}
	return Test{}, false
}
