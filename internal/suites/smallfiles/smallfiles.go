// Package smallfiles is the smallfiles suite: the two quick tests of the Dreamplug tuning (2012): one large file, and many small files each made durable before the next.
//
// The engine (internal/suite) still runs its tests; this package declares the rest: the tests'
// catalog entries, the sizes of its [smallfiles] table, its verdicts (one per test) and its table.
package smallfiles

import (
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Name is the suite's name.
const Name = "smallfiles"

// entries are the suite's tests' catalog entries, in the order they run.
var entries = []catalog.Test{
	{Name: suite.SmallLarge, Unit: catalog.MBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "large file write",
		Doc: "one large file written in 16 KiB blocks (as dd bs=16k count=10000), syncfs timed; incompressible data where dd wrote zeros"},
	{Name: suite.SmallFsync, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "fsync'ed small files",
		Doc: "1000 files of 160 KiB, each fsync'ed before the next (the study ran sync after each); no process start-up timed"},
	{Name: suite.SmallDirsync, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "small files with directory fsync",
		Doc: "as smallfiles_fsync, with an fsync of the parent directory after each file, so that its name is durable too"},
}

const title = "large file and small fsync'ed files (Dreamplug tuning)"

// Suite is the smallfiles suite.
var Suite = suites.Suite{
	Name: Name, Rank: 30, Title: title,
	Tests:    suite.WithEntries(suite.Steps(Name), entries),
	Params:   suite.DefaultSmallfiles(),
	Verdicts: verdict.PerTest(names()),
	Tables:   suites.RateTable(Name, title, names(), nil),
}

func init() { suites.Register(Suite) }

// names are the suite's tests, in order.
func names() []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name
	}
	return out
}
