// Package randio is the randio suite: the jobs of the Raspberry Pi SD card test (fio, O_DIRECT, iodepth 1) and the SD Association's application classes (A1, A2) they check.
//
// The engine (internal/suite) still runs its tests; this package declares the rest: the tests'
// catalog entries, the sizes of its [randio] table, its verdicts (one per test) and its table.
package randio

import (
	"fmt"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Name is the suite's name.
const Name = "randio"

// entries are the suite's tests' catalog entries, in the order they run.
var entries = []catalog.Test{
	{Name: suite.RandSeqWrite, Unit: catalog.MBps, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "512 KiB sequential write",
		Doc: "sequential write of one preallocated file in 512 KiB O_DIRECT writes, iodepth 1, fsync timed (fio rw=write bs=512k direct=1 end_fsync=1); A1/A2 need >= 10 MB/s"},
	{Name: suite.RandWrite4K, Unit: catalog.IOPS, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "4 KiB random write",
		Doc: "random 4 KiB O_DIRECT writes in that file, iodepth 1, for a fixed time (fio rw=randwrite bs=4k direct=1); A1 needs >= 500 IOPS, A2 >= 2000"},
	{Name: suite.RandRead4K, Unit: catalog.IOPS, Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Title: "4 KiB random read",
		Doc: "random 4 KiB O_DIRECT reads of that file, iodepth 1, for a fixed time (fio rw=randread bs=4k direct=1); A1 needs >= 1500 IOPS, A2 >= 4000"},
}

const title = "SD card application-class jobs (O_DIRECT, iodepth 1)"

// Suite is the randio suite.
var Suite = suites.Suite{
	Name: Name, Rank: 40, Title: title,
	Tests:    suite.WithEntries(suite.Steps(Name), entries),
	Params:   suite.DefaultRandio(),
	Verdicts: verdict.PerTest(names()),
	Tables:   suites.RateTable(Name, title, names(), classes),
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

// classes says, per variant, which SD application class (suite.AppClasses: A1, A2) the
// medians of the randio tests meet (A2 implies A1).
func classes(r *results.Run) []string {
	tests := names()
	cls := suite.AppClasses
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
				pass[i] = pass[i] && med >= suite.ClassMinimum(c, test)
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
func classVerdict(cls []suite.AppClass, pass []bool) string {
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
