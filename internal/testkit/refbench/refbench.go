// Package refbench is the frame of the side-by-side benchmarks of fsbench's suites against the
// reference tools on the same filesystem (the bonnie suite against bonnie++, randio against
// fio: each suite's TestReferenceBench, FSBENCH_BENCH=1, make bench-reference): a loop device
// for the engine, both sides in one memory cgroup (MemLimit), the noise sentinel around every
// span with the bench's own memory pressure told apart from others' work, and the printed
// medians and ratios over alternating rounds.
package refbench

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/testkit/enginetest"
)

// Bench is one reference benchmark in progress.
type Bench struct {
	// Env is the engine's, on a loop device of the bench's size, with the noise sentinel.
	Env *suite.Env
	// Why counts what disturbed the spans (or, marked so, was the bench's own).
	Why Disturbances
	own ownGroup
}

// Start skips the test unless FSBENCH_BENCH=1 and the reference tools are installed (pkgs:
// their Debian packages), then readies the bench: a loop device of size bytes with an Env for
// the suites names, the test process in its memory cgroup and in a pressure group of its own.
// Everything is undone when the test ends.
func Start(t *testing.T, size uint64, names string, tools []string, pkgs string) *Bench {
	t.Helper()
	if os.Getenv("FSBENCH_BENCH") != "1" {
		t.Skipf("set FSBENCH_BENCH=1 to run the side-by-side benchmark against %s", strings.Join(tools, " and "))
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install %s)", tool, pkgs)
		}
	}
	env, done := enginetest.Env(t, size, names)
	t.Cleanup(done)
	t.Cleanup(memLimit(t, MemLimit))
	own := ownPressureGroup(t)
	t.Cleanup(own.undo)
	env.Sentinel = measure.NewSentinel(env.DeviceName)
	return &Bench{Env: env, Why: Disturbances{}, own: own}
}

// Rounds is how many rounds a side-by-side benchmark runs: 5, or FSBENCH_REF_ROUNDS.
func Rounds() int {
	if v, err := strconv.Atoi(os.Getenv("FSBENCH_REF_ROUNDS")); err == nil && v > 0 {
		return v
	}
	return 5
}

// Pressure reads the machine's and the bench's own memory stall totals.
func (b *Bench) Pressure() Pressure { return b.own.read() }

// Judge sorts what the sentinel saw in a span of wall seconds into disturbance by others and
// the bench's own memory pressure p (see ownPressureGroup), counts it under who, and says
// whether others disturbed the span.
func (b *Bench) Judge(who string, noise measure.Noise, wall float64, p Pressure) bool {
	if !noise.Busy {
		return false
	}
	others, mine := p.Split(noise.Why, wall)
	if mine != "" {
		b.Why.add(who, mine)
	}
	if others == "" {
		return false
	}
	b.Why.add(who, others)
	return true
}

// Watched runs f under the sentinel and says whether other work disturbed it.
func (b *Bench) Watched(who string, f func()) bool {
	p0 := b.own.read()
	start := time.Now()
	w := b.Env.Sentinel.Start()
	f()
	return b.Judge(who, w.Stop(), time.Since(start).Seconds(), b.own.read().Sub(p0))
}

// Disturbances counts, per span owner ("fsbench randio_seq_write", "bonnie++") and kind of
// reason (the sentinel's words with # for the figure), how many spans the sentinel found
// disturbed, with the range of the reason's figure: a list of every span's own figures was
// a hundred lines on a busy machine.
type Disturbances map[string]*reasonCount

type reasonCount struct {
	n      int
	lo, hi float64
}

var figureRE = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// add counts each comma-separated reason of a span of who.
func (d Disturbances) add(who, reasons string) {
	for _, r := range strings.Split(reasons, ", ") {
		if r == "" {
			continue
		}
		key := who + ": " + figureRE.ReplaceAllString(r, "#")
		v, _ := strconv.ParseFloat(figureRE.FindString(r), 64)
		c := d[key]
		if c == nil {
			c = &reasonCount{lo: v, hi: v}
			d[key] = c
		}
		c.n++
		c.lo, c.hi = min(c.lo, v), max(c.hi, v)
	}
}

// PrintWhy lists what the sentinel saw in the spans since the last call, and empties the
// list: a round counts as disturbed when any of its spans was disturbed by other work;
// memory pressure the bench's own 1 GiB cgroup caused is listed apart and disturbs nothing
// (both tools run in that cgroup).
func PrintWhy(why Disturbances) {
	for _, k := range slices.Sorted(maps.Keys(why)) {
		c := why[k]
		verb := "disturbed"
		if strings.Contains(k, ownMemPressure) {
			verb = "not disturbed (own)"
		}
		fmt.Printf("  %s %d× %s (# = %g to %g)\n", verb, c.n, k, c.lo, c.hi)
		delete(why, k)
	}
}

// PrintRounds prints one test's line: both sides' medians over the rounds, the median of the
// per-round ratios and their range, and how many rounds the sentinel saw disturbed (-1: not
// watched).
func PrintRounds(key string, ours, refs []map[string]float64, busy int) {
	var o, r, ratios []float64
	for i := range ours {
		a, okA := ours[i][key]
		b, okB := refs[i][key]
		if okA {
			o = append(o, a)
		}
		if okB {
			r = append(r, b)
		}
		if okA && okB && b > 0 {
			ratios = append(ratios, a/b)
		}
	}
	if len(o) == 0 && len(r) == 0 {
		return
	}
	med := func(v []float64) string {
		if len(v) == 0 {
			return "+++++"
		}
		s := stats.Summarize(v)
		return strconv.FormatFloat(s.Median, 'f', 1, 64)
	}
	ratio, span := "-", ""
	if len(ratios) > 0 {
		s := stats.Summarize(ratios)
		ratio = fmt.Sprintf("%.2f", s.Median)
		span = fmt.Sprintf("%.2f to %.2f", s.Min, s.Max)
	}
	note := ""
	if busy > 0 {
		note = fmt.Sprintf("(%d rounds disturbed by other work)", busy)
	}
	fmt.Printf("%-24s %12s %12s %8s %18s  %s\n", key, med(o), med(r), ratio, span, note)
}

// MemLimit is the memory both sides of a reference benchmark run in: a cgroup v1 memory group
// of the test process, inherited by the tools it starts. It holds the kernel's own memory too
// (cgroup v1 charges inodes and dentries to it): at 256 MiB ext4's create phase was OOM-killed
// with 184 MiB of it in use, because ext4 allocates inside a journal handle with GFP_NOFS and
// so cannot reclaim its own inodes there.
const MemLimit = 1 << 30

// memLimit moves the test process into a new cgroup v1 memory group limited to limit bytes
// (page cache included, and inherited by the tools it starts), and returns the undo. Without
// the memory controller it says so and does nothing: the block figures then include the
// page cache.
func memLimit(t *testing.T, limit uint64) func() {
	const root = "/sys/fs/cgroup/memory"
	dir := filepath.Join(root, fmt.Sprintf("fsbench-ref-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Logf("no cgroup v1 memory controller (%v): block I/O figures may come from the page cache", err)
		return func() {}
	}
	write := func(file, v string) error { return os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644) }
	if err := write("memory.limit_in_bytes", fmt.Sprint(limit)); err != nil {
		os.Remove(dir)
		t.Fatalf("memory limit: %v", err)
	}
	if err := write("cgroup.procs", fmt.Sprint(os.Getpid())); err != nil {
		os.Remove(dir)
		t.Fatalf("joining the memory cgroup: %v", err)
	}
	return func() {
		if err := os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
			t.Errorf("leaving the memory cgroup: %v", err)
		}
		// Charges left behind move to the parent; the group is empty and can go.
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the memory cgroup %s: %v", dir, err)
		}
	}
}

// Pressure is a reading of memory stall time ("some" totals, µs): the machine's
// (/proc/pressure/memory) and that of the bench's own cgroup v2 group.
type Pressure struct{ machine, own uint64 }

// Sub is the stall time from q to p.
func (p Pressure) Sub(q Pressure) Pressure {
	return Pressure{machine: p.machine - min(q.machine, p.machine), own: p.own - min(q.own, p.own)}
}

// ownMemPressure marks the memory pressure the bench caused itself in the "disturbed" lines.
const ownMemPressure = "memory pressure of the bench's own cgroup"

// Split divides the reasons the sentinel gave for a busy span of wall seconds (its Why,
// comma-separated) into those of other work and the bench's own memory pressure. The bench
// and the tools it starts run in a 1 GiB memory cgroup, so their own reclaim stalls show up
// in the machine's memory pressure: every bonnie round of the last quiet run was "disturbed"
// by it. The machine's stall time less the bench's own is a lower bound of the time others
// stalled; when that is under measure.BusyMemPSI of the span, the memory pressure is the
// bench's. Without a reading of the own group (no cgroup v2), nothing is taken out.
func (p Pressure) Split(why string, wall float64) (others, mine string) {
	var o []string
	for _, r := range strings.Split(why, ", ") {
		if r == "" {
			continue
		}
		if strings.HasPrefix(r, "memory pressure") && p.own > 0 && wall > 0 {
			othersPct := 100 * float64(p.machine-min(p.own, p.machine)) / (wall * 1e6)
			if othersPct <= measure.BusyMemPSI {
				mine = fmt.Sprintf("%s (%.0f %% of the span; others' at most %.0f %%)", ownMemPressure, 100*float64(p.own)/(wall*1e6), othersPct)
				continue
			}
		}
		o = append(o, r)
	}
	return strings.Join(o, ", "), mine
}

// ownGroup is the bench's own cgroup v2 group, there only to read its memory.pressure.
type ownGroup struct {
	dir  string // "" without cgroup v2
	undo func()
}

// read returns the machine's and the group's memory stall totals; 0 for what cannot be read.
func (g ownGroup) read() Pressure {
	var p Pressure
	p.machine = someTotal("/proc/pressure/memory")
	if g.dir != "" {
		p.own = someTotal(filepath.Join(g.dir, "memory.pressure"))
	}
	return p
}

// someTotal reads the total= of the "some" line of a PSI file, in µs.
func someTotal(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "some ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "total="); ok {
				n, _ := strconv.ParseUint(v, 10, 64)
				return n
			}
		}
	}
	return 0
}

// ownPressureGroup moves the test process (and so bonnie++ and fio, its children) into a
// cgroup v2 group of its own, beside the v1 memory group memLimit makes, so that its
// memory.pressure counts this bench's stalls alone. cgroup v2 keeps pressure files in every
// group whether or not its memory controller is there (on this kind of hybrid machine the
// controller is in v1). Without cgroup v2 it says so; the bench's own pressure then counts as
// others'.
func ownPressureGroup(t *testing.T) ownGroup {
	root := ""
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if a, rest, ok := strings.Cut(line, " - "); ok && strings.HasPrefix(rest, "cgroup2 ") {
				if f := strings.Fields(a); len(f) > 4 {
					root = f[4]
					break
				}
			}
		}
	}
	none := ownGroup{undo: func() {}}
	if root == "" {
		t.Logf("no cgroup v2 mounted: the bench's own memory pressure cannot be told from others'")
		return none
	}
	dir := filepath.Join(root, fmt.Sprintf("fsbench-ref-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Logf("cgroup v2 group %s: %v: the bench's own memory pressure cannot be told from others'", dir, err)
		return none
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.pressure")); err != nil {
		os.Remove(dir)
		t.Logf("cgroup v2 without pressure files (kernel without CONFIG_PSI?): %v", err)
		return none
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
		os.Remove(dir)
		t.Logf("joining %s: %v: the bench's own memory pressure cannot be told from others'", dir, err)
		return none
	}
	return ownGroup{dir: dir, undo: func() {
		if err := os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(fmt.Sprint(os.Getpid())), 0o644); err != nil {
			t.Errorf("leaving the cgroup v2 group: %v", err)
		}
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the cgroup v2 group %s: %v", dir, err)
		}
	}}
}
