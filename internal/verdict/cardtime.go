package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
)

// CardTimeRules is the card-time rule in words, for the report footer and the README. Keep it
// in step with cardTimeMetric.
const CardTimeRules = `Card time: for each repetition, how long the card model was busy (reading, programming, ` +
	`erasing, merging allocation units) with the block requests of write, read_remove_write and video_write, in seconds. ` +
	`It is computed from the traced request stream alone, on the card profile named for flash wear, ` +
	`so a busy host cannot change it: where the wall-clock write figures cannot conclude, card time still can. ` +
	`On a simulated card without a trace, the live card's own busy time is used. Lower is better.`

// cardBusyNs is the modelled busy time of one measurement on card: its trace's replay through
// card, or, without one, the live simulated card's own counters when the run's card is card.
func cardBusyNs(r *results.Run, m results.Measurement, card string) (uint64, bool) {
	// A zero is a file written before card times were recorded, not an idle card.
	if rp, ok := replayOf(m, card); ok && rp.Flash.BusyNs > 0 {
		return rp.Flash.BusyNs, true
	}
	if m.Flash != nil && m.Flash.BusyNs > 0 && r.Target.SimulatedCard() && r.Target.CardProfile == card {
		return m.Flash.BusyNs, true
	}
	return 0, false
}

// cardTimeMetric is the card time of the write tests on card, in seconds (CardTimeRules). It
// is counted, not timed: Amount, so busy repetitions and guest rows take part.
func cardTimeMetric(r *results.Run, card string) Metric {
	tests := runWriteTests(r)
	return Metric{Key: "card_time", Title: "card time of the write tests on " + card + " (modelled from the requests)",
		Short: "card", Label: "card time", Unit: "s", Better: catalog.LowerIsBetter, Quantity: catalog.Amount, Tests: tests,
		Combine: func(by map[string]results.Measurement) (float64, bool) {
			if len(tests) == 0 {
				return 0, false
			}
			var ns uint64
			for _, t := range tests {
				m, found := by[t]
				if !found {
					return 0, false
				}
				n, ok := cardBusyNs(r, m, card)
				if !ok {
					return 0, false
				}
				ns += n
			}
			return float64(ns) / 1e9, ns > 0
		}}
}

// hasCardTime reports whether any write test of r has a card time on card.
func hasCardTime(r *results.Run, card string) bool {
	for _, m := range r.Measurements {
		if m.Status != results.OK || !isWriteTest(m.Test) {
			continue
		}
		if _, ok := cardBusyNs(r, m, card); ok {
			return true
		}
	}
	return false
}

func isWriteTest(test string) bool { return slices.Contains(WriteTests, test) }

// cardTimeVerdict names the variant whose write tests keep card busy the shortest time.
func cardTimeVerdict(r *results.Run, card string, alpha float64) Verdict {
	const priority = "writes on the card"
	if !hasCardTime(r, card) {
		return Verdict{Priority: priority, Note: "not measured in this run (no traced write test on " + card + ")"}
	}
	v := Pick(priority, Evaluate(r, cardTimeMetric(r, card), alpha), alpha)
	if v.Winner != "" {
		note := "modelled on " + card + " from the requests: a busy host does not change it"
		if v.Note != "" {
			note = v.Note + "; " + note
		}
		v.Note = note
	}
	return v
}

// ServerNote says, for a run on a simulated card, when the card's server could not keep up
// with its model: replies that left after the card would have completed them make the
// wall-clock figures slower than the card; card time is not affected. "" when it kept up.
func ServerNote(r *results.Run) string {
	var reqs, late, lateNs uint64
	tests := map[string]bool{}
	for _, m := range r.Measurements {
		if m.Flash == nil || m.Flash.Server == nil {
			continue
		}
		s := m.Flash.Server
		reqs += s.Requests
		late += s.LateRequests
		lateNs += s.LateNs
		// Late by more than a hundredth of the card's own time: the test's wall clock is off
		// by more than the noise fsbench reports elsewhere.
		if s.LateNs*100 > m.Flash.BusyNs && s.LateRequests > 0 {
			tests[m.Test] = true
		}
	}
	if late == 0 || len(tests) == 0 {
		return ""
	}
	names := make([]string, 0, len(tests))
	for _, t := range catalog.Tests() {
		if tests[t.Name] {
			names = append(names, t.Name)
		}
	}
	return fmt.Sprintf("the simulated card's server replied late to %d of %d requests (%s s in all; late by more than 1 %% of the card's time in %s): "+
		"the host could not keep up with the card model, so those tests' wall-clock figures are slower than the card would be; "+
		"card times are not affected", late, reqs, figure.Format(float64(lateNs)/1e9), strings.Join(names, ", "))
}
