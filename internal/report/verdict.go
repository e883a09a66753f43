package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// Verdict is the recommendation for one user priority.
type Verdict struct {
	Priority string // "boot/mount time", ...
	Basis    string // what was compared, with its unit
	Winner   string // empty when no variant has data (see Note)
	RunnerUp string // empty when only one variant has data
	Unit     string
	// WinnerMedian and RunnerMedian are the medians of the compared figure.
	WinnerMedian, RunnerMedian float64
	// Margin is how much better the winner is than the runner-up, as a fraction (0.12 = 12 %);
	// negative when the winner was chosen by a second criterion (space, for read-mostly).
	Margin       float64
	Significance string // "significant (p=0.029 n=4)", "cannot tell: need >= 4 ...", ...
	Significant  bool
	Note         string
	// Detail is a longer explanation for the HTML report (the lifetime's assumptions); the
	// terminal leaves it out.
	Detail string
}

// VerdictRules explains how Verdicts chooses, for the report footer.
const VerdictRules = `Recommendations: for each priority the variant with the best median of the figure named wins; ` +
	`read-mostly rootfs: among the variants rated excellent for read (within noise of the best), the one using the least space. ` +
	`Boot/mount time is module load (0 when built in or already loaded) plus mount, per repetition. ` +
	`Write-heavy data is the combined throughput of write, read-write-delete and sequential write (their bytes over their summed time), ` +
	`so read-only filesystems do not take part. The margin is how much better the winner's median is than the runner-up's; ` +
	`whether that difference is significant is the Mann-Whitney U test at p <= 0.05, as benchstat computes it, ` +
	`which needs at least 4 repetitions per side. ` +
	`Flash wear: the least flash programmed per byte written through the filesystem, on the card profile named (see the flash-wear rule).`

// Verdicts returns the recommendation for each priority, in the report's order, with flash
// wear rated on the run's default card (CardFor): VerdictsFor(r, alpha, "").
func Verdicts(r *results.Run, alpha float64) []Verdict {
	return VerdictsFor(r, alpha, "")
}

// VerdictsFor is Verdicts with flash wear rated on the card profile card (a built-in profile
// name or the path the run replayed; "" for CardFor's default).
func VerdictsFor(r *results.Run, alpha float64, card string) []Verdict {
	if alpha <= 0 {
		alpha = stats.DefaultAlpha
	}
	out := []Verdict{
		leftLoadedNote(pick("boot/mount time", evaluateClean(r, mBoot, alpha), alpha), r),
		readMostly(r, alpha),
		pick("write-heavy data", evaluateClean(r, mWriteMix, alpha), alpha),
		pick("space", evaluate(r, mSpace, alpha), alpha),
		wearVerdict(r, CardFor(r, card), alpha),
	}
	// Card time only where it was measured: a run without traces says so once, under flash wear.
	if c := CardFor(r, card); hasCardTime(r, c) {
		out = slices.Insert(out, 3, cardTimeVerdict(r, c, alpha))
	}
	if hasPowerCut(r) {
		out = append(out, powerLossVerdict(r, alpha))
	}
	return out
}

func pick(priority string, t table, alpha float64) Verdict {
	v := Verdict{Priority: priority, Basis: t.m.title, Unit: t.m.unit}
	if len(t.order) == 0 {
		v.Note = "no variant has data for this"
		if len(t.dropped) > 0 {
			v.Note = "cannot conclude: every measurement of it was taken while the machine was busy with other work (" +
				noiseWords(t.why) + "); rerun when the machine is quiet"
		}
		return v
	}
	return busyNote(finish(v, t, t.order[0], alpha), t)
}

// busyNote adds to a verdict drawn from a clean table what it left out.
func busyNote(v Verdict, t table) Verdict {
	n := 0
	for _, b := range t.busy {
		n += b
	}
	if n == 0 {
		return v
	}
	note := fmt.Sprintf("%d repetition(s) measured while the machine was busy (%s) left out", n, noiseWords(t.why))
	if len(t.dropped) > 0 {
		note += "; not compared at all: " + strings.Join(t.dropped, ", ")
	}
	if v.Note != "" {
		v.Note += "; " + note
	} else {
		v.Note = note
	}
	return v
}

// finish fills in the runner-up (the best-ranked variant other than the winner), the margin
// and its significance.
func finish(v Verdict, t table, winner string, alpha float64) Verdict {
	v.Winner = winner
	w := t.cells[winner]
	v.WinnerMedian = w.Summary.Median
	for _, name := range t.order {
		if name == winner || !t.sameGroup(name, winner) {
			continue
		}
		ru := t.cells[name]
		v.RunnerUp, v.RunnerMedian = name, ru.Summary.Median
		// Below 0 when the runner-up has the better median (a second criterion chose).
		v.Margin = ratio(ru.Summary.Median, w.Summary.Median, t.m.higherBetter()) - 1
		v.Significance, v.Significant = significance(w.Samples, ru.Samples, alpha)
		return v
	}
	v.Note = "the only variant with data"
	if t.group != nil {
		v.Note = "the only variant with data on " + t.group[winner] + "; " + GroupRule
	}
	return v
}

// GroupRule says why rows that ran on different kernels or machines are not rated together on
// times and rates.
const GroupRule = "times and rates are rated only against rows that ran on the same kernel and machine (a QEMU guest under TCG emulates its CPU): space and flash wear compare across them"

// readMostly ranks by read throughput, then, among the variants within noise of the best
// (rated excellent), takes the one that uses the least space.
func readMostly(r *results.Run, alpha float64) Verdict {
	rd := evaluateClean(r, mRead, alpha)
	v := Verdict{Priority: "read-mostly rootfs", Basis: rd.m.title + ", then space", Unit: rd.m.unit}
	if len(rd.order) == 0 {
		return pick(v.Priority, rd, alpha)
	}
	sp := evaluate(r, mSpace, alpha)
	winner := rd.order[0]
	for _, name := range rd.order[1:] {
		c, ok := sp.cells[name]
		if rd.cells[name].Rating != Best || !ok || !rd.sameGroup(name, rd.order[0]) {
			continue
		}
		if w, ok := sp.cells[winner]; !ok || c.Summary.Median < w.Summary.Median {
			winner = name
		}
	}
	v = finish(v, rd, winner, alpha)
	if winner != rd.order[0] {
		v.Note = fmt.Sprintf("read within noise of %s, and uses less space (%s vs %s %s)", rd.order[0],
			format(sp.cells[winner].Summary.Median), format(sp.cells[rd.order[0]].Summary.Median), mSpace.unit)
	}
	return busyNote(v, rd)
}

// MarginText is the margin in the words people use: "1.3× faster than ext4 (8.10 vs 10.5 ms)",
// "12 % faster", "35 % less space"; "about as fast as" a runner-up within half a percent.
func (v Verdict) MarginText() string {
	if v.RunnerUp == "" {
		return ""
	}
	figures := fmt.Sprintf("(%s vs %s %s)", format(v.WinnerMedian), format(v.RunnerMedian), v.Unit)
	m := v.Margin
	amount := v.Unit == "% data" || v.Unit == "x written" // less is better, and not a speed
	var words string
	switch {
	case m < 0:
		// The winner was chosen by a second criterion (read-mostly: space), and is worse on
		// the first: say by how much, as before.
		words = fmt.Sprintf("%s slower than", pct(-m))
	case v.Unit == catalog.Percent && m < 0.005:
		words = "as many cuts survived as"
	case v.Unit == catalog.Percent:
		// A share of power cuts survived, not a speed: say it in points.
		words = fmt.Sprintf("%s points more cuts survived than", format(v.WinnerMedian-v.RunnerMedian))
	case m < 0.005 && amount:
		words = "about as much as"
	case m < 0.005:
		words = "about as fast as"
	case amount:
		// Less of something: by how much less, as a share of the runner-up's.
		what := map[string]string{"% data": "space", "x written": "flash written"}[v.Unit]
		words = fmt.Sprintf("%s less %s than", pct(1-1/(1+m)), what)
	case 1+m >= 1.5:
		words = fmt.Sprintf("%.1f× faster than", 1+m)
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
