// Package randio is the randio suite: the jobs of the Raspberry Pi SD card test (fio, O_DIRECT, iodepth 1) and the SD Association's application classes (A1, A2) they check.
//
// The package is the whole suite: its tests (their catalog entries and how each runs, on the
// repetition the engine hands it: suites.Rep), the sizes of its [randio] table (Params), its
// verdicts (one per test), its table and the application classes it checks.
package randio

import (
	"fmt"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Name is the suite's name.
const Name = "randio"

// The suite's test names: the jobs of the Raspberry Pi SD card test (pibenchmarks, fio).
const (
	SeqWrite  = "randio_seq_write"
	RandWrite = "randio_rand_write"
	RandRead  = "randio_rand_read"
)

// tests are the suite's tests, in the order they run.
var tests = []suites.Test{
	{Test: catalog.Test{Name: SeqWrite, Unit: catalog.MBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "512 KiB sequential write",
		Doc: "sequential write of one preallocated file in 512 KiB O_DIRECT writes, iodepth 1, fsync timed (fio rw=write bs=512k direct=1 end_fsync=1); A1/A2 need >= 10 MB/s"},
		Run: suites.WithParams(Name, Default, seqWriteTest)},
	{Test: catalog.Test{Name: RandWrite, Unit: catalog.IOPS, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "4 KiB random write",
		Doc: "random 4 KiB O_DIRECT writes in that file, iodepth 1, for a fixed time (fio rw=randwrite bs=4k direct=1); A1 needs >= 500 IOPS, A2 >= 2000"},
		Needs: []string{SeqWrite}, Run: randomTest(RandWrite, true)},
	{Test: catalog.Test{Name: RandRead, Unit: catalog.IOPS, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "4 KiB random read",
		Doc: "random 4 KiB O_DIRECT reads of that file, iodepth 1, for a fixed time (fio rw=randread bs=4k direct=1); A1 needs >= 1500 IOPS, A2 >= 4000"},
		Needs: []string{SeqWrite}, Run: randomTest(RandRead, false)},
}

const title = "SD card application-class jobs (O_DIRECT, iodepth 1)"

// Suite is the randio suite.
var Suite = suites.Suite{
	Name: Name, Rank: 40, Title: title,
	Tests:    tests,
	Params:   Default(),
	Verdicts: verdict.PerTest(suites.NamesOf(tests)),
	Tables:   suites.RateTable(Name, title, suites.NamesOf(tests), classes),
}

func init() { suites.Register(Suite) }

// classes says, per variant, which SD application class (catalog.AppClasses: A1, A2) the
// medians of the randio tests meet (A2 implies A1).
func classes(r *results.Run) []string {
	tests := suites.NamesOf(tests)
	cls := catalog.AppClasses
	var out []string
	for _, v := range verdict.RanVariants(r) {
		pass := make([]bool, len(cls))
		for i := range pass {
			pass[i] = true
		}
		var missing []string
		for _, test := range tests {
			med, ok := verdict.Median(r.Values(v.Name, test))
			if !ok {
				missing = append(missing, test)
				continue
			}
			for i, c := range cls {
				pass[i] = pass[i] && med >= ClassMinimum(c, test)
			}
		}
		if len(missing) == len(tests) {
			continue
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("class %s: no class (no figure for %s)", v.Name, strings.Join(missing, ", ")))
			continue
		}
		out = append(out, "class "+v.Name+": "+classVerdict(cls, pass))
	}
	return out
}

// classVerdict says which classes passed: "A2 pass (and A1)" when the highest did (it implies
// the lower ones), else each class's pass or fail, lowest first ("A1 pass, A2 fail").
func classVerdict(cls []catalog.AppClass, pass []bool) string {
	last := len(cls) - 1
	if pass[last] {
		var lower []string
		for _, c := range cls[:last] {
			lower = append(lower, c.Name)
		}
		return fmt.Sprintf("%s pass (and %s)", cls[last].Name, strings.Join(lower, ", "))
	}
	var parts []string
	for i, c := range cls {
		word := "fail"
		if pass[i] {
			word = "pass"
		}
		parts = append(parts, c.Name+" "+word)
	}
	return strings.Join(parts, ", ")
}

// ClassMinimum is the minimum figure of a randio test for a class, in the test's unit.
func ClassMinimum(c catalog.AppClass, test string) float64 {
	switch test {
	case SeqWrite:
		return c.SeqMBps
	case RandWrite:
		return c.WriteIOPS
	default:
		return c.ReadIOPS
	}
}

// Params are the sizes of the randio tests, its [randio] table in the configuration and
// results.json's config.params.randio.
type Params struct {
	FileSize  uint64        `json:"file_size_bytes"` // bytes of the test file (capped to 40 % of the free space)
	SeqBlock  uint64        `json:"seq_block_bytes"` // bytes per sequential write (512 KiB)
	RandBlock uint64        `json:"rand_block_bytes"`
	Runtime   plan.Duration `json:"runtime"` // how long each random test runs
	MaxOps    int           `json:"max_ops"` // stop a random test after this many requests even before Runtime
	Seed      uint64        `json:"seed"`
	// Depth is the random tests' queue depth (0 or 1: one request at a time, pread/pwrite;
	// more: that many in flight, as fio's libaio iodepth; internal/iodepth).
	Depth int `json:"iodepth,omitempty"`
}

// Default are the SD application-class jobs' sizes (256 MiB file, 10 s per random job).
func Default() *Params {
	return &Params{FileSize: 256 << 20, SeqBlock: 512 << 10, RandBlock: 4 << 10,
		Runtime: plan.Duration{Duration: 10 * time.Second}, MaxOps: 1 << 20, Seed: 1}
}

// Check refuses sizes the randio tests could not run with.
func (p *Params) Check() error {
	if p.FileSize == 0 || p.SeqBlock == 0 || p.RandBlock == 0 || p.Runtime.Duration <= 0 || p.MaxOps < 1 {
		return fmt.Errorf("file_size_bytes, seq_block_bytes, rand_block_bytes, runtime and max_ops must be more than 0")
	}
	if p.Depth < 0 || p.Depth > 1024 {
		return fmt.Errorf("iodepth must be 0 or 1 (one request at a time) up to 1024, not %d", p.Depth)
	}
	return nil
}
