// Package bonnie is the bonnie suite: bonnie++'s tests, as the Pandora SD-card study (2012) ran them: block write, rewrite, read, random seeks, and sequential and random create, stat and delete.
//
// The package is the whole suite: its tests (their catalog entries and how each runs, on the
// repetition the engine hands it: suites.Rep), the sizes of its [bonnie] table (Params), its
// verdicts (one per test) and its table.
package bonnie

import (
	"context"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Name is the suite's name.
const Name = "bonnie"

// The suite's test names: bonnie++'s tests (Pandora SD-card study, 2012).
const (
	Write      = "bonnie_write"
	Rewrite    = "bonnie_rewrite"
	Read       = "bonnie_read"
	Seeks      = "bonnie_seeks"
	SeqCreate  = "bonnie_seq_create"
	SeqStat    = "bonnie_seq_stat"
	SeqDelete  = "bonnie_seq_delete"
	RandCreate = "bonnie_rand_create"
	RandStat   = "bonnie_rand_stat"
	RandDelete = "bonnie_rand_delete"
)

// tests are the suite's tests, in the order they run.
var tests = []suites.Test{
	{Test: catalog.Test{Name: Write, Unit: catalog.KiBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "block write", BonnieField: "put_block",
		Doc: "bonnie++ block write: one file (2 × RAM, capped to the device) written in 8 KiB write(2) calls, syncfs inside the timed part; rate before the sync in extra.rate_before_sync"},
		Run: run(rep.writeTest)},
	{Test: catalog.Test{Name: Rewrite, Unit: catalog.KiBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "rewrite", BonnieField: "rewrite",
		Doc: "bonnie++ rewrite: read each chunk, change it, write it back in place; syncfs timed"},
		Needs: []string{Write}, Run: run(rep.rewriteTest)},
	{Test: catalog.Test{Name: Read, Unit: catalog.KiBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "block read", BonnieField: "get_block",
		Doc: "bonnie++ block read, cold: drop caches, then read the file in 8 KiB read(2) calls"},
		Needs: []string{Write}, Run: run(rep.readTest)},
	{Test: catalog.Test{Name: Seeks, Unit: catalog.SeeksPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "random seeks", BonnieField: "seeks",
		Doc: "bonnie++ random seeks, cold: 8192 seeks by 3 concurrent workers, each reading a chunk and rewriting 10 % of them; syncfs timed"},
		Needs: []string{Write}, Run: run(rep.seekTest)},
	{Test: catalog.Test{Name: SeqCreate, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "sequential create", BonnieField: "seq_create",
		Doc: "bonnie++ sequential create: empty files in name order; syncfs timed (extra.rate_before_sync without it)"},
		Run: files(SeqCreate)},
	{Test: catalog.Test{Name: SeqStat, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "sequential stat", BonnieField: "seq_stat",
		Doc: "bonnie++ sequential read: stat(2) each file in readdir order"},
		Needs: []string{SeqCreate}, Run: files(SeqStat)},
	{Test: catalog.Test{Name: SeqDelete, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "sequential delete", BonnieField: "seq_del",
		Doc: "bonnie++ sequential delete: unlink each file in readdir order; syncfs timed"},
		Needs: []string{SeqCreate}, Run: files(SeqDelete)},
	{Test: catalog.Test{Name: RandCreate, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "random create", BonnieField: "ran_create",
		Doc: "bonnie++ random create: empty files in random order; syncfs timed"},
		Run: files(RandCreate)},
	{Test: catalog.Test{Name: RandStat, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "random stat", BonnieField: "ran_stat",
		Doc: "bonnie++ random read: stat(2) each file in random order"},
		Needs: []string{RandCreate}, Run: files(RandStat)},
	{Test: catalog.Test{Name: RandDelete, Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "random delete", BonnieField: "ran_del",
		Doc: "bonnie++ random delete: unlink each file in random order; syncfs timed"},
		Needs: []string{RandCreate}, Run: files(RandDelete)},
}

const title = "bonnie++'s tests (Pandora SD-card study)"

// Suite is the bonnie suite.
var Suite = suites.Suite{
	Name: Name, Rank: 20, Title: title,
	Tests:    tests,
	Params:   Default(),
	Verdicts: verdict.PerTest(suites.NamesOf(tests)),
	Tables:   suites.RateTable(Name, title, suites.NamesOf(tests), nil),
}

func init() { suites.Register(Suite) }

// rep is the repetition as the bonnie tests use it: the engine's, with the run's sizes.
type rep struct {
	suites.Rep
	p *Params
}

// run is the Run of a test of this package: it runs on the engine's repetition with the run's
// sizes of the suite.
func run(f func(rep, context.Context) ([]results.Measurement, error)) func(context.Context, suites.Rep) ([]results.Measurement, error) {
	return suites.WithParams(Name, Default, func(ctx context.Context, r suites.Rep, p *Params) ([]results.Measurement, error) {
		return f(rep{r, p}, ctx)
	})
}

// files is one of the six create, stat and delete tests (createTest).
func files(test string) func(context.Context, suites.Rep) ([]results.Measurement, error) {
	return run(func(r rep, ctx context.Context) ([]results.Measurement, error) { return r.createTest(ctx, test) })
}
