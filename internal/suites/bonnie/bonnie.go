// Package bonnie is the bonnie suite: bonnie++'s tests, as the Pandora SD-card study (2012) ran them: block write, rewrite, read, random seeks, and sequential and random create, stat and delete.
//
// The engine (internal/suite) still runs its tests; this package declares the rest: the tests'
// catalog entries, the sizes of its [bonnie] table, its verdicts (one per test) and its table.
package bonnie

import (
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Name is the suite's name.
const Name = "bonnie"

// entries are the suite's tests' catalog entries, in the order they run.
var entries = []catalog.Test{
	{Name: suite.BonnieWrite, Unit: catalog.KiBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "block write", BonnieField: "put_block",
		Doc: "bonnie++ block write: one file (2 × RAM, capped to the device) written in 8 KiB write(2) calls, syncfs inside the timed part; rate before the sync in extra.rate_before_sync"},
	{Name: suite.BonnieRewrite, Unit: catalog.KiBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "rewrite", BonnieField: "rewrite",
		Doc: "bonnie++ rewrite: read each chunk, change it, write it back in place; syncfs timed"},
	{Name: suite.BonnieRead, Unit: catalog.KiBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "block read", BonnieField: "get_block",
		Doc: "bonnie++ block read, cold: drop caches, then read the file in 8 KiB read(2) calls"},
	{Name: suite.BonnieSeeks, Unit: catalog.SeeksPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "random seeks", BonnieField: "seeks",
		Doc: "bonnie++ random seeks, cold: 8192 seeks by 3 concurrent workers, each reading a chunk and rewriting 10 % of them; syncfs timed"},
	{Name: suite.BonnieSeqCreate, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "sequential create", BonnieField: "seq_create",
		Doc: "bonnie++ sequential create: empty files in name order; syncfs timed (extra.rate_before_sync without it)"},
	{Name: suite.BonnieSeqStat, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "sequential stat", BonnieField: "seq_stat",
		Doc: "bonnie++ sequential read: stat(2) each file in readdir order"},
	{Name: suite.BonnieSeqDelete, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "sequential delete", BonnieField: "seq_del",
		Doc: "bonnie++ sequential delete: unlink each file in readdir order; syncfs timed"},
	{Name: suite.BonnieRandCreate, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "random create", BonnieField: "ran_create",
		Doc: "bonnie++ random create: empty files in random order; syncfs timed"},
	{Name: suite.BonnieRandStat, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "random stat", BonnieField: "ran_stat",
		Doc: "bonnie++ random read: stat(2) each file in random order"},
	{Name: suite.BonnieRandDelete, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "random delete", BonnieField: "ran_del",
		Doc: "bonnie++ random delete: unlink each file in random order; syncfs timed"},
}

const title = "bonnie++'s tests (Pandora SD-card study)"

// Suite is the bonnie suite.
var Suite = suites.Suite{
	Name: Name, Rank: 20, Title: title,
	Tests:    suite.WithEntries(suite.Steps(Name), entries),
	Params:   suite.DefaultBonnie(),
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
