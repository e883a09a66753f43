package report

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// metric is one figure a person compares across variants: a test's figure as the catalog
// describes it, or a per-repetition combination of several tests.
type metric struct {
	key   string // stable identifier (HTML ids, golden files)
	title string // long name, for headings
	short string // terminal column header
	label string // column name in the HTML matrix
	unit  string
	// better says which way the figure is better: higher for throughputs (MB/s), lower for
	// times and space.
	better catalog.Direction
	// quantity says whether the figure measures the machine (times, rates) or counts (bytes).
	quantity catalog.Quantity
	tests    []string // the tests it is made of, for statuses ("n/a (ro)", FAILED)
	// combine turns the successful measurements of one repetition (by test) into one sample;
	// ok is false when a needed test is missing from that repetition.
	combine func(byTest map[string]results.Measurement) (v float64, ok bool)
	// withNA gives combine the repetition's n/a measurements too: boot time must see a
	// module_load that says why it timed nothing (built in: 0; left loaded: no cold boot).
	withNA bool
	// tiebreak, when set, orders variants whose medians are equal (lower is better): without
	// it they go by name, which once made btrfs, with unrecoverable cuts, the power-loss
	// winner over ext4 with none, at the same share of whole cuts.
	tiebreak func(r *results.Run, variant string) float64
}

// higherBetter reports whether a larger figure is better (a rate, a lifetime).
func (m metric) higherBetter() bool { return m.better == catalog.HigherIsBetter }

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

func single(test string, f func(results.Measurement) (float64, bool)) func(map[string]results.Measurement) (float64, bool) {
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

// testMetric is the figure the catalog says the report shows for a test.
func testMetric(name string) metric {
	t := catalog.Get(name)
	f := t.Figure
	if f == nil {
		panic("report: the catalog has no figure for " + name)
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
		panic("report: the catalog's figure for " + name + " has no source")
	}
	return metric{key: f.Key, title: f.Title, short: f.Short, label: f.Label, unit: f.Unit,
		better: f.Better, quantity: f.Quantity, tests: []string{name}, combine: single(name, get)}
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
	for _, t := range writeTests {
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
	mBoot = metric{key: "boot", title: "boot time (module load + mount)", short: "boot", label: "boot time", unit: "ms",
		better: catalog.LowerIsBetter, quantity: catalog.Time, tests: []string{catalog.ModuleLoad, catalog.Mount}, combine: bootTime, withNA: true}
	mMount = testMetric(catalog.Mount)
	mRead  = testMetric(catalog.Read)
	mSeqRd = testMetric(catalog.VideoRead)
	mWrite = testMetric(catalog.Write)
	mSeqWr = testMetric(catalog.VideoWrite)
	mRRW   = testMetric(catalog.ReadRemoveWrite)
	mDel   = testMetric(catalog.Remove)
	// Space as a share of the data stored (see the catalog); the bytes are in results.json.
	mSpace    = testMetric(catalog.UsedSpace)
	mWriteMix = metric{key: "write_mix", title: "write, read-write-delete and sequential write combined", unit: "MB/s",
		better: catalog.HigherIsBetter, quantity: catalog.Rate, tests: writeTests, combine: writeMix}
)

// matrixMetrics are the columns of the observation matrix and of the terminal summary.
var matrixMetrics = []metric{mBoot, mMount, mRead, mSeqRd, mWrite, mSeqWr, mRRW, mDel, mSpace}

// chartMetrics are the figures charted one per test: every test of the bootlin suite the
// catalog gives a figure, in the order they run. Tests recorded without logical bytes are
// charted by their headline value.
var chartMetrics = func() []metric {
	var out []metric
	for _, name := range catalog.MustSuite(catalog.SuiteBootlin).Order() {
		if catalog.Get(name).Figure != nil {
			out = append(out, testMetric(name))
		}
	}
	return out
}()

// samples returns one value per successful (non-warm-up) repetition of the metric.
func samples(r *results.Run, variant string, m metric) []float64 {
	return sampleSet(r, variant, m).all
}

// repSamples are a variant's samples of a metric: all of them, and those of the repetitions in
// which no measurement of the metric was taken while the machine was busy with other work.
type repSamples struct {
	all, clean []float64
	busy       int      // repetitions with a disturbed measurement
	why        []string // what disturbed them, in the sentinel's words
}

func sampleSet(r *results.Run, variant string, m metric) repSamples {
	byRep := map[int]map[string]results.Measurement{}
	for _, x := range r.Measurements {
		if x.Variant != variant || x.Warmup || !(x.Status == results.OK || m.withNA && x.Status == results.NA) || !slices.Contains(m.tests, x.Test) {
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
		v, ok := m.combine(byRep[rep])
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		out.all = append(out.all, v)
		var why []string
		for _, x := range byRep[rep] {
			if x.Disturbed() {
				why = append(why, x.Noise.Why)
			}
		}
		if len(why) == 0 {
			out.clean = append(out.clean, v)
			continue
		}
		out.busy++
		out.why = append(out.why, why...)
	}
	return out
}

// status is the text of a cell without data: why there is no figure.
func status(r *results.Run, variant string, m metric) string {
	var failed, notRun, ro, na bool
	var note string
	for _, t := range m.tests {
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

// ranVariants returns the variants that were not skipped, in the results' order.
func ranVariants(r *results.Run) []results.Variant {
	var out []results.Variant
	for _, v := range r.Variants {
		if v.Status != results.Skipped {
			out = append(out, v)
		}
	}
	return out
}

// present reports whether any of the metric's tests appears in the results.
func present(r *results.Run, m metric) bool {
	for _, x := range r.Measurements {
		if slices.Contains(m.tests, x.Test) {
			return true
		}
	}
	return false
}

// table is a metric evaluated for every variant that ran: samples, summary and rating.
type table struct {
	m     metric
	cells map[string]Rated // by variant; absent when there is no data
	order []string         // variants with data, best first
	// group maps each variant to where it ran when the rows of a merged run came from
	// different kernels or machines and the metric is a time or a rate: those are rated, and
	// compared in verdicts, only within their group. nil when all rows compare.
	group map[string]string
	// busy counts, per variant, the repetitions measured while the machine was busy with other
	// work (the noise sentinel), and why says with what; clean tables (evaluateClean) leave
	// those repetitions out.
	busy map[string]int
	why  []string
	// dropped are the variants a clean table left out: every repetition of theirs was
	// disturbed.
	dropped []string
}

// sameGroup reports whether two variants' figures may be compared.
func (t table) sameGroup(a, b string) bool { return t.group == nil || t.group[a] == t.group[b] }

// machineBound reports whether a metric measures the machine as much as the filesystem: times
// and rates. A QEMU guest under TCG emulates its CPU tens of times slower than the host, so its
// times say nothing against the host's; space and flash wear are counted in bytes and compare.
func machineBound(m metric) bool {
	return m.quantity.MachineBound()
}

// evaluate rates every variant's samples of m (the matrix, the charts).
func evaluate(r *results.Run, m metric, alpha float64) table {
	return evaluateWith(r, m, alpha, false)
}

// evaluateClean is evaluate on the repetitions no busy machine disturbed, for times and rates:
// what verdicts are drawn from, so that a load that came and went never decides which
// filesystem wins. Bytes (space, flash wear) count the same however busy the machine was.
func evaluateClean(r *results.Run, m metric, alpha float64) table {
	return evaluateWith(r, m, alpha, machineBound(m))
}

func evaluateWith(r *results.Run, m metric, alpha float64, clean bool) table {
	byVariant := map[string][]float64{}
	busy := map[string]int{}
	var why, dropped []string
	for _, v := range ranVariants(r) {
		ss := sampleSet(r, v.Name, m)
		s := ss.all
		if clean {
			s = ss.clean
			if len(ss.all) > 0 && len(ss.clean) == 0 {
				dropped = append(dropped, v.Name)
			}
		}
		// A busy machine only matters to figures it can bend (times and rates): counts such
		// as space, flash wear and card time are the same however busy it was, so their cells
		// are not marked and their verdicts leave nothing out.
		if ss.busy > 0 && machineBound(m) {
			busy[v.Name] = ss.busy
			why = append(why, ss.why...)
		}
		if len(s) > 0 {
			byVariant[v.Name] = s
		}
	}
	var group map[string]string
	if src := sources(r); src != nil && machineBound(m) {
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
		cells = Rate(byVariant, m.higherBetter(), alpha)
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
			maps.Copy(cells, Rate(vs, m.higherBetter(), alpha))
		}
	}
	order := make([]string, 0, len(cells))
	for name := range cells {
		order = append(order, name)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := cells[order[i]], cells[order[j]]
		if a.Summary.Median != b.Summary.Median {
			if m.higherBetter() {
				return a.Summary.Median > b.Summary.Median
			}
			return a.Summary.Median < b.Summary.Median
		}
		if m.tiebreak != nil {
			if ta, tb := m.tiebreak(r, order[i]), m.tiebreak(r, order[j]); ta != tb {
				return ta < tb
			}
		}
		return order[i] < order[j]
	})
	return table{m: m, cells: cells, order: order, group: group, busy: busy, why: why, dropped: dropped}
}

// repetitions is the largest number of non-warm-up repetitions recorded for any cell.
func repetitions(r *results.Run) int {
	reps := map[int]bool{}
	for _, x := range r.Measurements {
		if !x.Warmup {
			reps[x.Rep] = true
		}
	}
	return len(reps)
}
