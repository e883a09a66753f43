// Package smallfiles is the smallfiles suite: the two quick tests of the Dreamplug tuning (2012): one large file, and many small files each made durable before the next.
//
// The package is the whole suite: its tests (their catalog entries and how each runs, on the
// repetition the engine hands it: suites.Rep), the sizes of its [smallfiles] table (Params),
// its verdicts (one per test) and its table.
package smallfiles

import (
	"fmt"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Name is the suite's name.
const Name = "smallfiles"

// The suite's test names: the two quick tests of the Dreamplug tuning (2012).
const (
	Large   = "smallfiles_large"
	Fsync   = "smallfiles_fsync"
	Dirsync = "smallfiles_dirsync"
)

// tests are the suite's tests, in the order they run.
var tests = []suites.Test{
	{Test: catalog.Test{Name: Large, Unit: catalog.MBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "large file write",
		Doc: "one large file written in 16 KiB blocks (as dd bs=16k count=10000), syncfs timed; incompressible data where dd wrote zeros"},
		Run: suites.WithParams(Name, Default, largeTest)},
	{Test: catalog.Test{Name: Fsync, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "fsync'ed small files",
		Doc: "1000 files of 160 KiB, each fsync'ed before the next (the study ran sync after each); no process start-up timed"},
		Run: smallTest(Fsync, false)},
	{Test: catalog.Test{Name: Dirsync, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "small files with directory fsync",
		Doc: "as smallfiles_fsync, with an fsync of the parent directory after each file, so that its name is durable too"},
		Run: smallTest(Dirsync, true)},
}

const title = "large file and small fsync'ed files (Dreamplug tuning)"

// Suite is the smallfiles suite.
var Suite = suites.Suite{
	Name: Name, Rank: 30, Title: title,
	Tests:    tests,
	Params:   Default(),
	Verdicts: verdict.PerTest(suites.NamesOf(tests)),
	Tables:   suites.RateTable(Name, title, suites.NamesOf(tests), nil),
}

func init() { suites.Register(Suite) }

// Params are the sizes of the smallfiles tests (the Dreamplug write-up's), its [smallfiles]
// table in the configuration and results.json's config.params.smallfiles. The counts are
// scaled down when they do not fit in 40 % of the free space.
type Params struct {
	Block     uint64 `json:"block_bytes"` // bytes per write of the large file (dd bs=16k)
	Blocks    int    `json:"blocks"`      // writes of the large file (dd count=10000)
	Files     int    `json:"files"`       // small files (1000)
	FileBytes uint64 `json:"file_bytes"`  // bytes per small file (160 KiB)
}

// Default are the Dreamplug tests' sizes.
func Default() *Params {
	return &Params{Block: 16 << 10, Blocks: 10000, Files: 1000, FileBytes: 160 << 10}
}

// Check refuses sizes the smallfiles tests could not run with.
func (p *Params) Check() error {
	if p.Block == 0 || p.Blocks < 1 || p.Files < 1 || p.FileBytes == 0 {
		return fmt.Errorf("block_bytes, blocks, files and file_bytes must be at least 1")
	}
	return nil
}
