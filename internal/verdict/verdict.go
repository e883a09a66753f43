// Package verdict judges results: pure functions of a results.Run that rate each variant's
// figures (Rate, RatingRules), name a winner per priority or say that the data cannot tell
// (Verdicts, TieRule), and compare two runs (CompareRuns) or a run's fresh and aged variants
// (Aged). It draws nothing: internal/report renders what it decides, and a suite declares its
// own verdicts with these types (internal/suites).
package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
)

// Verdict is the conclusion for one user priority: a clear winner, or no clear winner and the
// variants the data cannot tell apart (TieRule).
type Verdict struct {
	Priority string // "boot/mount time", "block write", ...
	// Suite is the suite whose own figures the verdict rests on (bonnie, smallfiles, randio,
	// powercut); "" for the concerns of the observation matrix (the bootlin suite and the card).
	Suite  string
	Basis  string // what was compared, with its unit
	Winner string // the variant ranked first; empty when no variant has data (see Note)
	// Tied are the variants the data cannot tell apart from Winner (TieRule), best first:
	// when there are any, there is no clear winner and Winner is only the best-ranked of them.
	Tied     []Contender
	RunnerUp string // empty when only one variant has data
	Unit     string
	// WinnerMedian and RunnerMedian are the medians of the compared figure.
	WinnerMedian, RunnerMedian float64
	// Margin is how much better the winner is than the runner-up, as a fraction (0.12 = 12 %)
	// (read-mostly's second step compares space, and its Unit says so).
	Margin float64
	// Significance says in words whether Winner differs from the others: the comparison with
	// the runner-up when Winner is clear, else the one with the first variant tied with it.
	Significance string
	// Significant is true when Winner differs significantly from every variant it is compared
	// with: a clear winner (see Clear).
	Significant bool
	Note        string
	// Detail is a longer explanation for the HTML report (the lifetime's assumptions); the
	// terminal leaves it out.
	Detail string
}

// Contender is a variant in a verdict's tie, with its median of the compared figure.
type Contender struct {
	Name   string
	Median float64
}

// Clear reports whether the verdict names a winner: the best-ranked variant differs
// significantly from every other variant it was compared with.
func (v Verdict) Clear() bool {
	return v.Winner != "" && v.RunnerUp != "" && v.Significant && len(v.Tied) == 0
}

// TieRule is how a verdict tells a clear winner from a tie, in words, for VerdictRules and
// docs/verdicts.md. Keep it in step with finish.
const TieRule = `A variant wins only when the data tells it apart from every other variant it is compared with: ` +
	`the two-sided Mann-Whitney U test, as benchstat computes it, at p <= 0.05, which needs at least 4 repetitions per side ` +
	`(with 3 the smallest possible p is 0.1). Every variant whose comparison with the best-ranked one is not significant, ` +
	`or could not be made with that many repetitions, is within noise of it, and the verdict says "no clear winner" and names them all, ` +
	`best median first. Never a recommendation for a tie.`

// VerdictRules explains how Verdicts chooses, for the report footer.
const VerdictRules = `Verdicts: for each priority the variants are ranked by the median of the figure named. ` + TieRule + ` ` +
	`Read-mostly rootfs: among the variants whose read is within noise of the best read, the one using the least space, by the same rule on space. ` +
	`Boot/mount time is module load (0 when built in or loaded before the run) plus mount, per repetition; the module is unloaded after each repetition, ` +
	`so every one pays the load as a boot does, and one that found it left loaded (the kernel would not unload it) is left out, as the line says. ` +
	`Write-heavy data is the combined throughput of write, read-write-delete and sequential write (their bytes over their summed time), ` +
	`so read-only filesystems do not take part. The margin is how much better the winner's median is than the runner-up's. ` +
	`The bonnie, smallfiles and randio suites have a verdict per test, in its own unit (block write and read, files created and deleted per second, IOPS), by the same rule. ` +
	`Flash wear: the least flash programmed per byte written through the filesystem, on the card profile named (see the flash-wear rule).`

// Verdicts returns the verdict for each priority of the observation matrix, in the report's
// order, with flash wear rated on the run's own card (CardFor): VerdictsFor(r, alpha, "", nil).
func Verdicts(r *results.Run, alpha float64) []Verdict {
	return VerdictsFor(r, alpha, "", nil)
}

// VerdictsFor is Verdicts with flash wear rated on the card profile card (a built-in profile
// name or the path the run replayed; "" for CardFor's default). The matrix's priorities
// (Bootlin's, and the card's) come when the bootlin suite ran; then each other suite that ran
// of suites that ran adds its own, in their order. Boot/mount time is measured by every
// suite's setup.
func VerdictsFor(r *results.Run, alpha float64, card string, suites []Suite) []Verdict {
	fresh, aged := splitAged(r)
	if aged == nil {
		return verdictsFor(r, alpha, card, suites)
	}
	// A fresh variant and its aged twin are two states of one filesystem, not two choices: the
	// verdicts rank the fresh variants among themselves and the aged ones among themselves
	// (aged.go says how each changed with age and whether the ranking did).
	out := verdictsFor(fresh, alpha, card, suites)
	for _, v := range verdictsFor(aged, alpha, card, suites) {
		v.Priority += " (aged)"
		out = append(out, v)
	}
	return out
}

// splitAged returns r's fresh variants and its aged twins (--age) as two runs, each with its
// own measurements; aged is nil when r has no aged twin.
func splitAged(r *results.Run) (fresh, aged *results.Run) {
	isAged := map[string]bool{}
	for _, v := range r.Variants {
		if v.Fresh != "" {
			isAged[v.Name] = true
		}
	}
	if len(isAged) == 0 {
		return r, nil
	}
	f, a := *r, *r
	f.Variants, a.Variants = nil, nil
	f.Measurements, a.Measurements = nil, nil
	f.Summary, a.Summary = nil, nil
	for _, v := range r.Variants {
		if isAged[v.Name] {
			a.Variants = append(a.Variants, v)
		} else {
			f.Variants = append(f.Variants, v)
		}
	}
	for _, m := range r.Measurements {
		if isAged[m.Variant] {
			a.Measurements = append(a.Measurements, m)
		} else {
			f.Measurements = append(f.Measurements, m)
		}
	}
	for _, c := range r.Summary {
		if isAged[c.Variant] {
			a.Summary = append(a.Summary, c)
		} else {
			f.Summary = append(f.Summary, c)
		}
	}
	return &f, &a
}

func verdictsFor(r *results.Run, alpha float64, card string, suites []Suite) []Verdict {
	alpha = DefaultAlpha(alpha)
	var out []Verdict
	bootlin := Ran(r, catalog.Bootlin())
	if bootlin || Present(r, MBoot) {
		out = append(out, leftLoadedNote(Pick("boot/mount time", EvaluateClean(r, MBoot, alpha), alpha), r))
	}
	if bootlin {
		c := CardFor(r, card)
		out = append(out, readMostly(r, alpha), slcNote(Pick("write-heavy data", EvaluateClean(r, mWriteMix, alpha), alpha), r, WriteTests))
		// Card time only where it was measured: a run without traces says so once, under flash wear.
		if hasCardTime(r, c) {
			out = append(out, cardTimeVerdict(r, c, alpha))
		}
		out = append(out, Pick("space", Evaluate(r, mSpace, alpha), alpha), wearVerdict(r, c, alpha))
	}
	for _, s := range suites {
		if s.Verdicts != nil && Ran(r, s.Tests) {
			for _, v := range s.Verdicts(r, alpha) {
				v.Suite = s.Name
				out = append(out, v)
			}
		}
	}
	return out
}

// Ran reports whether any of a suite's tests appears in r.
func Ran(r *results.Run, tests []string) bool {
	for _, m := range r.Measurements {
		if slices.Contains(tests, m.Test) {
			return true
		}
	}
	return false
}

func Pick(priority string, t Ranking, alpha float64) Verdict {
	v := Verdict{Priority: priority, Basis: t.Metric.Title, Unit: t.Metric.Unit}
	if len(t.Order) == 0 {
		v.Note = "no variant has data for this"
		if len(t.Dropped) > 0 {
			v.Note = "cannot conclude: every measurement of it was taken while the machine was busy with other work (" +
				NoiseWords(t.Why) + "); rerun when the machine is quiet"
		}
		return v
	}
	return busyNote(finish(v, t, t.Order[0], alpha), t)
}

// busyNote adds to a verdict drawn from a clean table what it left out.
func busyNote(v Verdict, t Ranking) Verdict {
	n := 0
	for _, b := range t.Busy {
		n += b
	}
	if n == 0 {
		return v
	}
	note := fmt.Sprintf("%d repetition(s) measured while the machine was busy (%s) left out", n, NoiseWords(t.Why))
	if len(t.Dropped) > 0 {
		note += "; not compared at all: " + strings.Join(t.Dropped, ", ")
	}
	if v.Note != "" {
		v.Note += "; " + note
	} else {
		v.Note = note
	}
	return v
}

// finish fills in the runner-up (the best-ranked variant other than the winner), the margin,
// and the significance of the winner against every variant it may be compared with: those the
// data cannot tell apart from it are Tied (TieRule).
func finish(v Verdict, t Ranking, winner string, alpha float64) Verdict {
	v.Winner = winner
	w := t.Cells[winner]
	v.WinnerMedian = w.Summary.Median
	for _, name := range t.Order {
		if name == winner || !t.SameGroup(name, winner) {
			continue
		}
		c := t.Cells[name]
		text, sig := Significance(w.Samples, c.Samples, alpha)
		if v.RunnerUp == "" {
			v.RunnerUp, v.RunnerMedian = name, c.Summary.Median
			// Below 0 when the runner-up has the better median (a second criterion chose).
			v.Margin = ratio(c.Summary.Median, w.Summary.Median, t.Metric.HigherBetter()) - 1
			v.Significance, v.Significant = text, sig
		}
		if !sig {
			if len(v.Tied) == 0 {
				v.Significance = text // the comparison that makes it a tie
			}
			v.Tied = append(v.Tied, Contender{Name: name, Median: c.Summary.Median})
			v.Significant = false
		}
	}
	if v.RunnerUp != "" {
		return v
	}
	if t.Group != nil {
		v.Note = "the only one on " + t.Group[winner] + "; " + GroupRule
	}
	return v
}

// GroupRule says why rows that ran on different kernels or machines are not rated together on
// times and rates.
const GroupRule = "times and rates are rated only against rows that ran on the same kernel and machine (a QEMU guest under TCG emulates its CPU): space and flash wear compare across them"

// restrict is t with only the named variants.
func (t Ranking) restrict(names []string) Ranking {
	out := t
	out.Cells = map[string]Rated{}
	out.Order = nil
	for _, name := range t.Order {
		if slices.Contains(names, name) {
			out.Cells[name] = t.Cells[name]
			out.Order = append(out.Order, name)
		}
	}
	return out
}

// readMostly ranks by read throughput; the variants whose read the data cannot tell apart
// from the best (TieRule) are then ranked by space, and the least space wins when it is a
// clear winner there.
func readMostly(r *results.Run, alpha float64) Verdict {
	alpha = DefaultAlpha(alpha)
	rd := EvaluateClean(r, mRead, alpha)
	v := Verdict{Priority: "read-mostly rootfs", Basis: rd.Metric.Title + ", then space", Unit: rd.Metric.Unit}
	if len(rd.Order) == 0 {
		return Pick(v.Priority, rd, alpha)
	}
	fastest := finish(v, rd, rd.Order[0], alpha)
	if len(fastest.Tied) == 0 {
		// The fastest reader is a clear winner: space does not come into it.
		return busyNote(fastest, rd)
	}
	// The read cannot tell these apart: the one using the least space, if the space can.
	readers := []string{fastest.Winner}
	for _, c := range fastest.Tied {
		readers = append(readers, c.Name)
	}
	sp := Evaluate(r, mSpace, alpha).restrict(readers)
	if len(sp.Order) == 0 {
		return busyNote(fastest, rd)
	}
	v = finish(Verdict{Priority: v.Priority, Basis: "space, among the variants whose " + rd.Metric.Title + " is within noise of the best (" + fastest.Winner + ")",
		Unit: sp.Metric.Unit}, sp, sp.Order[0], alpha)
	rc, fc := rd.Cells[v.Winner], rd.Cells[fastest.Winner]
	if v.Winner == fastest.Winner {
		v.Note = fmt.Sprintf("the fastest reader (%s %s)", figure.Format(rc.Summary.Median), rd.Metric.Unit)
	} else {
		// Say how far apart the reads are, and the test that cannot tell them apart: a median
		// half the best's with one fast repetition is within noise at 4 repetitions.
		text, _ := Significance(rc.Samples, fc.Samples, alpha)
		if pn, ok := strings.CutPrefix(text, "not significant ("); ok {
			text = strings.TrimSuffix(pn, ")")
		}
		v.Note = fmt.Sprintf("its read cannot be told from %s's (%s vs %s %s, %s)", fastest.Winner,
			figure.Format(rc.Summary.Median), figure.Format(fc.Summary.Median), rd.Metric.Unit, text)
	}
	if missing := len(readers) - len(sp.Order); missing > 0 {
		v.Note += fmt.Sprintf("; %d variant(s) within noise on read have no space figure", missing)
	}
	return busyNote(v, rd)
}

// MarginText is the margin in the words people use: "1.3× faster than ext4 (8.10 vs 10.5 ms)",
// "12 % faster", "35 % less space"; "about as fast as" a runner-up within half a percent.
func (v Verdict) MarginText() string {
	if v.RunnerUp == "" {
		return ""
	}
	figures := fmt.Sprintf("(%s vs %s %s)", figure.Format(v.WinnerMedian), figure.Format(v.RunnerMedian), v.Unit)
	m := v.Margin
	amount := v.Unit == "% data" || v.Unit == "x written" // less is better, and not a speed
	var words string
	switch {
	case v.Unit == catalog.Rounds && m < 0.005:
		words = "kept the card alive about as long as"
	case v.Unit == catalog.Rounds && 1+m >= 1.5:
		words = "kept the card alive " + figure.Ratio(1+m) + " longer than"
	case v.Unit == catalog.Rounds:
		words = fmt.Sprintf("kept the card alive %s longer than", pct(m))
	case v.Unit == catalog.Percent && m < 0.005:
		words = "as many cuts survived as"
	case v.Unit == catalog.Percent:
		// A share of power cuts survived, not a speed: say it in points.
		words = fmt.Sprintf("%s points more cuts survived than", figure.Format(v.WinnerMedian-v.RunnerMedian))
	case m < 0.005 && amount:
		words = "about as much as"
	case m < 0.005:
		words = "about as fast as"
	case amount:
		// Less of something: by how much less, as a share of the runner-up's.
		what := map[string]string{"% data": "space", "x written": "flash written"}[v.Unit]
		words = fmt.Sprintf("%s less %s than", pct(1-1/(1+m)), what)
	case 1+m >= 1.5:
		words = figure.Ratio(1+m) + " faster than"
	default:
		words = fmt.Sprintf("%s faster than", pct(m))
	}
	return fmt.Sprintf("%s %s %s", words, v.RunnerUp, figures)
}

func pct(f float64) string {
	switch {
	case f < 0.1:
		return fmt.Sprintf("%.1f %%", 100*f)
	default:
		return fmt.Sprintf("%.0f %%", 100*f)
	}
}

// Words is a verdict as the terminal and the HTML page both say it: one function words both,
// so that the two never differ.
type Words struct {
	// Head is the conclusion: the winner's name when the verdict is Clear; "no clear winner:
	// A, B, C within noise" when the data cannot tell the best from others; "no comparison: A"
	// when only one variant has data; else the note that says why there is no verdict.
	Head  string
	Clear bool // Head names a winner
	// Margin is the winner's margin to the runner-up; for a tie, the span of the tied medians.
	Margin       string
	Significance string
	Note         string
}

// Words words the verdict (TieRule): a tie is never worded as advice.
func (v Verdict) Words() Words {
	switch {
	case v.Winner == "":
		return Words{Head: v.Note}
	case v.RunnerUp == "":
		return Words{Head: "no comparison: only " + v.Winner + " has data", Note: v.Note}
	case v.Clear():
		return Words{Head: v.Winner, Clear: true, Margin: v.MarginText(), Significance: v.Significance, Note: v.Note}
	}
	names := []string{v.Winner}
	for _, c := range v.Tied {
		names = append(names, c.Name)
	}
	w := Words{Head: "no clear winner: " + strings.Join(names, ", ") + " within noise", Significance: v.Significance, Note: v.Note}
	if len(v.Tied) == 0 {
		return w // a verdict built by hand as not significant, without its tie: nothing to span
	}
	last := v.Tied[len(v.Tied)-1]
	if last.Median == v.WinnerMedian {
		w.Margin = fmt.Sprintf("the same median, %s %s", figure.Format(v.WinnerMedian), v.Unit)
	} else {
		w.Margin = fmt.Sprintf("medians from %s (%s) to %s %s (%s)", figure.Format(v.WinnerMedian), v.Winner, figure.Format(last.Median), v.Unit, last.Name)
	}
	return w
}

// Line is the verdict in one line of plain text, as the terminal prints it.
func (v Verdict) Line() string {
	w := v.Words()
	parts := []string{w.Head}
	for _, s := range []string{w.Margin, w.Significance, w.Note} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}
