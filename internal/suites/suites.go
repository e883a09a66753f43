// Package suites is the contract of a test suite and the registry of suites. A suite is a
// package of its own (internal/suites/NAME) that declares its tests (their catalog entries and
// how each runs), its sizes (its [NAME] table in the configuration file, recorded in
// results.json), its verdicts and its report tables, and registers itself in one line:
//
//	func init() { suites.Register(Suite) }
//
// internal/suites/all loads every suite. The engine (internal/suite) runs a suite's tests
// through Rep, the little it needs of a repetition in progress; the runner, the report and
// the command line ask this registry which suites there are. Register hands each lower room
// its part: the catalog the tests' entries (catalog.Add), plan the sizes' table
// (plan.RegisterParams).
//
// The engine's own suites register here too: bootlin, whose tests make the observation matrix
// and its verdicts (internal/verdict), and free-electrons, which runs on raw NAND and has the
// study's tables; both begin with the engine's setup tests or prepare their own chip, and so
// stay in internal/suite.
package suites

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/endurance"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Suite is a named, ordered set of tests and what the report makes of them.
type Suite struct {
	Name  string
	Title string
	// Rank orders the suites in lists, in results.json's params and in the report, lowest
	// first: bootlin 10, bonnie 20, smallfiles 30, randio 40, powercut 50, free-electrons 60.
	Rank int
	// Flash: the suite runs on raw flash (a simulated NAND chip), where a repetition prepares
	// its filesystem by its own tests; a block suite's tests run after the engine's setup tests
	// (catalog.Setup: a fresh filesystem, mounted).
	Flash bool
	// OwnSetup: a block suite that makes its filesystem itself (Rep.Make, Rep.Mount), without
	// the engine's setup tests: the endurance suite puts a fresh card in first, and a resumed
	// run mounts the filesystem it left. Its tests run unmounted (Test.Setup).
	OwnSetup bool
	// Tests are the suite's own tests, in the order they run.
	Tests []Test
	// Params are the suite's sizes with their defaults: a pointer to a struct whose fields'
	// json tags are the keys of its [Name] table in the configuration and of results.json's
	// config.params.Name (plan.RegisterParams says what a field may hold). nil: no sizes.
	Params any
	// Verdicts are the suite's own verdicts on r, each in the suite's terms, by the verdict
	// package's rule (verdict.TieRule); nil for none.
	Verdicts func(r *results.Run, alpha float64) []verdict.Verdict
	// Tables are the suite's tables of r, drawn by the report in the terminal and on the page;
	// nil, or none, when r has nothing for them.
	Tables func(r *results.Run) []Table
	// Rules is the paragraph the page's footer adds about the suite's figures, "" when r has
	// none of them; nil for none.
	Rules func(r *results.Run) string
	// Matrix are figures the suite adds to the observation matrix, its charts and the
	// comparison of two runs (each where a run has it); Compared are figures only compared.
	Matrix, Compared []verdict.Metric
}

// Test is one test of a suite: what it is (its catalog entry) and how it runs.
type Test struct {
	// Test is the test's catalog entry. A test whose entry the catalog already holds (the
	// engine's setup, bootlin and free-electrons tests) gives only its Name.
	catalog.Test
	// ReadOnly is true when the test applies to read-only (image-built) filesystems too.
	ReadOnly bool
	// Needs lists tests whose work must have happened first in the same repetition; they run
	// (unrecorded) even when not selected.
	Needs []string
	// Always: the test sets up what every later test works on (mkfs and mount; on raw flash
	// init_time, mount_time and used_space), so it runs whatever is selected.
	Always bool
	// Setup: the test runs before the filesystem is mounted; every other test needs it mounted.
	Setup bool
	// Produces lists the tests whose figures this test's step measures too (mount gives
	// mount_mem): they are recorded, or recorded as not run, with it.
	Produces []string
	// Flash: the test runs on raw flash (a simulated NAND chip), not on a block device.
	Flash bool
	// Long: the test runs until its end (a card worn out, in days on a real card): the engine's
	// per-test timeout bounds each of its steps (Rep.Timeout), not the whole test.
	Long bool
	// Run performs the test in a repetition and returns its measurements (each in its catalog
	// unit). nil when another test's step produces it (see Produces).
	Run func(ctx context.Context, r Rep) ([]results.Measurement, error)
}

// Rep is what a test sees of the repetition it runs in: the freshly made filesystem, mounted,
// and the engine's measuring. internal/suite implements it.
type Rep interface {
	// Mountpoint is where the filesystem is mounted; WorkDir is scratch space off the device.
	Mountpoint() string
	WorkDir() string
	// Variant is the variant being measured, Kind its filesystem, N the repetition's number.
	Variant() plan.Variant
	Kind() fs.Kind
	N() int
	// Params are the run's sizes of the named suite: the pointer type its Suite.Params has.
	Params(suite string) any
	// Timed runs fn inside a measurement span (time, CPU, device counters, block trace, the
	// simulated card's counters, the noise sentinel) and returns a seconds-valued measurement
	// of test; logical is the bytes fn moved through the filesystem (0: none).
	Timed(test string, logical uint64, fn func() error) (results.Measurement, error)
	// Clear removes everything from the filesystem but keep (and what the engine keeps: ext's
	// lost+found, an aged variant's tree), then syncs: a test starts from the space it needs.
	Clear(ctx context.Context, keep ...string) error
	// Unmount unmounts the filesystem (a test that mounts what it left itself, as the power
	// cuts do); later tests of the repetition do not run on it.
	Unmount(ctx context.Context) error
	// Runner runs the programs a test starts (mkfs, fsck), confined like the engine's own.
	Runner() fs.Runner
	// Logf writes a line to the run's log.
	Logf(format string, args ...any)
	// PowerCut is the simulated card's power switch and its profile (nil and "" on a target
	// whose power fsbench cannot cut).
	PowerCut() (card powercut.Card, profile string)

	// What a suite that makes its filesystem itself (Suite.OwnSetup) uses besides:

	// Device is the block device the filesystem lives on.
	Device() string
	// Make makes a fresh filesystem on the device (emptied first, or filled for a used card,
	// as the setup tests do) and mounts it, unrecorded; Mount mounts what the device holds,
	// its caches dropped first so that what is read comes from the device.
	Make(ctx context.Context) error
	Mount(ctx context.Context) error
	// Card is the simulated card's wear (nil on a real device); CardProfile its profile.
	Card() endurance.Card
	CardProfile() string
	// RunTest runs one of the engine's registered tests (a Bootlin write test) on the mounted
	// filesystem, as a default run does, and returns its measurements.
	RunTest(ctx context.Context, test string) ([]results.Measurement, error)
	// Trace turns the block trace (and its replays through the card models) of the timed
	// spans that follow on or off, on by default where the run traces; on, it starts a new day
	// of writes (the write tests whose requests make the wear line's day_lifetime_years).
	Trace(on bool)
	// Dataset is the run's generated dataset: its tree and video file, and how many copies of
	// each the Bootlin write tests make.
	Dataset() (tree, video string, copies, videoCopies int)
	// StateDir is a directory of the results directory for the suite's state, which outlives
	// the process (made on first use).
	StateDir(name string) (string, error)
	// Timeout is the engine's per-test timeout.
	Timeout() time.Duration
}

// WithParams is the Run of a test of a suite with sizes: run gets the repetition and the run's
// sizes of the suite, the *T its Suite.Params holds, or def() when the run has none of them (a
// repetition whose Env a test built without sizes).
func WithParams[T any](suite string, def func() *T, run func(ctx context.Context, r Rep, p *T) ([]results.Measurement, error)) func(context.Context, Rep) ([]results.Measurement, error) {
	return func(ctx context.Context, r Rep) ([]results.Measurement, error) {
		p, ok := r.Params(suite).(*T)
		if !ok || p == nil {
			p = def()
		}
		return run(ctx, r, p)
	}
}

// Table is a suite's table of figures, as the report draws it in the terminal and on the page.
type Table struct {
	// ID is the page's anchor of the section; Title its heading.
	ID, Title string
	// Text is the terminal's heading line.
	Text string
	// Caption, when set, is a paragraph under the page's heading.
	Caption string
	Columns []Column
	Rows    [][]string
	// Notes follow the table: indented lines in the terminal, a list on the page. TextNotes
	// are the terminal's only (what the page shows in a column).
	Notes, TextNotes []string
	// Charts follow the table on the page (the terminal leaves them out).
	Charts []Chart
}

// Chart is a line chart of a suite's figures: the report draws it (SVG) under its table.
type Chart struct {
	Title string
	// X and Y are the axes' units.
	X, Y  string
	Lines []Line
}

// Line is one series of a Chart: its points, in order of X. Lines of one Group share a
// colour and their Label in the legend (the cards of one filesystem); Name tells the line.
type Line struct {
	Label, Name string
	Group       int
	X, Y        []float64
}

// Column is one column of a Table.
type Column struct {
	// Head is the terminal's header; PageHead the page's, when it says more ("median ↑").
	Head, PageHead string
	// Num aligns the column's figures to the right on the page.
	Num bool
	// PageOnly leaves the column out of the terminal (notes too long for a line).
	PageOnly bool
}

var (
	mu       sync.RWMutex
	registry = map[string]Suite{}
)

// Register adds a suite, and hands the catalog its tests' entries and plan its sizes. It
// panics on a suite registered twice, a test without a name or unit, or a test another suite
// declared differently: each is a bug found when the program starts.
func Register(s Suite) {
	mu.Lock()
	defer mu.Unlock()
	if s.Name == "" || strings.ContainsAny(s.Name, ", ") {
		panic(fmt.Sprintf("suites: bad suite name %q", s.Name))
	}
	if _, dup := registry[s.Name]; dup {
		panic("suites: suite " + s.Name + " registered twice")
	}
	for _, t := range s.Tests {
		if t.Name == "" {
			panic("suites: a test of " + s.Name + " has no name")
		}
		if _, known := catalog.Lookup(t.Name); known && t.Unit == "" {
			continue // the catalog's own entry (setup, bootlin, free-electrons)
		}
		if err := catalog.Add(t.Test); err != nil {
			panic("suites: " + s.Name + ": " + err.Error())
		}
	}
	if s.Params != nil {
		if err := plan.RegisterParams(s.Name, s.Rank, s.Params); err != nil {
			panic("suites: " + s.Name + ": " + err.Error())
		}
	}
	registry[s.Name] = s
}

// Lookup returns the named suite.
func Lookup(name string) (Suite, bool) {
	mu.RLock()
	defer mu.RUnlock()
	s, ok := registry[name]
	return s, ok
}

// All returns every registered suite, by Rank (then name).
func All() []Suite {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Suite, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Suite) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// Names lists the registered suites, sorted by name.
func Names() []string {
	var out []string
	for _, s := range All() {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// TestNames lists the tests of every suite (the setup tests of the block suites included),
// each once, in the suites' order.
func TestNames() []string {
	var out []string
	for _, s := range All() {
		for _, name := range s.Order() {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// Order is every test of the suite in the order a repetition runs them: the setup tests,
// then the suite's own, for a block suite.
func (s Suite) Order() []string {
	var out []string
	if !s.Flash && !s.OwnSetup {
		out = catalog.Setup()
	}
	for _, t := range s.Tests {
		out = append(out, t.Name)
	}
	return out
}

// Has reports whether test is one of the suite's own tests (the setup tests left out).
func (s Suite) Has(test string) bool {
	return slices.ContainsFunc(s.Tests, func(t Test) bool { return t.Name == test })
}

// TestNames are the suite's own tests, in order.
func (s Suite) TestNames() []string { return NamesOf(s.Tests) }

// NamesOf are the names of tests, in order.
func NamesOf(tests []Test) []string {
	out := make([]string, len(tests))
	for i, t := range tests {
		out[i] = t.Name
	}
	return out
}

// Running lists the suites whose order includes test, by Rank.
func Running(test string) []string {
	var out []string
	for _, s := range All() {
		if slices.Contains(s.Order(), test) {
			out = append(out, s.Name)
		}
	}
	return out
}

// Verdicts are what every registered suite adds to the verdicts, for internal/verdict.
func Verdicts() []verdict.Suite {
	var out []verdict.Suite
	for _, s := range All() {
		out = append(out, verdict.Suite{Name: s.Name, Title: s.Title, Tests: s.TestNames(), Verdicts: s.Verdicts, Matrix: s.Matrix, Compared: s.Compared})
	}
	return out
}
