// Package powercut is the powercut suite: power cuts on the simulated card, and what each
// filesystem keeps of what it acknowledged. Its headline is the share of cuts a filesystem
// came through whole; its verdict and table say whose fault each broken promise was.
//
// The package is the whole suite: its test (its catalog entry and how it runs, on the
// repetition the engine hands it: suites.Rep), the sizes of its [powercut] table (Params), its
// verdict and its table. CutChecker, how a filesystem is checked after a cut, serves the
// reference cross-check too.
package powercut

import (
	"fmt"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Test is the suite's one test.
const Test = "powercut"

// entry is the powercut test's catalog entry.
var entry = catalog.Test{Name: Test, Unit: catalog.Percent, Better: catalog.HigherIsBetter, Quantity: catalog.Amount, Title: "power-loss safety",
	Doc:    "a seeded workload of fsync'ed creates, appends, overwrites, atomic renames and deletes on the simulated card, its request stream recorded; then for each of --cuts power cuts (before and after flushes, and at random) the card after the cut by its profile's power-loss model: mount (recovery time), verify what was acknowledged, fsck, repair; headline: % of cuts the filesystem came through whole (mounted without repair, fsck clean, no acknowledged data lost)",
	Figure: &catalog.Figure{Key: "powerloss", Title: "power-loss safety (% of cuts survived whole)", Short: "pwr-safe", Label: "power-loss safety", Unit: catalog.Percent, Better: catalog.HigherIsBetter, Quantity: catalog.Amount, From: catalog.FromValue, Scale: 1}}

// Suite is the powercut suite.
var Suite = suites.Suite{
	Name: plan.PowerCutSuite, Rank: 50,
	Title:  "power cuts on the simulated card: what each filesystem keeps of what it acknowledged",
	Tests:  []suites.Test{{Test: entry, Run: suites.WithParams(plan.PowerCutSuite, Default, powerCut)}},
	Params: Default(),
	Verdicts: func(r *results.Run, alpha float64) []verdict.Verdict {
		if !hasPowerCut(r) {
			return nil
		}
		return []verdict.Verdict{powerLossVerdict(r, alpha)}
	},
	Tables: tables,
	Rules: func(r *results.Run) string {
		if !hasPowerCut(r) {
			return ""
		}
		return PowerLossRules
	},
	Matrix:   []verdict.Metric{mPowerLoss},
	Compared: []verdict.Metric{mAckLoss},
}

func init() { suites.Register(Suite) }

// tables is the power-cut detail as the report draws it.
func tables(r *results.Run) []suites.Table {
	d := PowerCutDetail(r)
	if d == nil {
		return nil
	}
	t := suites.Table{ID: "powercut", Title: "Power cuts", Caption: "Card model " + d.Model + ". " + d.Caption + ".",
		Text: "power cuts (card model " + d.Model + "): " + d.Caption + ":", Rows: d.Rows}
	for _, h := range d.Header {
		t.Columns = append(t.Columns, suites.Column{Head: h})
	}
	return []suites.Table{t}
}

// Params are the sizes of the powercut test, its [powercut] table in the configuration (and
// --cuts, --fault merge-loss) and results.json's config.params.powercut.
type Params struct {
	Cuts int    `json:"cuts"` // power cuts per variant and repetition (--cuts; default 50)
	Ops  int    `json:"ops"`  // operations of the workload (default 300)
	Seed uint64 `json:"seed"` // seeds the workload, the cut points and what each cut loses
	// MergeLoss adds the merge-loss fault to a card profile that does not have it (--fault
	// merge-loss): a cut during an AU merge damages that AU.
	MergeLoss bool `json:"merge_loss,omitempty"`
}

// Default are the powercut test's sizes.
func Default() *Params { return &Params{Cuts: 50, Ops: 300, Seed: 1} }

// Check refuses a powercut run without cuts or work.
func (p *Params) Check() error {
	if p.Cuts < 1 || p.Ops < 1 {
		return fmt.Errorf("cuts and ops must be at least 1 (cuts %d, ops %d)", p.Cuts, p.Ops)
	}
	return nil
}
