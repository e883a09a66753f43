// Package catalog says what fsbench's tests are: every test of every suite, declared once,
// with the suites that run it, the unit of its headline figure and which way that figure is
// better, a title and a doc line for people, and how the report shows it.
//
// It is the room for a test's identity, not for running it (internal/suite and the suites'
// packages do that) nor for rating it against others (internal/verdict). It is a leaf: it
// imports nothing of fsbench, so that the suites that record a test, the results and the report
// that read it and the exporters that translate it all ask here instead of repeating a test name
// as a string literal or guessing from a unit whether more is better. It holds the entries of
// the tests the engine and the report build on (the setup, bootlin and free-electrons tests);
// a suite's package declares its own tests' entries, which internal/suites adds here (Add).
package catalog

import (
	"fmt"
	"slices"
	"sync"
)

// Direction says which way a figure is better. The zero value is no direction at all: every
// test and figure of the catalog sets one.
type Direction int

// The directions.
const (
	// LowerIsBetter: times, space, memory, amplification.
	LowerIsBetter Direction = iota + 1
	// HigherIsBetter: rates (MB/s, IOPS, files/s) and lifetimes.
	HigherIsBetter
	// NotRated: a figure shown for information only, never rated nor called a regression.
	NotRated
)

// String is the direction in words, as the comparison prints it under each figure.
func (d Direction) String() string {
	switch d {
	case LowerIsBetter:
		return "lower is better"
	case HigherIsBetter:
		return "higher is better"
	case NotRated:
		return "not rated"
	}
	return "no direction"
}

// Quantity is the kind of thing a figure counts. It decides whether figures taken on different
// machines compare: a QEMU guest under TCG emulates its CPU tens of times slower than the host,
// so its times and rates say nothing against the host's, while bytes count the same anywhere.
type Quantity int

// The quantities.
const (
	Time   Quantity = iota + 1 // a duration
	Rate                       // work done per second
	Amount                     // bytes, counts, or ratios of them
)

// MachineBound reports whether a figure of this quantity measures the machine as much as the
// filesystem (times and rates).
func (q Quantity) MachineBound() bool { return q == Time || q == Rate }

// Units of headline figures, as results.json records them (measurement.unit).
const (
	Seconds     = "s"
	Bytes       = "bytes"
	KiBps       = "KiB/s"   // bonnie++'s K/sec: 1024 bytes per second
	SeeksPerSec = "seeks/s" // bonnie++'s random seeks per second
	FilesPerSec = "files/s" // files created, stat'ed, deleted or written per second
	MBps        = "MB/s"    // 10^6 bytes per second
	IOPS        = "IOPS"    // I/O requests completed per second
	Rounds      = "rounds"  // rounds of a workload (days of a device's writes) a card took
)

// Test is one named test.
type Test struct {
	Name string
	// Unit, Better and Quantity describe the headline figure (measurement.value).
	Unit     string
	Better   Direction
	Quantity Quantity
	// Title is a short name for tables and headings.
	Title string
	// Doc says what the test does and measures, in one line (fsbench list).
	Doc string
	// SuiteDoc replaces Doc in a suite where the same test is done differently (used_space on
	// raw flash); nil for most tests. See DocIn.
	SuiteDoc map[string]string
	// Figure is how the block report shows the test in its matrix, charts and comparisons;
	// nil when it has no column or chart of its own there.
	Figure *Figure
	// BonnieField is the field of bonnie++'s CSV that holds the test's rate; "" when bonnie++
	// has no such test.
	BonnieField string
}

// DocIn is the test's doc line in a suite.
func (t Test) DocIn(suite string) string {
	if d, ok := t.SuiteDoc[suite]; ok {
		return d
	}
	return t.Doc
}

// Source says where the report takes a figure from in a measurement.
type Source int

// The sources.
const (
	// FromValue: the headline figure, times Figure.Scale.
	FromValue Source = iota + 1
	// FromThroughput: what the test moved through the filesystem per second, in MB/s. Read-write
	// variants hold several copies of the dataset and read-only images one, so seconds would
	// favour the images; MB/s of the same data compares them fairly.
	FromThroughput
	// FromExtra: the secondary figure named Figure.Extra, times Figure.Scale.
	FromExtra
)

// Figure is what the block report shows for one test: its headline figure in a readable unit,
// or a figure derived from the same measurement.
type Figure struct {
	// Key identifies the figure in the HTML page's ids and in comparisons.
	Key string
	// Title names the figure in full (chart captions, comparisons); Short is the terminal's
	// column header; Label is the column's name in the HTML matrix, "" when the figure is not
	// a column of the matrix.
	Title, Short, Label string
	Unit                string
	Better              Direction
	Quantity            Quantity
	From                Source
	Extra               string  // with FromExtra: the key in measurement.extra
	Scale               float64 // with FromValue and FromExtra: factor from the recorded figure to Unit
}

// Setup lists the tests every repetition of a block suite begins with: a fresh filesystem,
// mounted.
func Setup() []string { return []string{Mkfs, ModuleLoad, Mount, MountMem} }

// Tests returns every test of the catalog: the setup and bootlin tests first, then the
// free-electrons tests, then those the suites added, in the order they were added.
func Tests() []Test {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(tests)
}

// Lookup returns the named test.
func Lookup(name string) (Test, bool) {
	mu.RLock()
	defer mu.RUnlock()
	i, ok := byName[name]
	if !ok {
		return Test{}, false
	}
	return tests[i], true
}

// Get returns the named test, which must exist: for the names declared in this package and
// in a suite's own.
func Get(name string) Test {
	t, ok := Lookup(name)
	if !ok {
		panic("catalog: no test " + name)
	}
	return t
}

// Add adds the entries of a suite's own tests. An entry already there is refused unless it is
// the same (two suites may share a test only as one test).
func Add(ts ...Test) error {
	mu.Lock()
	defer mu.Unlock()
	for _, t := range ts {
		if t.Name == "" || t.Unit == "" || t.Better == 0 || t.Quantity == 0 || t.Title == "" {
			return fmt.Errorf("test %q: a catalog entry needs a name, a unit, a direction, a quantity and a title", t.Name)
		}
		if i, ok := byName[t.Name]; ok {
			if o := tests[i]; o.Unit != t.Unit || o.Better != t.Better || o.Quantity != t.Quantity || o.Title != t.Title {
				return fmt.Errorf("test %s is already in the catalog, declared differently", t.Name)
			}
			continue
		}
		byName[t.Name] = len(tests)
		tests = append(tests, t)
	}
	return nil
}

var (
	mu sync.RWMutex
	// byName indexes tests by name.
	byName = func() map[string]int {
		m := map[string]int{}
		for i, t := range tests {
			m[t.Name] = i
		}
		return m
	}()
)

// AppClass is an SD Association application performance class (SD 5.1 / 6.0): the minimum
// sequential write and 4 KiB random IOPS a card must sustain. The randio suite judges a
// filesystem's figures by it, the probe's class test a raw card's.
type AppClass struct {
	Name                string
	SeqMBps             float64
	WriteIOPS, ReadIOPS float64
}

// AppClasses are A1 and A2, lowest first; a card in A2 is in A1 too.
var AppClasses = []AppClass{
	{Name: "A1", SeqMBps: 10, WriteIOPS: 500, ReadIOPS: 1500},
	{Name: "A2", SeqMBps: 10, WriteIOPS: 2000, ReadIOPS: 4000},
}
