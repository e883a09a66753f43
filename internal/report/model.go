package report

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/fsbench/fsbench/internal/results"
)

// metric is one figure a person compares across variants: a test's headline value, a
// throughput, or a per-repetition combination of several tests.
type metric struct {
	key   string // stable identifier (HTML ids, golden files)
	title string // long name, for headings
	short string // terminal column header
	unit  string
	// higherBetter is true for throughputs (MB/s), false for times and space.
	higherBetter bool
	tests        []string // the tests it is made of, for statuses ("n/a (ro)", FAILED)
	// combine turns the successful measurements of one repetition (by test) into one sample;
	// ok is false when a needed test is missing from that repetition.
	combine func(byTest map[string]results.Measurement) (v float64, ok bool)
}

// throughput is what a test moved through the filesystem per second, in MB/s. Read-write
// variants hold Copies copies of the dataset and read-only images one, so seconds would
// favour the images by the number of copies; MB/s of the same data compares them fairly.
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

// bootTime is module_load + mount of one repetition in ms. A module that is built in or
// already loaded costs nothing at boot, so its n/a counts as 0; a failed or missing
// module_load leaves the repetition out.
func bootTime(by map[string]results.Measurement) (float64, bool) {
	mnt, ok := by["mount"]
	if !ok || mnt.Value == nil {
		return 0, false
	}
	v := *mnt.Value
	if ml, ok := by["module_load"]; ok && ml.Value != nil {
		v += *ml.Value
	}
	return v * 1e3, true
}

// writeMix is the combined throughput of write, read_remove_write and video_write: their
// logical bytes over their summed wall time, so a slow test weighs by the time it takes.
func writeMix(by map[string]results.Measurement) (float64, bool) {
	var bytes uint64
	var secs float64
	for _, t := range []string{"write", "read_remove_write", "video_write"} {
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
	mBoot  = metric{"boot", "boot time (module load + mount)", "boot", "ms", false, []string{"module_load", "mount"}, bootTime}
	mMount = metric{"mount", "mount time", "mount", "ms", false, []string{"mount"}, single("mount", scaled(1e3))}
	mRead  = metric{"read", "read (rootfs tree)", "read", "MB/s", true, []string{"read"}, single("read", throughput)}
	mSeqRd = metric{"video_read", "sequential read (video files)", "seq-rd", "MB/s", true, []string{"video_read"}, single("video_read", throughput)}
	mWrite = metric{"write", "write (rootfs tree)", "write", "MB/s", true, []string{"write"}, single("write", throughput)}
	mSeqWr = metric{"video_write", "sequential write (video files)", "seq-wr", "MB/s", true, []string{"video_write"}, single("video_write", throughput)}
	mRRW   = metric{"read_remove_write", "read-write-delete", "rd-rm-wr", "MB/s", true, []string{"read_remove_write"}, single("read_remove_write", throughput)}
	mDel   = metric{"remove", "delete everything", "delete", "s", false, []string{"remove"}, single("remove", scaled(1))}
	// Space as a share of the data stored: read-write variants hold several copies of the
	// dataset and images one, so bytes alone would not compare. The bytes are in results.json.
	mSpace    = metric{"space", "space used (% of the data stored)", "space", "% data", false, []string{"used_space"}, single("used_space", extra("used_per_logical", 100))}
	mWriteMix = metric{"write_mix", "write, read-write-delete and sequential write combined", "", "MB/s", true, []string{"write", "read_remove_write", "video_write"}, writeMix}
)

// matrixMetrics are the columns of the observation matrix and of the terminal summary.
var matrixMetrics = []metric{mBoot, mMount, mRead, mSeqRd, mWrite, mSeqWr, mRRW, mDel, mSpace}

// chartMetrics are the figures charted one per test, in suite order. Tests recorded
// without logical bytes are charted by their headline value.
var chartMetrics = []metric{
	{"mkfs", "mkfs (image build for read-only filesystems)", "mkfs", "s", false, []string{"mkfs"}, single("mkfs", scaled(1))},
	{"module_load", "module load", "modload", "ms", false, []string{"module_load"}, single("module_load", scaled(1e3))},
	mMount,
	{"mount_mem", "kernel memory taken by the mount", "mnt-mem", "KiB", false, []string{"mount_mem"}, single("mount_mem", scaled(1.0/1024))},
	mWrite, mSpace, mRead, mRRW, mDel, mSeqWr, mSeqRd,
}

// samples returns one value per successful (non-warm-up) repetition of the metric.
func samples(r *results.Run, variant string, m metric) []float64 {
	byRep := map[int]map[string]results.Measurement{}
	for _, x := range r.Measurements {
		if x.Variant != variant || x.Warmup || x.Status != results.OK || !slices.Contains(m.tests, x.Test) {
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
	var vs []float64
	for _, rep := range reps {
		if v, ok := m.combine(byRep[rep]); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			vs = append(vs, v)
		}
	}
	return vs
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
}

// sameGroup reports whether two variants' figures may be compared.
func (t table) sameGroup(a, b string) bool { return t.group == nil || t.group[a] == t.group[b] }

// machineBound reports whether a metric measures the machine as much as the filesystem: times
// and rates. A QEMU guest under TCG emulates its CPU tens of times slower than the host, so its
// times say nothing against the host's; space and flash wear are counted in bytes and compare.
func machineBound(m metric) bool {
	return m.unit == "s" || m.unit == "ms" || m.unit == "MB/s"
}

func evaluate(r *results.Run, m metric, alpha float64) table {
	byVariant := map[string][]float64{}
	for _, v := range ranVariants(r) {
		if s := samples(r, v.Name, m); len(s) > 0 {
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
		cells = Rate(byVariant, m.higherBetter, alpha)
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
			maps.Copy(cells, Rate(vs, m.higherBetter, alpha))
		}
	}
	order := make([]string, 0, len(cells))
	for name := range cells {
		order = append(order, name)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := cells[order[i]], cells[order[j]]
		if a.Summary.Median != b.Summary.Median {
			if m.higherBetter {
				return a.Summary.Median > b.Summary.Median
			}
			return a.Summary.Median < b.Summary.Median
		}
		return order[i] < order[j]
	})
	return table{m: m, cells: cells, order: order, group: group}
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
