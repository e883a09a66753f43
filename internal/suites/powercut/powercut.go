// Package powercut is the powercut suite: power cuts on the simulated card, and what each
// filesystem keeps of what it acknowledged. Its headline is the share of cuts a filesystem
// came through whole; its verdict and table say whose fault each broken promise was.
//
// The engine (internal/suite) still runs its test; this package declares the rest.
package powercut

import (
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// entry is the powercut test's catalog entry.
var entry = catalog.Test{Name: suite.PowerCut, Unit: catalog.Percent, Better: catalog.HigherIsBetter, Quantity: catalog.Amount, Title: "power-loss safety",
	Doc:    "a seeded workload of fsync'ed creates, appends, overwrites, atomic renames and deletes on the simulated card, its request stream recorded; then for each of --cuts power cuts (before and after flushes, and at random) the card after the cut by its profile's power-loss model: mount (recovery time), verify what was acknowledged, fsck, repair; headline: % of cuts the filesystem came through whole (mounted without repair, fsck clean, no acknowledged data lost)",
	Figure: &catalog.Figure{Key: "powerloss", Title: "power-loss safety (% of cuts survived whole)", Short: "pwr-safe", Label: "power-loss safety", Unit: catalog.Percent, Better: catalog.HigherIsBetter, Quantity: catalog.Amount, From: catalog.FromValue, Scale: 1}}

// Suite is the powercut suite.
var Suite = suites.Suite{
	Name: plan.PowerCutSuite, Rank: 50,
	Title:  "power cuts on the simulated card: what each filesystem keeps of what it acknowledged",
	Tests:  suite.WithEntries(suite.Steps(plan.PowerCutSuite), []catalog.Test{entry}),
	Params: suite.DefaultPowerCut(),
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
