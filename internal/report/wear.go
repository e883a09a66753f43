package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// DefaultCard is the card profile the flash-wear figures are rated against when neither the
// options nor the run name one: the flash model's middle-of-the-road SD card.
const DefaultCard = "sd-typical"

// writeTests are the bootlin tests that write data through the filesystem, whose LogicalBytes
// are the denominator of every amplification figure (WearRules names them).
var writeTests = []string{catalog.Write, catalog.ReadRemoveWrite, catalog.VideoWrite}

// WearRules is the flash-wear rule in words, for the report footer and the README. Keep it in
// step with wearMetric and lifetimeYears.
const WearRules = `Flash wear: for each repetition, the flash bytes the card model programmed (pages programmed × page size, ` +
	`garbage-collection copies included) while the traced block requests of write, read_remove_write and video_write were replayed through it, ` +
	`divided by the bytes those tests wrote through the filesystem; lower is better, rated like the other concerns. ` +
	`It is block amplification (device bytes ÷ filesystem bytes: journal, metadata, allocation) times the card's own write amplification ` +
	`(flash bytes ÷ device bytes: partial pages, AU merges, garbage collection). ` +
	`The card is the one named with --card, else the simulated card's own profile (--target simcard:PROFILE), else sd-typical. ` +
	`The replay of a repetition continues from its earlier tests (mkfs included) on a fresh card model. ` +
	`Lifetime: how many years the card lasts if these three tests ran once a day, from each test's lifetime_years (1 ÷ lifetime = Σ 1 ÷ lifetime of each test, since their erases add up); ` +
	`the median over the repetitions.`

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
	for _, t := range writeTests {
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
func ratioMetric(key, title, short, unit string, tests []string, get func(results.Measurement) (num, den float64, ok bool)) metric {
	return metric{key: key, title: title, short: short, unit: unit, tests: tests,
		better: catalog.LowerIsBetter, quantity: catalog.Amount,
		combine: func(by map[string]results.Measurement) (float64, bool) {
			n, d, ok := writeSums(by, tests, get)
			if !ok {
				return 0, false
			}
			return n / d, true
		}}
}

// wearMetric is the flash-wear concern for card: flash bytes programmed per byte the write
// tests wrote through the filesystem (WearRules).
func wearMetric(r *results.Run, card string) metric {
	m := ratioMetric("flash_wear", "flash wear on "+card+" (flash bytes programmed per byte written through the filesystem)",
		"wear", "x written", runWriteTests(r), func(m results.Measurement) (float64, float64, bool) {
			rp, ok := replayOf(m, card)
			if !ok || m.LogicalBytes == 0 {
				return 0, 0, false
			}
			return float64(rp.Flash.FlashBytesWritten), float64(m.LogicalBytes), true
		})
	m.label = "flash wear"
	return m
}

// cardWAMetric is the card's own write amplification over the write tests: flash bytes
// programmed per byte the device received.
func cardWAMetric(r *results.Run, card string) metric {
	return ratioMetric("card_wa_"+card, "write amplification inside "+card+" (write tests)",
		"card-wa", "x device", runWriteTests(r), func(m results.Measurement) (float64, float64, bool) {
			rp, ok := replayOf(m, card)
			if !ok {
				return 0, 0, false
			}
			return float64(rp.Flash.FlashBytesWritten), float64(rp.Flash.HostBytesWritten), true
		})
}

// blockAmpMetric is the block amplification over the write tests: device bytes written per
// byte written through the filesystem, as extra.block_amplification per test.
func blockAmpMetric(r *results.Run) metric {
	return ratioMetric("block_amplification", "block amplification (write tests)",
		"blk-amp", "x written", runWriteTests(r), func(m results.Measurement) (float64, float64, bool) {
			if m.Device == nil || m.LogicalBytes == 0 {
				return 0, 0, false
			}
			return float64(m.Device.WriteBytes), float64(m.LogicalBytes), true
		})
}

// lifetimeMetric is the card's lifetime in years if the write tests ran once a day. Each
// test's lifetime_years is endurance over its erases per day; erases of tests run on the same
// day add up, so the rates (1 ÷ years) add. A test that wrote nothing has lifetime 0 ("not
// applicable") and adds no wear. ok is false when none of them wore the card.
func lifetimeMetric(r *results.Run, card string) metric {
	tests := runWriteTests(r)
	return metric{key: "lifetime_" + card, title: "lifetime of " + card + " with the write tests once a day", short: "life",
		unit: "years", better: catalog.HigherIsBetter, quantity: catalog.Amount, tests: tests,
		combine: func(by map[string]results.Measurement) (float64, bool) {
			if len(tests) == 0 {
				return 0, false
			}
			rate := 0.0
			for _, t := range tests {
				m, found := by[t]
				if !found {
					return 0, false
				}
				rp, ok := replayOf(m, card)
				if !ok {
					return 0, false
				}
				if rp.LifetimeYears > 0 {
					rate += 1 / rp.LifetimeYears
				}
			}
			if rate == 0 {
				return 0, false
			}
			return 1 / rate, true
		}}
}

// replayedCards lists the card profiles any trace of r was replayed through, sorted.
func replayedCards(r *results.Run) []string {
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

// traced reports whether any measurement of r carries a block-request trace.
func traced(r *results.Run) bool {
	for _, m := range r.Measurements {
		if m.Trace != nil {
			return true
		}
	}
	return false
}

// matrixFor is the observation matrix's columns for r: the fixed concerns, then flash wear and
// card time on card when the run's traces were replayed through it (or it ran on that card).
func matrixFor(r *results.Run, card string) []metric {
	cols := slices.Clone(matrixMetrics)
	if slices.Contains(replayedCards(r), card) && len(runWriteTests(r)) > 0 {
		cols = append(cols, wearMetric(r, card))
	}
	if hasCardTime(r, card) {
		cols = append(cols, cardTimeMetric(r, card))
	}
	if present(r, mPowerLoss) {
		cols = append(cols, mPowerLoss)
	}
	return cols
}

// wearVerdict names the variant with the least flash wear on card, with its margin,
// significance and lifetime, or says why there is no such figure.
func wearVerdict(r *results.Run, card string, alpha float64) Verdict {
	const priority = "flash wear"
	alpha = defaultAlpha(alpha)
	if why, ok := r.Methods["trace"]; ok && strings.HasPrefix(why, "not recorded") {
		return Verdict{Priority: priority, Note: "not measured in this run: trace " + why}
	}
	if !traced(r) {
		return Verdict{Priority: priority, Note: "not measured in this run"}
	}
	cards := replayedCards(r)
	if !slices.Contains(cards, card) {
		have := "none"
		if len(cards) > 0 {
			have = strings.Join(cards, ", ")
		}
		return Verdict{Priority: priority, Note: fmt.Sprintf("not measured for card %s: this run's traces were replayed through %s", card, have)}
	}
	t := evaluate(r, wearMetric(r, card), alpha)
	v := pick(priority, t, alpha)
	if v.Winner == "" {
		v.Note = "no variant has a replayed write test (" + strings.Join(writeTests, ", ") + ") on " + card
		return v
	}
	life := evaluate(r, lifetimeMetric(r, card), alpha)
	if c, ok := life.cells[v.Winner]; ok {
		note := fmt.Sprintf("%s would last %s years with these write tests once a day", card, format(c.Summary.Median))
		if c.Summary.N > 1 && c.Summary.Max > c.Summary.Min {
			note += fmt.Sprintf(" (%s to %s)", format(c.Summary.Min), format(c.Summary.Max))
		}
		if len(v.Tied) > 0 {
			// No clear winner: the lifetimes of all the tied variants, not one of them.
			lo, hi := c.Summary.Median, c.Summary.Median
			for _, t := range v.Tied {
				if tc, ok := life.cells[t.Name]; ok {
					lo, hi = min(lo, tc.Summary.Median), max(hi, tc.Summary.Median)
				}
			}
			note = fmt.Sprintf("%s would last %s to %s years with these write tests once a day (medians of the tied variants)", card, format(lo), format(hi))
		}
		v.Note = note
		v.Detail = "Assumptions: " + r.Methods["lifetime"]
		if r.Methods["lifetime"] == "" {
			v.Detail = "Assumptions: see methods.lifetime in results.json."
		}
	}
	return v
}

// writeSizes sums, over the write tests of the non-warm-up successful repetitions, the write
// requests of each size bucket of each variant's traces; variants without any are left out.
func writeSizes(r *results.Run) []SizeRow {
	var out []SizeRow
	for _, v := range ranVariants(r) {
		by := map[uint64]uint64{}
		for _, m := range r.Measurements {
			if m.Variant != v.Name || m.Warmup || m.Status != results.OK || m.Trace == nil || !slices.Contains(writeTests, m.Test) {
				continue
			}
			for _, b := range m.Trace.Summary.Sizes {
				if b.Writes > 0 {
					by[b.Bytes] += b.Writes
				}
			}
		}
		if len(by) == 0 {
			continue
		}
		row := SizeRow{Label: v.Name}
		for size, n := range by {
			row.Buckets = append(row.Buckets, SizeCount{Bytes: size, Count: n})
		}
		sort.Slice(row.Buckets, func(i, j int) bool { return row.Buckets[i].Bytes < row.Buckets[j].Bytes })
		out = append(out, row)
	}
	return out
}

// cardRow is one variant's wear figures on every replayed card profile, for the HTML table.
type cardRow struct {
	Variant string
	Cells   []cardCell
}

type cardCell struct {
	WA, Wear, Life string
}

// cardTable evaluates in-card write amplification, wear and lifetime of every variant on every
// replayed profile: medians as text ("" when a variant has none).
func cardTable(r *results.Run, cards []string, alpha float64) []cardRow {
	type three struct{ wa, wear, life table }
	ts := make([]three, len(cards))
	for i, c := range cards {
		ts[i] = three{evaluate(r, cardWAMetric(r, c), alpha), evaluate(r, wearMetric(r, c), alpha), evaluate(r, lifetimeMetric(r, c), alpha)}
	}
	med := func(t table, v string) string {
		if c, ok := t.cells[v]; ok && !math.IsNaN(c.Summary.Median) {
			return format(c.Summary.Median)
		}
		return ""
	}
	var out []cardRow
	for _, v := range ranVariants(r) {
		row := cardRow{Variant: v.Name}
		any := false
		for _, t := range ts {
			c := cardCell{WA: med(t.wa, v.Name), Wear: med(t.wear, v.Name), Life: med(t.life, v.Name)}
			any = any || c.WA != "" || c.Wear != ""
			row.Cells = append(row.Cells, c)
		}
		if any {
			out = append(out, row)
		}
	}
	return out
}

// defaultAlpha returns alpha, or stats.DefaultAlpha when it is not set.
func defaultAlpha(alpha float64) float64 {
	if alpha <= 0 {
		return stats.DefaultAlpha
	}
	return alpha
}
