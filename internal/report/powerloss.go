package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// mPowerLoss is the power-loss safety concern: the share of power cuts a variant came through
// whole (mounted without repair, fsck clean, nothing acknowledged lost).
var mPowerLoss = func() metric {
	m := testMetric(catalog.PowerCut)
	// At the same share of whole cuts, the variant that broke fewer promises (acknowledged
	// data lost, torn renames) is the safer one.
	m.tiebreak = func(r *results.Run, variant string) float64 {
		cuts, ackCuts, _, _, ok := powerCutTotals(r, variant)
		if !ok || cuts == 0 {
			return 1
		}
		return float64(ackCuts) / float64(cuts)
	}
	return m
}()

// PowerLossRules explains the power-loss concern, for the report footer.
const PowerLossRules = `Power-loss safety: the share of power cuts of the simulated card after which the filesystem ` +
	`mounted without repair, its checker found it clean, and nothing it had acknowledged (fsync, fdatasync, syncfs) ` +
	`was lost or corrupted; the cuts are made on the card's recorded request stream by its profile's power-loss model ` +
	`(volatile cache, torn page, merge loss). Losing acknowledged data is the failure that matters: the verdict names ` +
	`every variant that did, with its 95 % Wilson interval over the cuts. Unacknowledged work lost is expected and not counted.`

// hasPowerCut reports whether the run has powercut figures.
func hasPowerCut(r *results.Run) bool {
	for _, m := range r.Measurements {
		if m.PowerCut != nil {
			return true
		}
	}
	return false
}

// powerCutTotals sums a variant's repetitions of the powercut test.
func powerCutTotals(r *results.Run, variant string) (cuts, ackCuts, acked, torn int, ok bool) {
	for _, m := range r.Cell(variant, catalog.PowerCut) {
		if m.PowerCut == nil || m.Warmup {
			continue
		}
		p := m.PowerCut
		ok = true
		cuts += p.Cuts
		ackCuts += p.AckLossCuts.Count
		acked += p.AckedLost + p.AckedCorrupt + p.Resurrected
		torn += p.TornRenames
	}
	return
}

// powerLossVerdict names the variant that came through the most cuts whole, and every variant
// that lost acknowledged data.
func powerLossVerdict(r *results.Run, alpha float64) Verdict {
	v := pick("power-loss safety", evaluate(r, mPowerLoss, alpha), alpha)
	if v.Winner == "" {
		return v
	}
	var losers []string
	for _, rv := range ranVariants(r) {
		cuts, ackCuts, acked, torn, ok := powerCutTotals(r, rv.Name)
		if !ok || ackCuts+torn == 0 {
			continue
		}
		p := proportionOf(ackCuts, cuts)
		losers = append(losers, fmt.Sprintf("%s lost acknowledged data in %d of %d cuts (%s; %d files, %d torn renames)",
			rv.Name, ackCuts, cuts, p, acked, torn))
	}
	note := "no variant lost acknowledged data"
	if len(losers) > 0 {
		note = strings.Join(losers, "; ")
	}
	if v.Note != "" {
		note = v.Note + "; " + note
	}
	v.Note = note
	return v
}

// proportionOf writes k of n as a percentage with its 95 % Wilson interval.
func proportionOf(k, n int) string {
	lo, hi := stats.Wilson(k, n)
	return fmt.Sprintf("%s %%, 95 %% CI %s-%s %%", format(100*float64(k)/float64(max(n, 1))), format(100*lo), format(100*hi))
}

// mAckLoss is, per repetition, the share of power cuts that lost or corrupted acknowledged
// data (or tore an atomic rename): compare's regression that needs no significance.
var mAckLoss = metric{key: "acked_loss", title: "power cuts losing acknowledged data", short: "ack-loss", unit: catalog.Percent,
	better: catalog.LowerIsBetter, quantity: catalog.Amount, tests: []string{catalog.PowerCut},
	combine: single(catalog.PowerCut, func(m results.Measurement) (float64, bool) {
		if m.PowerCut == nil || m.PowerCut.Cuts == 0 {
			return 0, false
		}
		return m.PowerCut.AckLossCuts.Pct, true
	})}

// ackLossRate is the share of a variant's cuts, over all its repetitions, that lost
// acknowledged data or tore a rename.
func ackLossRate(r *results.Run, variant string) float64 {
	cuts, ackCuts, _, _, ok := powerCutTotals(r, variant)
	if !ok || cuts == 0 {
		return 0
	}
	return float64(ackCuts) / float64(cuts)
}

// powerCutTable is the power-cut figures of every variant, summed over its repetitions: the
// detail behind the matrix's power-loss column.
type powerCutTable struct {
	Model  string // the card's power-loss model, in words
	Header []string
	Rows   [][]string
}

// powerCutDetail builds the table; nil when the run has no powercut figures.
func powerCutDetail(r *results.Run) *powerCutTable {
	if !hasPowerCut(r) {
		return nil
	}
	t := &powerCutTable{Header: []string{"variant", "cuts", "whole %", "mounted %", "fsck clean %", "unrecoverable %",
		"promise broken", "ack'd lost", "ack'd corrupt", "torn renames", "deletes undone", "recovery p50 / max s", "unsynced lost p50 / max s", "leaked blocks"}}
	for _, v := range ranVariants(r) {
		var sum results.PowerCut
		var p50, p50u []float64
		n := 0
		for _, m := range r.Cell(v.Name, catalog.PowerCut) {
			p := m.PowerCut
			if p == nil || m.Warmup {
				continue
			}
			n++
			if t.Model == "" {
				t.Model = modelWords(p)
			}
			sum.Cuts += p.Cuts
			sum.Safe.Count += p.Safe.Count
			sum.MountWithoutRepair.Count += p.MountWithoutRepair.Count
			sum.FsckClean.Count += p.FsckClean.Count
			sum.Unrecoverable.Count += p.Unrecoverable.Count
			sum.AckLossCuts.Count += p.AckLossCuts.Count
			sum.AckedLost += p.AckedLost
			sum.AckedCorrupt += p.AckedCorrupt
			sum.TornRenames += p.TornRenames
			sum.Resurrected += p.Resurrected
			sum.LeakedBlocks += p.LeakedBlocks
			sum.LeakedCuts += p.LeakedCuts
			sum.RecoveryMaxSeconds = max(sum.RecoveryMaxSeconds, p.RecoveryMaxSeconds)
			sum.UnsyncedMaxSeconds = max(sum.UnsyncedMaxSeconds, p.UnsyncedMaxSeconds)
			p50 = append(p50, p.RecoveryP50Seconds)
			p50u = append(p50u, p.UnsyncedP50Seconds)
		}
		if n == 0 {
			continue
		}
		share := func(k int) string {
			lo, hi := stats.Wilson(k, sum.Cuts)
			return fmt.Sprintf("%s (%s-%s)", format(100*float64(k)/float64(max(sum.Cuts, 1))), format(100*lo), format(100*hi))
		}
		leaked := "n/a"
		if sum.LeakedCuts > 0 {
			leaked = fmt.Sprint(sum.LeakedBlocks)
		}
		rec, _ := median(p50)
		uns, _ := median(p50u)
		t.Rows = append(t.Rows, []string{v.Name, fmt.Sprint(sum.Cuts), share(sum.Safe.Count), share(sum.MountWithoutRepair.Count),
			share(sum.FsckClean.Count), share(sum.Unrecoverable.Count), fmt.Sprintf("%d of %d", sum.AckLossCuts.Count, sum.Cuts),
			fmt.Sprint(sum.AckedLost), fmt.Sprint(sum.AckedCorrupt), fmt.Sprint(sum.TornRenames), fmt.Sprint(sum.Resurrected),
			format(rec) + " / " + format(sum.RecoveryMaxSeconds), format(uns) + " / " + format(sum.UnsyncedMaxSeconds), leaked})
	}
	return t
}

// modelWords names the rules of a power-loss model.
func modelWords(p *results.PowerCut) string {
	var rules []string
	if p.VolatileCache {
		rules = append(rules, "volatile cache")
	}
	if p.TornPage {
		rules = append(rules, "torn page")
	}
	if p.MergeLoss {
		rules = append(rules, "merge loss")
	}
	if len(rules) == 0 {
		return p.Profile + ": loses nothing it received"
	}
	return p.Profile + ": " + strings.Join(rules, ", ")
}

// writePowerCutTable prints the power-cut detail in the terminal summary.
func writePowerCutTable(w io.Writer, r *results.Run) {
	t := powerCutDetail(r)
	if t == nil {
		return
	}
	fmt.Fprintf(w, "\npower cuts (card model %s): %% of the cuts (95 %% Wilson interval) the filesystem came through whole, mounted without repair, checked clean, could not be repaired; acknowledged files lost or corrupted over all cuts:\n", t.Model)
	writeTableLeft(w, append([][]string{t.Header}, t.Rows...), 1, func(_, _ int, s string) string { return s })
}
