package verdict

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// DefaultCard is the card profile the flash-wear figures are rated against when neither the
// options nor the run name one: the flash model's middle-of-the-road SD card.
const DefaultCard = "sd-typical"

// WriteTests are the bootlin tests that write data through the filesystem, whose LogicalBytes
// are the denominator of every amplification figure (WearRules names them).
var WriteTests = catalog.WriteTests

// WearRules is the flash-wear rule in words, for the report footer and the README. Keep it in
// step with wearMetric and lifetimeYears.
const WearRules = `Flash wear: for each repetition, the flash bytes the card model programmed (pages programmed × page size, ` +
	`garbage-collection copies included) while the traced block requests of write, read_remove_write and video_write were replayed through it, ` +
	`divided by the bytes those tests wrote through the filesystem; lower is better, rated like the other concerns. ` +
	`It is block amplification (device bytes ÷ filesystem bytes: journal, metadata, allocation) times the card's own write amplification ` +
	`(flash bytes ÷ device bytes: partial pages, AU merges, garbage collection). ` +
	`The card is the one named with --card, else the simulated card's own profile (--target simcard:PROFILE), else sd-typical. ` +
	`The replay of a repetition continues from its earlier tests (mkfs included) on a fresh card model. ` +
	`Lifetime: how many years the card lasts if these three tests ran once a day, one after the other as one day: the card model runs their block requests day after day ` +
	`until the card's first error (day_lifetime_years of the last of them; methods.lifetime says how); the median over the repetitions.`

// CardFor returns the card profile whose replay the wear figures use: card when set, else the
// one the run recorded (results.Target.CardProfile: the simulated card's own, however it was
// reached), else DefaultCard.
func CardFor(r *results.Run, card string) string {
	switch {
	case card != "":
		return card
	case r.Target.CardProfile != "":
		return r.Target.CardProfile
	}
	return DefaultCard
}

// runWriteTests are the write tests that appear in r (a run may have selected only some of
// them); a repetition needs all of them to give a wear figure, so that a failed test does not
// make a variant look gentler on the flash.
func runWriteTests(r *results.Run) []string {
	var out []string
	for _, t := range WriteTests {
		for _, m := range r.Measurements {
			if m.Test == t {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// writeSums adds up, over the tests of one repetition, what the write tests did. ok is false
// when a test is missing or has no figure for what get reads.
func writeSums(by map[string]results.Measurement, tests []string, get func(results.Measurement) (num, den float64, ok bool)) (num, den float64, ok bool) {
	if len(tests) == 0 {
		return 0, 0, false
	}
	for _, t := range tests {
		m, found := by[t]
		if !found {
			return 0, 0, false
		}
		n, d, ok := get(m)
		if !ok {
			return 0, 0, false
		}
		num += n
		den += d
	}
	return num, den, den > 0
}

// replayOf returns a measurement's replay through card, if its trace has one.
func replayOf(m results.Measurement, card string) (results.Replay, bool) {
	if m.Trace == nil {
		return results.Replay{}, false
	}
	rp, ok := m.Trace.Replay[card]
	return rp, ok && rp.Flash != nil
}

// ratioMetric is a metric whose sample per repetition is Σnum ÷ Σden over the write tests: an
// amplification, lower is better, counted in bytes (it compares across machines).
func ratioMetric(key, title, short, unit string, tests []string, get func(results.Measurement) (num, den float64, ok bool)) Metric {
	return Metric{Key: key, Title: title, Short: short, Unit: unit, Tests: tests,
		Better: catalog.LowerIsBetter, Quantity: catalog.Amount,
		Combine: func(by map[string]results.Measurement) (float64, bool) {
			n, d, ok := writeSums(by, tests, get)
			if !ok {
				return 0, false
			}
			return n / d, true
		}}
}

// WearMetric is the flash-wear concern for card: flash bytes programmed per byte the write
// tests wrote through the filesystem (WearRules).
func WearMetric(r *results.Run, card string) Metric {
	m := ratioMetric("flash_wear", "flash wear on "+card+" (flash bytes programmed per byte written through the filesystem)",
		"wear", "x written", runWriteTests(r), func(m results.Measurement) (float64, float64, bool) {
			rp, ok := replayOf(m, card)
			if !ok || m.LogicalBytes == 0 {
				return 0, 0, false
			}
			return float64(rp.Flash.FlashBytesWritten), float64(m.LogicalBytes), true
		})
	m.Label = "flash wear"
	return m
}

// CardWAMetric is the card's own write amplification over the write tests: flash bytes
// programmed per byte the device received.
func CardWAMetric(r *results.Run, card string) Metric {
	return ratioMetric("card_wa_"+card, "write amplification inside "+card+" (write tests)",
		"card-wa", "x device", runWriteTests(r), func(m results.Measurement) (float64, float64, bool) {
			rp, ok := replayOf(m, card)
			if !ok {
				return 0, 0, false
			}
			return float64(rp.Flash.FlashBytesWritten), float64(rp.Flash.HostBytesWritten), true
		})
}

// BlockAmpMetric is the block amplification over the write tests: device bytes written per
// byte written through the filesystem, as extra.block_amplification per test.
func BlockAmpMetric(r *results.Run) Metric {
	return ratioMetric("block_amplification", "block amplification (write tests)",
		"blk-amp", "x written", runWriteTests(r), func(m results.Measurement) (float64, float64, bool) {
			if m.Device == nil || m.LogicalBytes == 0 {
				return 0, 0, false
			}
			return float64(m.Device.WriteBytes), float64(m.LogicalBytes), true
		})
}

// LifetimeMetric is the card's lifetime in years if the write tests ran once a day: the
// day_lifetime_years of the repetition's last write test, which covers the write tests up to it
// run one after the other as one day (the card model runs them to its first error). Results
// written before that figure existed have only each test's lifetime_years: their rates
// (1 ÷ years) are added, as the erases of tests run on the same day add up. A test that wrote
// nothing has lifetime 0 ("not applicable") and adds no wear. ok is false when none of them
// wore the card.
func LifetimeMetric(r *results.Run, card string) Metric {
	tests := runWriteTests(r)
	return Metric{Key: "lifetime_" + card, Title: "lifetime of " + card + " with the write tests once a day", Short: "life",
		Unit: "years", Better: catalog.HigherIsBetter, Quantity: catalog.Amount, Tests: tests,
		Combine: func(by map[string]results.Measurement) (float64, bool) {
			if len(tests) == 0 {
				return 0, false
			}
			rate, day := 0.0, 0.0
			for _, t := range tests {
				m, found := by[t]
				if !found {
					return 0, false
				}
				rp, ok := replayOf(m, card)
				if !ok {
					return 0, false
				}
				if rp.DayLifetimeYears > 0 {
					day = rp.DayLifetimeYears
				}
				if rp.LifetimeYears > 0 {
					rate += 1 / rp.LifetimeYears
				}
			}
			switch {
			case day > 0:
				return day, true
			case rate > 0:
				return 1 / rate, true
			}
			return 0, false
		}}
}

// ReplayedCards lists the card profiles any trace of r was replayed through, sorted.
func ReplayedCards(r *results.Run) []string {
	seen := map[string]bool{}
	for _, m := range r.Measurements {
		if m.Trace != nil {
			for name, rp := range m.Trace.Replay {
				if rp.Flash != nil {
					seen[name] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Traced reports whether any measurement of r carries a block-request trace.
func Traced(r *results.Run) bool {
	for _, m := range r.Measurements {
		if m.Trace != nil {
			return true
		}
	}
	return false
}

// MatrixFor is the observation matrix's columns for r: the fixed concerns, then flash wear and
// card time on card when the run's traces were replayed through it (or it ran on that card),
// then the figures suites add (Suite.Matrix) that r has.
func MatrixFor(r *results.Run, card string, suites []Suite) []Metric {
	cols := slices.Clone(matrixMetrics)
	if slices.Contains(ReplayedCards(r), card) && len(runWriteTests(r)) > 0 {
		cols = append(cols, WearMetric(r, card))
	}
	if hasCardTime(r, card) {
		cols = append(cols, cardTimeMetric(r, card))
	}
	for _, s := range suites {
		for _, m := range s.Matrix {
			if Present(r, m) {
				cols = append(cols, m)
			}
		}
	}
	return cols
}

// wearVerdict names the variant with the least flash wear on card, with its margin,
// Significance and lifetime, or says why there is no such figure.
func wearVerdict(r *results.Run, card string, alpha float64) Verdict {
	const priority = "flash wear"
	alpha = DefaultAlpha(alpha)
	if why, ok := r.Methods["trace"]; ok && strings.HasPrefix(why, "not recorded") {
		return Verdict{Priority: priority, Note: "not measured in this run: trace " + why}
	}
	if !Traced(r) {
		return Verdict{Priority: priority, Note: "not measured in this run"}
	}
	cards := ReplayedCards(r)
	if !slices.Contains(cards, card) {
		have := "none"
		if len(cards) > 0 {
			have = strings.Join(cards, ", ")
		}
		return Verdict{Priority: priority, Note: fmt.Sprintf("not measured for card %s: this run's traces were replayed through %s", card, have)}
	}
	t := Evaluate(r, WearMetric(r, card), alpha)
	v := Pick(priority, t, alpha)
	if v.Winner == "" {
		v.Note = "no variant has a replayed write test (" + strings.Join(WriteTests, ", ") + ") on " + card
		return v
	}
	life := Evaluate(r, LifetimeMetric(r, card), alpha)
	if c, ok := life.Cells[v.Winner]; ok {
		note := fmt.Sprintf("%s would last %s years with these write tests once a day", card, figure.Format(c.Summary.Median))
		if c.Summary.N > 1 && c.Summary.Max > c.Summary.Min {
			note += fmt.Sprintf(" (%s to %s)", figure.Format(c.Summary.Min), figure.Format(c.Summary.Max))
		}
		if len(v.Tied) > 0 {
			// No clear winner: the lifetimes of all the tied variants, not one of them.
			lo, hi := c.Summary.Median, c.Summary.Median
			for _, t := range v.Tied {
				if tc, ok := life.Cells[t.Name]; ok {
					lo, hi = min(lo, tc.Summary.Median), max(hi, tc.Summary.Median)
				}
			}
			note = fmt.Sprintf("%s would last %s to %s years with these write tests once a day (medians of the tied variants)", card, figure.Format(lo), figure.Format(hi))
		}
		v.Note = note
		v.Detail = "Assumptions: " + r.Methods["lifetime"]
		if r.Methods["lifetime"] == "" {
			v.Detail = "Assumptions: see methods.lifetime in results.json."
		}
	}
	return v
}

// DefaultAlpha returns alpha, or stats.DefaultAlpha when it is not set.
func DefaultAlpha(alpha float64) float64 {
	if alpha <= 0 {
		return stats.DefaultAlpha
	}
	return alpha
}
