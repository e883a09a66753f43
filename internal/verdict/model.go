package verdict

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// Metric is one figure a person compares across variants: a test's figure as the catalog
// describes it, or a per-repetition combination of several tests.
type Metric struct {
	Key   string // stable identifier (HTML ids, golden files)
	Title string // long name, for headings
	Short string // terminal column header
	Label string // column name in the HTML matrix
	Unit  string
	// Better says which way the figure is better: higher for throughputs (MB/s), lower for
	// times and space.
	Better catalog.Direction
	// Quantity says whether the figure measures the machine (times, rates) or counts (bytes).
	Quantity catalog.Quantity
	Tests    []string // the tests it is made of, for statuses ("n/a (ro)", FAILED)
	// Combine turns the successful measurements of one repetition (by test) into one sample;
	// ok is false when a needed test is missing from that repetition.
	Combine func(byTest map[string]results.Measurement) (v float64, ok bool)
	// WithNA gives Combine the repetition's n/a measurements too: boot time must see a
	// module_load that says why it timed nothing (built in: 0; left loaded: no cold boot).
	WithNA bool
	// Tiebreak, when set, orders variants whose medians are equal (lower is better): without
	// it they go by name, which once made btrfs, with unrecoverable cuts, the power-loss
	// winner over ext4 with none, at the same share of whole cuts.
	Tiebreak func(r *results.Run, variant string) float64
	// Regressed, when set, says that B's figure for variant is worse than A's in a way that is a
	// regression without any significance test (a promise broken: see CompareRow.Broken).
	Regressed func(a, b *results.Run, variant string) bool
}

// HigherBetter reports whether a larger figure is better (a rate, a lifetime).
func (m Metric) HigherBetter() bool { return m.Better == catalog.HigherIsBetter }

// throughput is what a test moved through the filesystem per second, in MB/s (see
// catalog.FromThroughput).
func throughput(m results.Measurement) (float64, bool) {
	if m.MBps > 0 {
		return m.MBps, true
	}
	if m.LogicalBytes > 0 && m.WallSeconds > 0 {
		return float64(m.LogicalBytes) / 1e6 / m.WallSeconds, true
	}
	return 0, false
}

func Single(test string, f func(results.Measurement) (float64, bool)) func(map[string]results.Measurement) (float64, bool) {
	return func(by map[string]results.Measurement) (float64, bool) {
		m, ok := by[test]
		if !ok {
			return 0, false
		}
		return f(m)
	}
}

func scaled(k float64) func(results.Measurement) (float64, bool) {
	return func(m results.Measurement) (float64, bool) {
		if m.Value == nil {
			return 0, false
		}
		return *m.Value * k, true
	}
}

func extra(key string, k float64) func(results.Measurement) (float64, bool) {
	return func(m results.Measurement) (float64, bool) {
		v, ok := m.Extra[key]
		return v * k, ok
	}
}

// TestMetric is the figure the catalog says the report shows for a test.
func TestMetric(name string) Metric { return FigureMetric(catalog.Get(name)) }

// FigureMetric is the figure the entry t says the report shows (t.Figure, which must be set):
// for a suite whose entry is not in the catalog yet when its package's variables are made.
func FigureMetric(t catalog.Test) Metric {
	name := t.Name
	f := t.Figure
	if f == nil {
		panic("verdict: the catalog has no figure for " + name)
	}
	var get func(results.Measurement) (float64, bool)
	switch f.From {
	case catalog.FromValue:
		get = scaled(f.Scale)
	case catalog.FromThroughput:
		get = throughput
	case catalog.FromExtra:
		get = extra(f.Extra, f.Scale)
	default:
		panic("verdict: the catalog's figure for " + name + " has no source")
	}
	return Metric{Key: f.Key, Title: f.Title, Short: f.Short, Label: f.Label, Unit: f.Unit,
		Better: f.Better, Quantity: f.Quantity, Tests: []string{name}, Combine: Single(name, get)}
}

// bootTime is module_load + mount of one repetition in ms. A module that is built in or
// already loaded costs nothing at boot, so its n/a counts as 0; a module an earlier
// repetition loaded and the kernel kept ("left_loaded") was no cold boot, so that repetition
// is left out, and the figure is that of the repetitions that loaded it.
func bootTime(by map[string]results.Measurement) (float64, bool) {
	mnt, ok := by[catalog.Mount]
	if !ok || mnt.Value == nil {
		return 0, false
	}
	v := *mnt.Value
	if ml, ok := by[catalog.ModuleLoad]; ok && ml.Value != nil {
		v += *ml.Value
	} else if ok && ml.Extra["left_loaded"] > 0 {
		return 0, false
	}
	return v * 1e3, true
}

// writeMix is the combined throughput of the write tests: their logical bytes over their
// summed wall time, so a slow test weighs by the time it takes.
func writeMix(by map[string]results.Measurement) (float64, bool) {
	var bytes uint64
	var secs float64
	for _, t := range WriteTests {
		m, ok := by[t]
		if !ok || m.LogicalBytes == 0 || m.WallSeconds <= 0 {
			return 0, false
		}
		bytes += m.LogicalBytes
		secs += m.WallSeconds
	}
	return float64(bytes) / 1e6 / secs, true
}

var (
	MBoot = Metric{Key: "boot", Title: "boot time (module load + mount)", Short: "boot", Label: "boot time", Unit: "ms",
		Better: catalog.LowerIsBetter, Quantity: catalog.Time, Tests: []string{catalog.ModuleLoad, catalog.Mount}, Combine: bootTime, WithNA: true}
	mMount = TestMetric(catalog.Mount)
	mRead  = TestMetric(catalog.Read)
	mSeqRd = TestMetric(catalog.VideoRead)
	mWrite = TestMetric(catalog.Write)
	mSeqWr = TestMetric(catalog.VideoWrite)
	mRRW   = TestMetric(catalog.ReadRemoveWrite)
	mDel   = TestMetric(catalog.Remove)
	// Space as a share of the data stored (see the catalog); the bytes are in results.json.
	mSpace    = TestMetric(catalog.UsedSpace)
	mWriteMix = Metric{Key: "write_mix", Title: "write, read-write-delete and sequential write combined", Unit: "MB/s",
		Better: catalog.HigherIsBetter, Quantity: catalog.Rate, Tests: WriteTests, Combine: writeMix}
)

// matrixMetrics are the columns of the observation matrix and of the terminal summary.
var matrixMetrics = []Metric{MBoot, mMount, mRead, mSeqRd, mWrite, mSeqWr, mRRW, mDel, mSpace}

// ChartMetrics are the figures charted one per test: every test of the bootlin suite the
// catalog gives a figure, in the order they run. Tests recorded without logical bytes are
// charted by their headline value.
var ChartMetrics = func() []Metric {
	var out []Metric
	for _, name := range append(catalog.Setup(), catalog.Bootlin()...) {
		if catalog.Get(name).Figure != nil {
			out = append(out, TestMetric(name))
		}
	}
	return out
}()

// Samples returns one value per successful (non-warm-up) repetition of the metric.
func Samples(r *results.Run, variant string, m Metric) []float64 {
	return sampleSet(r, variant, m).All
}

// repSamples are a variant's samples of a metric: all of them, and those of the repetitions in
// which no measurement of the metric was taken while the machine was busy with other work.
type repSamples struct {
	All, Clean []float64
	Busy       int      // repetitions with a disturbed measurement
	Why        []string // what disturbed them, in the sentinel's words
}

func sampleSet(r *results.Run, variant string, m Metric) repSamples {
	byRep := map[int]map[string]results.Measurement{}
	for _, x := range r.Measurements {
		if x.Variant != variant || x.Warmup || !(x.Status == results.OK || m.WithNA && x.Status == results.NA) || !slices.Contains(m.Tests, x.Test) {
			continue
		}
		if byRep[x.Rep] == nil {
			byRep[x.Rep] = map[string]results.Measurement{}
		}
		byRep[x.Rep][x.Test] = x
	}
	reps := make([]int, 0, len(byRep))
	for rep := range byRep {
		reps = append(reps, rep)
	}
	sort.Ints(reps)
	var out repSamples
	for _, rep := range reps {
		v, ok := m.Combine(byRep[rep])
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		out.All = append(out.All, v)
		var why []string
		for _, x := range byRep[rep] {
			if x.Disturbed() {
				why = append(why, x.Noise.Why)
			}
		}
		if len(why) == 0 {
			out.Clean = append(out.Clean, v)
			continue
		}
		out.Busy++
		out.Why = append(out.Why, why...)
	}
	return out
}

// Status is the text of a cell without data: why there is no figure.
func Status(r *results.Run, variant string, m Metric) string {
	var failed, notRun, ro, na bool
	var note string
	for _, t := range m.Tests {
		for _, x := range r.Cell(variant, t) {
			switch x.Status {
			case results.Failed:
				failed = true
			case results.NotRun:
				notRun = true
			case results.NA:
				if x.Note == "read-only filesystem" {
					ro = true
				} else {
					na, note = true, x.Note
				}
			}
		}
	}
	switch {
	case failed:
		return "FAILED"
	case ro:
		return "n/a (ro)"
	case notRun:
		return "not run"
	case na && note != "":
		return note
	case na:
		return "n/a"
	}
	return "-"
}

// RanVariants returns the variants that were not skipped, in the results' order.
func RanVariants(r *results.Run) []results.Variant {
	var out []results.Variant
	for _, v := range r.Variants {
		if v.Status != results.Skipped {
			out = append(out, v)
		}
	}
	return out
}

// Present reports whether any of the metric's tests appears in the results.
func Present(r *results.Run, m Metric) bool {
	for _, x := range r.Measurements {
		if slices.Contains(m.Tests, x.Test) {
			return true
		}
	}
	return false
}

// Ranking is a metric evaluated for every variant that ran: samples, summary and rating.
type Ranking struct {
	Metric Metric
	Cells  map[string]Rated // by variant; absent when there is no data
	Order  []string         // variants with data, best first
	// Group maps each variant to where it ran when the rows of a merged run came from
	// different kernels or machines and the metric is a time or a rate: those are rated, and
	// compared in verdicts, only within their group. nil when all rows compare.
	Group map[string]string
	// Busy counts, per variant, the repetitions measured while the machine was busy with other
	// work (the noise sentinel), and Why says with what; clean rankings (EvaluateClean) leave
	// those repetitions out.
	Busy map[string]int
	Why  []string
	// Dropped are the variants a clean ranking left out: every repetition of theirs was
	// disturbed.
	Dropped []string
}

// SameGroup reports whether two variants' figures may be compared.
func (t Ranking) SameGroup(a, b string) bool { return t.Group == nil || t.Group[a] == t.Group[b] }

// machineBound reports whether a metric measures the machine as much as the filesystem: times
// and rates. A QEMU guest under TCG emulates its CPU tens of times slower than the host, so its
// times say nothing against the host's; space and flash wear are counted in bytes and compare.
func machineBound(m Metric) bool {
	return m.Quantity.MachineBound()
}

// Evaluate rates every variant's samples of m (the matrix, the charts).
func Evaluate(r *results.Run, m Metric, alpha float64) Ranking {
	return evaluateWith(r, m, alpha, false)
}

// EvaluateClean is evaluate on the repetitions no busy machine disturbed, for times and rates:
// what verdicts are drawn from, so that a load that came and went never decides which
// filesystem wins. Bytes (space, flash wear) count the same however busy the machine was.
func EvaluateClean(r *results.Run, m Metric, alpha float64) Ranking {
	return evaluateWith(r, m, alpha, machineBound(m))
}

func evaluateWith(r *results.Run, m Metric, alpha float64, clean bool) Ranking {
	byVariant := map[string][]float64{}
	busy := map[string]int{}
	var why, dropped []string
	for _, v := range RanVariants(r) {
		ss := sampleSet(r, v.Name, m)
		s := ss.All
		if clean {
			s = ss.Clean
			if len(ss.All) > 0 && len(ss.Clean) == 0 {
				dropped = append(dropped, v.Name)
			}
		}
		// A busy machine only matters to figures it can bend (times and rates): counts such
		// as space, flash wear and card time are the same however busy it was, so their cells
		// are not marked and their verdicts leave nothing out.
		if ss.Busy > 0 && machineBound(m) {
			busy[v.Name] = ss.Busy
			why = append(why, ss.Why...)
		}
		if len(s) > 0 {
			byVariant[v.Name] = s
		}
	}
	var group map[string]string
	if src := Sources(r); src != nil && machineBound(m) {
		distinct := map[string]bool{}
		for name := range byVariant {
			distinct[src[name]] = true
		}
		if len(distinct) > 1 {
			group = src
		}
	}
	cells := map[string]Rated{}
	if group == nil {
		cells = Rate(byVariant, m.HigherBetter(), alpha)
	} else {
		byGroup := map[string]map[string][]float64{}
		for name, s := range byVariant {
			g := group[name]
			if byGroup[g] == nil {
				byGroup[g] = map[string][]float64{}
			}
			byGroup[g][name] = s
		}
		for _, vs := range byGroup {
			maps.Copy(cells, Rate(vs, m.HigherBetter(), alpha))
		}
	}
	order := make([]string, 0, len(cells))
	for name := range cells {
		order = append(order, name)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := cells[order[i]], cells[order[j]]
		if a.Summary.Median != b.Summary.Median {
			if m.HigherBetter() {
				return a.Summary.Median > b.Summary.Median
			}
			return a.Summary.Median < b.Summary.Median
		}
		if m.Tiebreak != nil {
			if ta, tb := m.Tiebreak(r, order[i]), m.Tiebreak(r, order[j]); ta != tb {
				return ta < tb
			}
		}
		return order[i] < order[j]
	})
	return Ranking{Metric: m, Cells: cells, Order: order, Group: group, Busy: busy, Why: why, Dropped: dropped}
}

// Repetitions is the largest number of non-warm-up repetitions recorded for any cell.
func Repetitions(r *results.Run) int {
	reps := map[int]bool{}
	for _, x := range r.Measurements {
		if !x.Warmup {
			reps[x.Rep] = true
		}
	}
	return len(reps)
}

// Sources maps each variant name to where it ran ("6.18.44 (host)", "6.1.0-56-amd64 (qemu
// tcg)"), or is nil when that is the same for every variant of a run on the host, which the
// setup line already says.
func Sources(r *results.Run) map[string]string {
	out := map[string]string{}
	distinct := map[string]bool{}
	for _, v := range r.Variants {
		out[v.Name] = RanOn(r, v)
		distinct[out[v.Name]] = true
	}
	if r.Guest == nil && len(distinct) < 2 {
		return nil
	}
	return out
}

// OnBoards reports whether some variant of r ran on a board (a farm's merge).
func OnBoards(r *results.Run) bool {
	for _, v := range r.Variants {
		if v.Source != nil && v.Source.Board != "" {
			return true
		}
	}
	return false
}

// RanOn is where v of r ran: "6.18.44 (host)", "6.1.0-56-amd64 (qemu tcg)".
func RanOn(r *results.Run, v results.Variant) string {
	kernel, where := r.Machine.Kernel, "host"
	if r.Guest != nil {
		where = "qemu " + r.Guest.Accel
	}
	if v.Source != nil {
		kernel, where = v.Source.Kernel, "host"
		if v.Source.Guest != "" {
			where = v.Source.Guest
		}
	}
	if kernel == "" {
		kernel = "unknown kernel"
	}
	if v.Source != nil && v.Source.Board != "" {
		// A board of a farm: which board, which card, which kernel.
		s := v.Source.Board
		if v.Source.Card != "" {
			s += ", " + v.Source.Card
		}
		return s + ", " + kernel
	}
	return kernel + " (" + where + ")"
}

func Median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	return stats.Summarize(vs).Median, true
}
