package suite

import (
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/fsbench/fsbench/internal/export"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
)

// TestReferenceBench (FSBENCH_BENCH=1, root, bonnie++ and fio installed) runs fsbench's bonnie
// and randio tests and bonnie++ and fio with the same jobs on the same filesystem, in
// alternating rounds, and prints per test fsbench's median, the reference's, the median of the
// per-round ratios with their range, and whether the noise sentinel saw other work during a
// round. Goals on a quiet machine: bonnie within 15 %, randio within 10 %. It reports; it fails
// only when a tool fails.
//
// What makes the two sides measure the same work:
//   - Memory: the whole test process (fsbench's tests, and bonnie++ and fio, its children)
//     runs in a cgroup v1 memory group limited to refMemLimit (bonnie++'s -r says the same),
//     and the block I/O file is 8 times that. fsbench drops the cache before its read and
//     seek tests; bonnie++ reads and seeks with whatever the cache still holds, and with a
//     file twice the limit half of its random seeks were hits (+++++). On a 24 GiB machine
//     without the limit bonnie++'s figures would be the page cache's.
//   - sync: bonnie++ ends each create and delete phase with sync(2), which waits for every
//     filesystem of the machine (other users' builds, other loop devices), while fsbench
//     syncs only the filesystem under test (syncfs). bonnie++'s file tests run under strace
//     (system call sync only, through seccomp), and the time of each sync is taken out of its
//     figure for the "nosync" comparison, which fsbench's rate_before_sync matches. Its block
//     tests run without strace, which slowed its seek processes down 2-3 times. Its block
//     write and rewrite end with fsync(2) on close, as fsbench's end with syncfs.
//   - Files: 256 × 1024 of them, so that even the stat phases take more than the 0.5 s under
//     which both tools print no figure (+++++).
//   - Load: rounds alternate which side goes first (ABBA), each on a freshly made filesystem,
//     and the figures are medians over the rounds, so that other load weighs on both sides.
func TestReferenceBench(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") != "1" {
		t.Skip("set FSBENCH_BENCH=1 to run the side-by-side benchmark against bonnie++ and fio")
	}
	for _, tool := range []string{"bonnie++", "fio"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install bonnie++ fio)", tool)
		}
	}
	const size = 12 << 30 // room for the file, and inodes for the files (ext4: one per 16 KiB)
	rounds := 5
	if v, err := strconv.Atoi(os.Getenv("FSBENCH_REF_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	env, done := mounted(t, size, "bonnie,randio")
	defer done()
	defer memLimit(t, refMemLimit)()
	own := ownPressureGroup(t)
	defer own.undo()
	for _, s := range []struct {
		suite, key string
		v          any
	}{{"bonnie", "file_size_bytes", refFileSize}, {"bonnie", "files", refFiles * 1024},
		{"randio", "file_size_bytes", 256 << 20}, {"randio", "runtime", "10s"}} {
		if err := env.Params.Set(s.suite, s.key, s.v); err != nil {
			t.Fatal(err)
		}
	}
	env.Sentinel = measure.NewSentinel(env.DeviceName)
	k, _ := fs.Lookup("ext4")
	ctx := context.Background()
	v := plan.Variant{Name: "ext4", FS: "ext4"}

	// One side of a round: fsbench's bonnie suite on a fresh filesystem (RunRepetition makes
	// it), or bonnie++ on one made the same way.
	type side = map[string]float64 // test → figure (and test+"/nosync")
	why := disturbances{}          // what disturbed the spans (or, marked so, was the bench's own)
	// judge sorts what the sentinel saw in a span of wall seconds into disturbance by others
	// and the bench's own memory pressure (see ownPressureGroup), and counts it under who.
	judge := func(who string, noise measure.Noise, wall float64, p pressure) bool {
		if !noise.Busy {
			return false
		}
		others, mine := p.split(noise.Why, wall)
		if mine != "" {
			why.add(who, mine)
		}
		if others == "" {
			return false
		}
		why.add(who, others)
		return true
	}
	// watched runs f under the sentinel and says whether other work disturbed it.
	watched := func(who string, f func()) bool {
		p0 := own.read()
		start := time.Now()
		w := env.Sentinel.Start()
		f()
		return judge(who, w.Stop(), time.Since(start).Seconds(), own.read().sub(p0))
	}
	ourRound := func() (side, bool) {
		got, busy := side{}, false
		p0 := own.read()
		err := RunRepetition(ctx, env, Job{Variant: v, Kind: k}, 1, false, func(m results.Measurement) error {
			if m.Value != nil {
				got[m.Test] = *m.Value
			}
			if ns, ok := m.Extra["rate_before_sync"]; ok {
				got[m.Test+"/nosync"] = ns
			}
			// The pressure since the previous measurement ended: the test's span and the
			// untimed preparation before it, a superset, so that others' share is if
			// anything overstated.
			p1 := own.read()
			if m.Noise != nil {
				n := measure.Noise{Busy: m.Noise.Busy, Why: m.Noise.Why}
				if judge(m.Test, n, m.WallSeconds, p1.sub(p0)) {
					busy = true
				}
			}
			p0 = p1
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, busy
	}
	// bonnie++ runs twice per round: its block tests (-n 0), then its file tests (-s 0), the
	// same phases in the same order as one run. Only the file tests run under strace, which
	// times their sync(2) calls: under strace -f the block tests' three seek processes ran at
	// 5,580-7,281 seeks/s and 163-178 % CPU against more than 16,000 (+++++) without it.
	common := []string{"-d", env.Mountpoint, "-r", fmt.Sprint(refMemLimit >> 20), "-u", "root", "-f", "-q", "-x", "1", "-m", "ext4"}
	blockCmd := append([]string{"bonnie++", "-s", fmt.Sprintf("%d:8192:8192:3", refFileSize>>20), "-n", "0"}, common...)
	fileCmd := append([]string{"bonnie++", "-s", "0", "-n", fmt.Sprintf("%d:0:0:1", refFiles)}, common...)
	pairs := []struct {
		test, field string
		sync        int // index of bonnie++'s sync(2) in the phase, or -1
	}{
		{BonnieWrite, "put_block", -1}, {BonnieRewrite, "rewrite", -1}, {BonnieRead, "get_block", -1}, {BonnieSeeks, "seeks", -1},
		{BonnieSeqCreate, "seq_create", 0}, {BonnieSeqStat, "seq_stat", -1}, {BonnieSeqDelete, "seq_del", 1},
		{BonnieRandCreate, "ran_create", 2}, {BonnieRandStat, "ran_stat", -1}, {BonnieRandDelete, "ran_del", 3},
	}
	refRound := func() (side, bool) {
		if err := fs.Mkfs(ctx, env.Run, k, env.Device, nil); err != nil {
			t.Fatal(err)
		}
		if err := fs.Mount(ctx, k, env.Device, env.Mountpoint, ""); err != nil {
			t.Fatal(err)
		}
		defer fs.Unmount(context.Background(), k, env.Mountpoint)
		syncLog := filepath.Join(t.TempDir(), "sync.strace")
		traced := fileCmd
		if _, err := exec.LookPath("strace"); err == nil {
			traced = append([]string{"strace", "-f", "--seccomp-bpf", "-T", "-e", "trace=sync", "-o", syncLog}, fileCmd...)
		}
		fields, busy := map[string]string{}, false
		for _, cmd := range [][]string{blockCmd, traced} {
			var out []byte
			var err error
			if watched("bonnie++", func() { out, err = exec.Command(cmd[0], cmd[1:]...).Output() }) {
				busy = true
			}
			if err != nil {
				t.Fatalf("%s: %v", strings.Join(cmd, " "), err)
			}
			recs, err := export.ParseBonnieCSV(bytes.NewReader(lastLine(out)))
			if err != nil || len(recs) != 1 {
				t.Fatalf("bonnie++ output %q: %v", out, err)
			}
			for k, v := range recs[0] {
				if v != "" {
					fields[k] = v
				}
			}
		}
		syncs := syncTimes(syncLog) // seq create, seq delete, random create, random delete
		got := side{}
		for _, p := range pairs {
			r, err := strconv.ParseFloat(fields[p.field], 64)
			if err != nil || r <= 0 {
				continue // +++++: under 0.5 s
			}
			got[p.test] = r
			if p.sync >= 0 && p.sync < len(syncs) {
				files := float64(refFiles * 1024)
				if secs := files/r - syncs[p.sync]; secs > 0 {
					got[p.test+"/nosync"] = files / secs
				}
			}
		}
		return got, busy
	}
	fmt.Printf("bonnie++: %s\n          %s (under strace -e trace=sync)\n  (RAM %d MiB; memory cgroup limit %d MiB; %d rounds, alternating which side goes first)\n",
		strings.Join(blockCmd, " "), strings.Join(fileCmd, " "), mustRAM()>>20, refMemLimit>>20, rounds)
	var ours, refs []side
	busyRounds := 0
	// FSBENCH_REF_ONLY=fio runs the randio half alone (the bonnie half takes about 9 minutes).
	bonnieRounds := rounds
	if os.Getenv("FSBENCH_REF_ONLY") == "fio" {
		bonnieRounds = 0
	}
	for i := 0; i < bonnieRounds; i++ {
		var o, r side
		var ob, rb bool
		if i%2 == 0 {
			o, ob = ourRound()
			r, rb = refRound()
		} else {
			r, rb = refRound()
			o, ob = ourRound()
		}
		ours, refs = append(ours, o), append(refs, r)
		if ob || rb {
			busyRounds++
		}
	}
	if bonnieRounds > 0 {
		fmt.Printf("%-24s %12s %12s %8s %18s  %s\n", "test", "fsbench", "bonnie++", "ratio", "range of rounds", "")
		for _, p := range pairs {
			for _, key := range []string{p.test, p.test + "/nosync"} {
				printRounds(key, ours, refs, busyRounds)
			}
		}
		printWhy(why)
	}

	// randio against fio: the sequential write once per round, then the random jobs in
	// alternating short rounds on fio's own file (same file, same preconditioning: fio's
	// sequential write laid it out).
	fioFile := filepath.Join(env.Mountpoint, "fio.file")
	if err := fs.Mkfs(ctx, env.Run, k, env.Device, nil); err != nil {
		t.Fatal(err)
	}
	if err := fs.Mount(ctx, k, env.Device, env.Mountpoint, ""); err != nil {
		t.Fatal(err)
	}
	defer fs.Unmount(context.Background(), k, env.Mountpoint)
	var fioClat [2]float64 // the last write job's completion latency per write: p50 and mean, µs
	fio := func(args ...string) (iops, bw float64, cmd string) {
		args = append([]string{"--filename=" + fioFile, "--direct=1", "--iodepth=1", "--ioengine=psync", "--output-format=json"}, args...)
		out, err := exec.Command("fio", args...).Output()
		if err != nil {
			t.Fatalf("fio %s: %v", strings.Join(args, " "), err)
		}
		var res struct {
			Jobs []struct {
				Read, Write struct {
					BwBytes float64 `json:"bw_bytes"`
					IOPS    float64 `json:"iops"`
					Clat    struct {
						Mean        float64            `json:"mean"`
						Percentiles map[string]float64 `json:"percentile"`
					} `json:"clat_ns"`
				}
			}
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.Jobs) != 1 {
			t.Fatalf("fio output: %v", err)
		}
		io := res.Jobs[0].Write
		fioClat = [2]float64{io.Clat.Percentiles["50.000000"] / 1e3, io.Clat.Mean / 1e3}
		if res.Jobs[0].Read.IOPS > 0 {
			io = res.Jobs[0].Read
		}
		return io.IOPS, io.BwBytes, "fio " + strings.Join(args, " ")
	}
	var seqOurs, seqRefs []side
	var fcmd string
	seqBusy := 0
	// seqSize makes the sequential write last over a second on this host's loop device
	// (1.2-1.4 GB/s): at 256 MiB it took 0.19 s, under the randio suite's own floor
	// (MinMeasure, 0.5 s: "too fast to measure"), and the rounds of one quiet run spread
	// from 0.95 to 1.36 of fio's figure.
	const seqSize = 2 << 30
	// Per-write latency of the sequential write, p50 and mean, µs, per round: where the two
	// differ, the time a write takes from outside does (docs/agreement.md).
	var ourLat, refLat [][2]float64
	for i := 0; i < rounds; i++ {
		// Both sides time the same span: fio lays its file out (unlink, create, fallocate)
		// before its clock starts and counts its end_fsync in the bandwidth, and fsbench's
		// randio suite times seqWriteDirect, fsync included, after layOutSeqFile. Before, this
		// side left the fsync out (the writes' own time, p.work): with the loop device's flush
		// reaching the host's page cache, that alone made fsbench 1.05 to 1.33 times fio's
		// figure from one run to the next.
		busy := false
		ourSeq := func() side {
			if err := layOutSeqFile(osOps{}, fioFile, seqSize); err != nil {
				t.Fatal(err)
			}
			var mbps float64
			busy = watched("fsbench "+RandSeqWrite, func() {
				start := time.Now()
				p, _, err := seqWriteDirect(ctx, osOps{}, fioFile, seqSize, 512<<10)
				if err != nil {
					t.Fatal(err)
				}
				mbps = float64(p.bytes) / 1e6 / time.Since(start).Seconds()
				ourLat = append(ourLat, [2]float64{p.lat.quantile(0.5) * 1e6, p.work.Seconds() * 1e6 / float64(max(1, p.ops))})
			}) || busy
			return side{RandSeqWrite: mbps}
		}
		refSeq := func() side {
			os.Remove(fioFile)
			var bw float64
			busy = watched("fio "+RandSeqWrite, func() {
				_, bw, fcmd = fio("--name="+RandSeqWrite, "--rw=write", "--bs=512k", fmt.Sprintf("--size=%dM", seqSize>>20), "--end_fsync=1")
			}) || busy
			refLat = append(refLat, fioClat)
			return side{RandSeqWrite: bw / 1e6}
		}
		if i%2 == 0 {
			seqOurs, seqRefs = append(seqOurs, ourSeq()), append(seqRefs, refSeq())
		} else {
			seqRefs, seqOurs = append(seqRefs, refSeq()), append(seqOurs, ourSeq())
		}
		if busy {
			seqBusy++
		}
	}
	fmt.Println(fcmd)
	fmt.Printf("%-24s %12s %12s %8s %18s\n", "test", "fsbench", "fio", "ratio", "range of rounds")
	printRounds(RandSeqWrite, seqOurs, seqRefs, seqBusy)
	latCol := func(l [][2]float64, i int) string {
		var xs []float64
		for _, x := range l {
			xs = append(xs, x[i])
		}
		slices.Sort(xs)
		if len(xs) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f (%.0f to %.0f)", xs[len(xs)/2], xs[0], xs[len(xs)-1])
	}
	fmt.Printf("  per 512 KiB write, µs, median of rounds (range): fsbench p50 %s, mean %s; fio clat p50 %s, mean %s\n",
		latCol(ourLat, 0), latCol(ourLat, 1), latCol(refLat, 0), latCol(refLat, 1))
	const randRounds, roundSecs = 10, 2
	for _, j := range []struct {
		test  string
		write bool
		args  []string
	}{
		{RandWrite4K, true, []string{"--rw=randwrite", "--end_fsync=1"}},
		{RandRead4K, false, []string{"--rw=randread"}},
	} {
		var o, r []side
		randBusy := 0
		for i := 0; i < randRounds; i++ {
			busy := false
			// The whole call is timed, its fsync included, as the randio suite's measurement
			// and fio's end_fsync=1 are.
			ourRound := func() side {
				var iops float64
				busy = watched("fsbench "+j.test, func() {
					start := time.Now()
					p, _, err := randomIO(ctx, osOps{}, fioFile, 256<<20, 4096, j.write, roundSecs*time.Second, 1<<30, uint64(i)+2)
					if err != nil {
						t.Fatal(err)
					}
					iops = float64(p.ops) / time.Since(start).Seconds()
				}) || busy
				return side{j.test: iops}
			}
			fioRound := func() side {
				var iops float64
				busy = watched("fio "+j.test, func() {
					iops, _, fcmd = fio(append([]string{"--name=" + j.test, "--bs=4k", "--size=256M", fmt.Sprintf("--runtime=%d", roundSecs), "--time_based"}, j.args...)...)
				}) || busy
				return side{j.test: iops}
			}
			if i%2 == 0 { // ABBA: neither side always goes first
				o, r = append(o, ourRound()), append(r, fioRound())
			} else {
				r, o = append(r, fioRound()), append(o, ourRound())
			}
			if busy {
				randBusy++
			}
		}
		fmt.Println(fcmd)
		printRounds(j.test, o, r, randBusy)
	}
	printWhy(why)
}

// disturbances counts, per span owner ("fsbench randio_seq_write", "bonnie++") and kind of
// reason (the sentinel's words with # for the figure), how many spans the sentinel found
// disturbed, with the range of the reason's figure: a list of every span's own figures was
// a hundred lines on a busy machine.
type disturbances map[string]*reasonCount

type reasonCount struct {
	n      int
	lo, hi float64
}

var figureRE = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

// add counts each comma-separated reason of a span of who.
func (d disturbances) add(who, reasons string) {
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

// printWhy lists what the sentinel saw in the spans since the last call, and empties the
// list: a round counts as disturbed when any of its spans was disturbed by other work;
// memory pressure the bench's own 1 GiB cgroup caused is listed apart and disturbs nothing
// (both tools run in that cgroup).
func printWhy(why disturbances) {
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

// printRounds prints one test's line: both sides' medians over the rounds, the median of the
// per-round ratios and their range, and how many rounds the sentinel saw disturbed (-1: not
// watched).
func printRounds(key string, ours, refs []map[string]float64, busy int) {
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

// The reference benchmark's sizes: a memory limit, a block I/O file 8 times that (so that at
// most an eighth of bonnie++'s random seeks find their chunk in the cache), and the file count
// of the create tests in bonnie++'s units of 1024. The limit holds the kernel's own memory too
// (cgroup v1 charges inodes and dentries to it): at 256 MiB ext4's create phase was OOM-killed
// with 184 MiB of it in use, because ext4 allocates inside a journal handle with GFP_NOFS and
// so cannot reclaim its own inodes there.
const (
	refMemLimit = 1 << 30
	refFileSize = 8 << 30
	refFiles    = 256
)

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

// syncTimes reads strace -T output and returns the duration of each sync(2) in seconds, in
// order (none when strace did not run).
func syncTimes(path string) []float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []float64
	for _, line := range strings.Split(string(b), "\n") {
		i, j := strings.LastIndex(line, "<"), strings.LastIndex(line, ">")
		if !strings.Contains(line, "sync()") || i < 0 || j < i {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:j], 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}

func lastLine(b []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return []byte(lines[len(lines)-1] + "\n")
}

// pressure is a reading of memory stall time ("some" totals, µs): the machine's
// (/proc/pressure/memory) and that of the bench's own cgroup v2 group.
type pressure struct{ machine, own uint64 }

func (p pressure) sub(q pressure) pressure {
	return pressure{machine: p.machine - min(q.machine, p.machine), own: p.own - min(q.own, p.own)}
}

// ownMemPressure marks the memory pressure the bench caused itself in the "disturbed" lines.
const ownMemPressure = "memory pressure of the bench's own cgroup"

// split divides the reasons the sentinel gave for a busy span of wall seconds (its Why,
// comma-separated) into those of other work and the bench's own memory pressure. The bench
// and the tools it starts run in a 1 GiB memory cgroup, so their own reclaim stalls show up
// in the machine's memory pressure: every bonnie round of the last quiet run was "disturbed"
// by it. The machine's stall time less the bench's own is a lower bound of the time others
// stalled; when that is under measure.BusyMemPSI of the span, the memory pressure is the
// bench's. Without a reading of the own group (no cgroup v2), nothing is taken out.
func (p pressure) split(why string, wall float64) (others, mine string) {
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
func (g ownGroup) read() pressure {
	var p pressure
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

// TestPressureSplit: memory pressure that the bench's own cgroup accounts for is its own, not
// a disturbance; the machine's beyond it, and every other reason, are others'.
func TestPressureSplit(t *testing.T) {
	const wall = 10.0 // s: 1e7 µs, so 1e5 µs is 1 %
	for _, c := range []struct {
		name          string
		why           string
		p             pressure
		others        string
		wantOwnMarked bool
	}{
		{"all the machine's stall is the bench's", "memory pressure 30 %", pressure{machine: 3e6, own: 3e6}, "", true},
		{"others stalled 2 % beside it: still the bench's", "memory pressure 32 %", pressure{machine: 3.2e6, own: 3e6}, "", true},
		{"others stalled 10 %: theirs", "memory pressure 40 %", pressure{machine: 4e6, own: 3e6}, "memory pressure 40 %", false},
		{"no reading of the own group: others'", "memory pressure 30 %", pressure{machine: 3e6}, "memory pressure 30 %", false},
		{"other reasons stay", "steal 9 %, memory pressure 30 %, other disks 9 MB/s", pressure{machine: 3e6, own: 3e6},
			"steal 9 %, other disks 9 MB/s", true},
	} {
		others, mine := c.p.split(c.why, wall)
		if others != c.others || (mine != "") != c.wantOwnMarked || (mine != "" && !strings.Contains(mine, ownMemPressure)) {
			t.Errorf("%s: split(%q) = %q, %q; want others %q, own marked %v", c.name, c.why, others, mine, c.others, c.wantOwnMarked)
		}
	}
}

// TestDisturbances: spans are counted per owner and kind of reason, with the range of the
// figures, not listed one by one.
func TestDisturbances(t *testing.T) {
	d := disturbances{}
	d.add("fio randio_seq_write", "other processes 92 % of a CPU, other disks 45.8 MB/s")
	d.add("fio randio_seq_write", "other processes 121 % of a CPU")
	d.add("bonnie++", "")
	want := map[string]reasonCount{
		"fio randio_seq_write: other processes # % of a CPU": {n: 2, lo: 92, hi: 121},
		"fio randio_seq_write: other disks # MB/s":           {n: 1, lo: 45.8, hi: 45.8},
	}
	if len(d) != len(want) {
		t.Fatalf("%d kinds counted, want %d: %v", len(d), len(want), slices.Collect(maps.Keys(d)))
	}
	for k, w := range want {
		if c := d[k]; c == nil || *c != w {
			t.Errorf("%s: %+v, want %+v", k, c, w)
		}
	}
}
