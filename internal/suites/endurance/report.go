package endurance

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/endurance"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// priority is the verdict's line.
const priority = "card lifetime"

// cards are every card r ran, by variant (in the run's order), each variant's in repetition order.
func cards(r *results.Run) (variants []string, by map[string][]*results.Endurance) {
	by = map[string][]*results.Endurance{}
	for _, v := range verdict.RanVariants(r) {
		for _, m := range r.Measurements {
			if m.Variant == v.Name && m.Test == Test && m.Status == results.OK && !m.Warmup && m.Endurance != nil {
				if len(by[v.Name]) == 0 {
					variants = append(variants, v.Name)
				}
				by[v.Name] = append(by[v.Name], m.Endurance)
			}
		}
	}
	return variants, by
}

// verdicts is the suite's verdict: the variant whose cards took the most rounds to their first
// error, by the rule of every verdict (TieRule: the U test, 4 cards a side at least), in its
// own words ("kept the card alive 1.8× longer than").
func verdicts(r *results.Run, alpha float64) []verdict.Verdict {
	if vs, _ := cards(r); len(vs) == 0 {
		return nil
	}
	v := verdict.Pick(priority, verdict.Evaluate(r, metric, alpha), alpha)
	v.Suite = Name
	if n := censored(r); n > 0 {
		v.Note = addNote(v.Note, fmt.Sprintf("%d card(s) had no error within the run's bounds: their rounds are a lower bound", n))
	}
	if note := kernelsDiffer(r, v); note != "" {
		v.Note = addNote(v.Note, note)
	}
	return []verdict.Verdict{v}
}

func addNote(note, more string) string { return strings.TrimPrefix(note+"; "+more, "; ") }

// kernelsDiffer says so when the verdict compares filesystems that ran on different kernels (a
// merge of a host run and a guest run: f2fs in the QEMU guest's kernel, btrfs in this
// machine's): rounds count the card's wear, which no emulator slows, but each filesystem is its
// kernel's version of it, and the verdict compares those. "" when they ran on one.
func kernelsDiffer(r *results.Run, v verdict.Verdict) string {
	src := verdict.Sources(r)
	other := v.RunnerUp
	if len(v.Tied) > 0 {
		other = v.Tied[0].Name
	}
	if src == nil || v.Winner == "" || other == "" || src[v.Winner] == src[other] {
		return ""
	}
	return fmt.Sprintf("%s ran on %s, %s on %s: the kernels differ as well as the filesystems", v.Winner, src[v.Winner], other, src[other])
}

// metric is the verdict's figure: each card's rounds to its first error.
var metric = verdict.Metric{Key: Test, Title: "rounds of the workload to the card's first error", Short: "rounds", Label: "card lifetime",
	Unit: catalog.Rounds, Better: catalog.HigherIsBetter, Quantity: catalog.Amount, Tests: []string{Test},
	Combine: verdict.Single(Test, func(m results.Measurement) (float64, bool) {
		if m.Value == nil {
			return 0, false
		}
		return *m.Value, true
	})}

// censored counts the cards that never failed within the run's bounds.
func censored(r *results.Run) int {
	n := 0
	_, by := cards(r)
	for _, cs := range by {
		for _, c := range cs {
			if !c.FirstError.Reached() {
				n++
			}
		}
	}
	return n
}

// span is the median of xs with its range, "" without data: "27.4 (25.1-29.0)".
func span(xs []float64) string {
	s := stats.Summarize(xs)
	if s.N == 0 {
		return "-"
	}
	if s.N == 1 || s.Min == s.Max {
		return figure.Format(s.Median)
	}
	return fmt.Sprintf("%s (%s-%s)", figure.Format(s.Median), figure.Format(s.Min), figure.Format(s.Max))
}

// milestone collects one milestone's rounds over cards, "not reached" counted apart.
func milestone(cs []*results.Endurance, get func(*results.Endurance) results.Milestone) string {
	var xs []float64
	missing := 0
	for _, c := range cs {
		if m := get(c); m.Reached() {
			xs = append(xs, m.Round)
		} else {
			missing++
		}
	}
	out := span(xs)
	if missing > 0 && len(xs) > 0 {
		out += fmt.Sprintf(", %d not", missing)
	} else if missing > 0 {
		out = "not reached"
	}
	return out
}

// tables are the suite's tables: the milestones per filesystem, and every card with the
// prediction, its end and the charts of its speed and bad blocks over the rounds.
func tables(r *results.Run) []suites.Table {
	variants, by := cards(r)
	if len(variants) == 0 {
		return nil
	}
	first := by[variants[0]][0]
	what := fmt.Sprintf("workload %s, card %s", first.Workload, first.Card)
	if first.Scale > 0 && first.Scale != 1 {
		what += fmt.Sprintf(" with its endurance scaled by %g", first.Scale)
	}
	if first.Behaviour != "" {
		what += ", which turns " + first.Behaviour + " at its end"
	}
	mil := suites.Table{ID: "endurance", Title: "Endurance: the card run to its end",
		Text:    "endurance (" + what + "): rounds to each milestone, median (min-max) over the cards:",
		Caption: "Each card is fresh, the same cards for every filesystem (card N of each). Rounds are days of the workload; a fractional round is where in the round the card failed. " + what + ".",
		Columns: []suites.Column{{Head: "variant"}, {Head: "cards", Num: true}, {Head: "1st error", PageHead: "first error (rounds)", Num: true},
			{Head: "predicted", PageHead: "predicted by the wear line", Num: true}, {Head: "meas/pred", PageHead: "measured ÷ predicted", Num: true},
			{Head: "read-only", PageHead: "card read-only", Num: true}, {Head: "wrong data", Num: true}, {Head: "fs ro", PageHead: "filesystem read-only", Num: true},
			{Head: "end", Num: true}, {Head: "GiB to 1st error", PageHead: "written to the first error", Num: true},
			{Head: "bad 10/25/50 %", PageHead: "bad blocks at 10 / 25 / 50 % of spare (rounds)", PageOnly: false},
			{Head: "MB/s first→last", PageHead: "speed, first → last round (MB/s)"},
			{Head: "what the filesystem did", PageOnly: true}}}
	// Where each filesystem ran, when that differs (a merged host and guest run) or was a
	// guest: its kernel is part of what the cards measured.
	src := verdict.Sources(r)
	if src != nil {
		mil.Columns = slices.Insert(mil.Columns, 1, suites.Column{Head: "ran on"})
	}
	for _, v := range variants {
		cs := by[v]
		var firsts, preds, ratios, gib, sFirst, sLast []float64
		for _, c := range cs {
			if c.FirstError.Reached() {
				firsts = append(firsts, c.FirstError.Round)
				gib = append(gib, float64(c.FirstError.Bytes)/(1<<30))
				if c.PredictedRounds > 0 {
					ratios = append(ratios, c.FirstError.Round/c.PredictedRounds)
				}
			}
			if c.PredictedRounds > 0 {
				preds = append(preds, c.PredictedRounds)
			}
			sFirst = append(sFirst, c.SpeedFirst)
			sLast = append(sLast, c.SpeedLast)
		}
		var bad []string
		for i := range endurance.BadBlockShares {
			bad = append(bad, milestone(cs, func(c *results.Endurance) results.Milestone {
				if i < len(c.BadBlocks) {
					return c.BadBlocks[i]
				}
				return results.Milestone{}
			}))
		}
		mil.Rows = append(mil.Rows, []string{v, fmt.Sprint(len(cs)), span(firsts), span(preds), span(ratios),
			milestone(cs, func(c *results.Endurance) results.Milestone { return c.ReadOnly }),
			milestone(cs, func(c *results.Endurance) results.Milestone { return c.WrongData }),
			milestone(cs, func(c *results.Endurance) results.Milestone { return c.FSReadOnly }),
			milestone(cs, func(c *results.Endurance) results.Milestone { return c.End }),
			span(gib), strings.Join(bad, " / "),
			fmt.Sprintf("%s → %s", figure.Format(stats.Summarize(sFirst).Median), figure.Format(stats.Summarize(sLast).Median)),
			fsDid(cs)})
		if src != nil {
			row := &mil.Rows[len(mil.Rows)-1]
			*row = slices.Insert(*row, 1, src[v])
		}
	}
	mil.Notes = append(mil.Notes, predictionNote(variants, by))
	all := suites.Table{ID: "endurance-cards", Title: "Endurance: every card",
		Text: "endurance, every card:",
		Columns: []suites.Column{{Head: "variant"}, {Head: "card", Num: true}, {Head: "seed", Num: true, PageOnly: true}, {Head: "1st error", Num: true},
			{Head: "predicted", Num: true}, {Head: "rounds", Num: true}, {Head: "bad blocks", Num: true}, {Head: "resumed", Num: true}, {Head: "end"}},
		Charts: charts(variants, by)}
	for _, v := range variants {
		for i, c := range by[v] {
			fe := "-"
			if c.FirstError.Reached() {
				fe = figure.Format(c.FirstError.Round)
			}
			pred := "-"
			if c.PredictedRounds > 0 {
				pred = figure.Format(c.PredictedRounds)
			}
			bad := "-"
			if n := len(c.Series); n > 0 && c.SpareBlocks > 0 {
				bad = fmt.Sprintf("%d of %d spares", c.Series[n-1].BadBlocks, c.SpareBlocks)
			}
			all.Rows = append(all.Rows, []string{v, fmt.Sprint(i + 1), fmt.Sprint(c.Seed), fe, pred, fmt.Sprint(c.Rounds), bad, fmt.Sprint(c.Resumed), c.End.What})
		}
	}
	return []suites.Table{mil, all}
}

// fsDid says what the filesystem did over its cards: the promises it broke and how.
func fsDid(cs []*results.Endurance) string {
	var unreadable, missing, wrong, ioErr, unmountable int
	var fsErr, corrupt int64 = -1, -1
	ro := 0
	for _, c := range cs {
		unreadable += c.Unreadable
		missing += c.Missing
		wrong += c.Wrong
		ioErr += c.IOErrors
		fsErr, corrupt = max(fsErr, c.FSErrors), max(corrupt, c.Corruption)
		if c.FSReadOnly.Reached() {
			ro++
		}
		if c.Unmountable {
			unmountable++
		}
	}
	var parts []string
	if ro > 0 {
		parts = append(parts, fmt.Sprintf("remounted itself read-only on %d of %d cards", ro, len(cs)))
	}
	if unmountable > 0 {
		parts = append(parts, fmt.Sprintf("refused to mount what the card gave back on %d of %d cards (noticed its metadata wrong)", unmountable, len(cs)))
	}
	if ioErr > 0 {
		parts = append(parts, fmt.Sprintf("%d I/O errors", ioErr))
	}
	if unreadable > 0 {
		parts = append(parts, fmt.Sprintf("refused %d promised files (noticed the damage)", unreadable))
	}
	if missing > 0 {
		parts = append(parts, fmt.Sprintf("lost %d promised files", missing))
	}
	if wrong > 0 {
		parts = append(parts, fmt.Sprintf("gave back %d promised files wrong without an error (the verifier caught them)", wrong))
	}
	if corrupt > 0 {
		parts = append(parts, fmt.Sprintf("up to %d checksum failures noticed", corrupt))
	}
	if fsErr > 0 {
		parts = append(parts, fmt.Sprintf("up to %d errors in its own counters", fsErr))
	}
	if len(parts) == 0 {
		return "kept every promise it could be checked on"
	}
	return strings.Join(parts, "; ")
}

// Agreement is how far the prediction may be from the rounds a card took (measured ÷
// predicted within 1 ± Agreement): the wear line's lifetime is checked against it.
const Agreement = 0.20

// predictionNote says how the wear line's prediction met the cards.
func predictionNote(variants []string, by map[string][]*results.Endurance) string {
	var in, out []string
	for _, v := range variants {
		var ratios []float64
		for _, c := range by[v] {
			if c.FirstError.Reached() && c.PredictedRounds > 0 {
				ratios = append(ratios, c.FirstError.Round/c.PredictedRounds)
			}
		}
		if len(ratios) == 0 {
			continue
		}
		med := stats.Summarize(ratios).Median
		s := fmt.Sprintf("%s %s", v, figure.Format(med))
		if math.Abs(med-1) <= Agreement {
			in = append(in, s)
		} else {
			out = append(out, s)
		}
	}
	switch {
	case len(in) == 0 && len(out) == 0:
		return "no prediction: the first round was not traced, or no card failed"
	case len(out) == 0:
		return fmt.Sprintf("the wear line's prediction meets the cards within %.0f %% (measured ÷ predicted, median: %s)", 100*Agreement, strings.Join(in, ", "))
	}
	return fmt.Sprintf("the wear line's prediction misses by more than %.0f %% for %s (measured ÷ predicted, median); within it: %s", 100*Agreement, strings.Join(out, ", "), orNone(in))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// charts are the cards' speed and bad blocks round by round: one line per card, coloured by
// variant.
func charts(variants []string, by map[string][]*results.Endurance) []suites.Chart {
	speed := suites.Chart{Title: "write speed through the filesystem, round by round", X: "round", Y: "MB/s"}
	bad := suites.Chart{Title: "bad blocks of the card, round by round", X: "round", Y: "bad blocks"}
	anyBad := false
	for vi, v := range variants {
		for i, c := range by[v] {
			ls := suites.Line{Label: v, Group: vi, Name: fmt.Sprintf("%s #%d", v, i+1)}
			lb := ls
			for _, p := range c.Series {
				ls.X, ls.Y = append(ls.X, float64(p.Round)), append(ls.Y, p.MBps)
				lb.X, lb.Y = append(lb.X, float64(p.Round)), append(lb.Y, float64(p.BadBlocks))
				anyBad = anyBad || p.BadBlocks > 0
			}
			speed.Lines = append(speed.Lines, ls)
			bad.Lines = append(bad.Lines, lb)
		}
	}
	if !anyBad {
		return []suites.Chart{speed}
	}
	return []suites.Chart{speed, bad}
}

// rules is the suite's paragraph in the page's footer.
func rules(r *results.Run) string {
	if vs, _ := cards(r); len(vs) == 0 {
		return ""
	}
	return "Endurance: each card is a fresh card (the same N-th card for every filesystem); its filesystem is made once, then the workload's day runs round after round. " +
		"After every round the filesystem is unmounted and mounted again and every file it promised (made durable by fsync or syncfs) is read back from the card and compared. " +
		"The first error is the first the host saw: a request the card refused (an I/O error) or a promised file read back wrong without an error. " +
		"The card's end: it turned read-only or stopped responding, the filesystem no longer mounted or remounted itself read-only, or the run stopped a card that still answered " +
		"some rounds after its first error. The prediction is the wear line's lifetime (lifetime_years of the first round's write tests on the card's profile, their rates added) " +
		"in rounds at the card's endurance scale; measured ÷ predicted should lie within " + fmt.Sprintf("%.0f %%", 100*Agreement) + " of 1. " +
		"Bytes are what the workload wrote through the filesystem (" + bytesize.Format(1<<30) + " = 1 GiB). " +
		"The verdict compares the rounds to the first error by the rule of every verdict."
}
