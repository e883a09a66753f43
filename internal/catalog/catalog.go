// Package catalog says what fsbench's tests are: every test of every suite, declared once,
// with the suites that run it, the unit of its headline figure and which way that figure is
// better, a title and a doc line for people, and how the report shows it.
//
// It is the room for a test's identity, not for running it (internal/suite does that) nor for
// rating it against others (internal/report). It is a leaf: it imports nothing of fsbench, so
// that the suites that record a test, the results and the report that read it and the exporters
// that translate it all ask here instead of repeating a test name as a string literal or
// guessing from a unit whether more is better.
package catalog

import "slices"

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
)

// Test is one named test.
type Test struct {
	Name string
	// Suites are the suites that run the test, in the order of Suites(). It is filled in from
	// the suites' lists, which say it once.
	Suites []string
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

// Suite is a named, ordered set of tests.
type Suite struct {
	Name  string
	Title string
	// Flash: the suite runs on raw flash (a simulated NAND chip), where a repetition prepares
	// its filesystem by its own tests; a block suite begins with the Setup tests.
	Flash bool
	// Tests are the suite's own tests, in the order they run (after Setup for a block suite).
	Tests []string
}

// Order is every test of the suite in the order a repetition runs them: the Setup tests, then
// the suite's own, for a block suite.
func (s Suite) Order() []string {
	if s.Flash {
		return slices.Clone(s.Tests)
	}
	return append(Setup(), s.Tests...)
}

// Has reports whether test is one of the suite's own tests (Setup tests left out).
func (s Suite) Has(test string) bool { return slices.Contains(s.Tests, test) }

// Setup lists the tests every repetition of a block suite begins with: a fresh filesystem,
// mounted.
func Setup() []string { return []string{Mkfs, ModuleLoad, Mount, MountMem} }

// Tests returns every test of the catalog, those of the block setup and the bootlin suite
// first, then the other suites' in the order of Suites().
func Tests() []Test { return slices.Clone(tests) }

// Suites returns every suite, bootlin first.
func Suites() []Suite { return slices.Clone(suites) }

// Lookup returns the named test.
func Lookup(name string) (Test, bool) {
	i, ok := byName[name]
	if !ok {
		return Test{}, false
	}
	return tests[i], true
}

// Get returns the named test, which must exist: for the names declared in this package.
func Get(name string) Test {
	t, ok := Lookup(name)
	if !ok {
		panic("catalog: no test " + name)
	}
	return t
}

// SuiteNamed returns the named suite.
func SuiteNamed(name string) (Suite, bool) {
	i := slices.IndexFunc(suites, func(s Suite) bool { return s.Name == name })
	if i < 0 {
		return Suite{}, false
	}
	return suites[i], true
}

// MustSuite returns the named suite, which must exist: for the names declared in this package.
func MustSuite(name string) Suite {
	s, ok := SuiteNamed(name)
	if !ok {
		panic("catalog: no suite " + name)
	}
	return s
}

// byName indexes tests by name.
var byName = map[string]int{}

// init fills in each test's suites from the suites' lists, so that membership is said once.
func init() {
	for i, t := range tests {
		byName[t.Name] = i
	}
	for _, s := range suites {
		for _, name := range s.Order() {
			if i, ok := byName[name]; ok && !slices.Contains(tests[i].Suites, s.Name) {
				tests[i].Suites = append(tests[i].Suites, s.Name)
			}
		}
	}
}
