package verdict

import (
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// suiteVerdicts are the verdicts of the suites whose figures are not the observation matrix's
// concerns, in the report's order: each suite speaks in its own terms, by the same rule
// (TieRule). VerdictsFor asks a suite for its verdicts when any of its tests is in the run.
//
// A suite whose figures need their own test gives its own function here; the powercut suite's
// is powerLossVerdict (powerloss.go). Its figure is a share of cuts, often from one repetition
// of many cuts, where the U test over repetitions cannot tell (it needs 4 a side): a test on
// the cut counts belongs there. Such a function decides the tie itself: it sets Tied (the
// variants it cannot tell from Winner), Significant and Significance, and Words words the line.
var suiteVerdicts = []struct {
	suite    string
	verdicts func(r *results.Run, alpha float64) []Verdict
}{
	{catalog.SuiteBonnie, testVerdicts(catalog.SuiteBonnie)},
	{catalog.SuiteSmallFiles, testVerdicts(catalog.SuiteSmallFiles)},
	{catalog.SuiteRandIO, testVerdicts(catalog.SuiteRandIO)},
	{catalog.SuitePowerCut, func(r *results.Run, alpha float64) []Verdict {
		if !HasPowerCut(r) {
			return nil
		}
		return []Verdict{powerLossVerdict(r, alpha)}
	}},
}

// testVerdicts gives a suite one verdict per test, on the test's own headline figure (block
// write in KiB/s, files created per second, IOPS, ...), named by the test's title. A test
// that no variant has a figure for (bonnie++'s "+++++": too fast to time) has no verdict: the
// suite's table says why.
func testVerdicts(suite string) func(r *results.Run, alpha float64) []Verdict {
	return func(r *results.Run, alpha float64) []Verdict {
		var out []Verdict
		for _, test := range catalog.MustSuite(suite).Tests {
			t := EvaluateClean(r, suiteMetric(test), alpha)
			if len(t.Order) == 0 && len(t.Dropped) == 0 {
				continue
			}
			out = append(out, Pick(catalog.Get(test).Title, t, alpha))
		}
		return out
	}
}

// suiteMetric is a suite test's headline figure as results.json records it, in its own unit.
func suiteMetric(test string) Metric {
	c := catalog.Get(test)
	return Metric{Key: test, Title: c.Title + " (" + c.Unit + ")", Short: test, Label: c.Title, Unit: c.Unit,
		Better: c.Better, Quantity: c.Quantity, Tests: []string{test}, Combine: single(test, scaled(1))}
}
