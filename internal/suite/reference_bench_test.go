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
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/report"
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
	env.Params.Bonnie.FileSize = refFileSize
	env.Params.Bonnie.Files = refFiles * 1024
	env.Params.Randio.FileSize, env.Params.Randio.Runtime = 256<<20, plan.Duration{Duration: 10 * time.Second}
	env.Sentinel = measure.NewSentinel(env.DeviceName)
	k, _ := fs.Lookup("ext4")
	ctx := context.Background()
	v := plan.Variant{Name: "ext4", FS: "ext4"}

	// One side of a round: fsbench's bonnie suite on a fresh filesystem (RunRepetition makes
	// it), or bonnie++ on one made the same way.
	type side = map[string]float64 // test → figure (and test+"/nosync")
	why := map[string]int{}        // what the sentinel saw in disturbed spans → how often
	ourRound := func() (side, bool) {
		got, busy := side{}, false
		err := RunRepetition(ctx, env, Job{Variant: v, Kind: k}, 1, false, func(m results.Measurement) error {
			if m.Value != nil {
				got[m.Test] = *m.Value
			}
			if ns, ok := m.Extra["rate_before_sync"]; ok {
				got[m.Test+"/nosync"] = ns
			}
			if m.Disturbed() {
				busy = true
				why[m.Test+": "+m.Noise.Why]++
			}
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
			w := env.Sentinel.Start()
			out, err := exec.Command(cmd[0], cmd[1:]...).Output()
			if noise := w.Stop(); noise.Busy {
				busy = true
				why["bonnie++: "+noise.Why]++
			}
			if err != nil {
				t.Fatalf("%s: %v", strings.Join(cmd, " "), err)
			}
			recs, err := report.ParseBonnieCSV(bytes.NewReader(lastLine(out)))
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
	for i := 0; i < rounds; i++ {
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
	fmt.Printf("%-24s %12s %12s %8s %18s  %s\n", "test", "fsbench", "bonnie++", "ratio", "range of rounds", "")
	for _, p := range pairs {
		for _, key := range []string{p.test, p.test + "/nosync"} {
			printRounds(key, ours, refs, busyRounds)
		}
	}
	// Which spans were disturbed and by what: a round counts as disturbed when any of its
	// tests was, and the reader needs to know whether that was another process or the
	// benchmark's own memory limit.
	for _, w := range slices.Sorted(maps.Keys(why)) {
		fmt.Printf("  disturbed %d× %s\n", why[w], w)
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
				}
			}
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.Jobs) != 1 {
			t.Fatalf("fio output: %v", err)
		}
		io := res.Jobs[0].Write
		if res.Jobs[0].Read.IOPS > 0 {
			io = res.Jobs[0].Read
		}
		return io.IOPS, io.BwBytes, "fio " + strings.Join(args, " ")
	}
	var seqOurs, seqRefs []side
	var fcmd string
	for i := 0; i < rounds; i++ {
		// Both sides time the same span: fio lays its file out (unlink, create, fallocate)
		// before its clock starts and counts its end_fsync in the bandwidth, and fsbench's
		// randio suite times seqWriteDirect, fsync included, after layOutSeqFile. Before, this
		// side left the fsync out (the writes' own time, p.work): with the loop device's flush
		// reaching the host's page cache, that alone made fsbench 1.05 to 1.33 times fio's
		// figure from one run to the next.
		ourSeq := func() side {
			if err := layOutSeqFile(osOps{}, fioFile, 256<<20); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			p, _, err := seqWriteDirect(ctx, osOps{}, fioFile, 256<<20, 512<<10)
			if err != nil {
				t.Fatal(err)
			}
			return side{RandSeqWrite: float64(p.bytes) / 1e6 / time.Since(start).Seconds()}
		}
		refSeq := func() side {
			os.Remove(fioFile)
			var bw float64
			_, bw, fcmd = fio("--name="+RandSeqWrite, "--rw=write", "--bs=512k", "--size=256M", "--end_fsync=1")
			return side{RandSeqWrite: bw / 1e6}
		}
		if i%2 == 0 {
			seqOurs, seqRefs = append(seqOurs, ourSeq()), append(seqRefs, refSeq())
		} else {
			seqRefs, seqOurs = append(seqRefs, refSeq()), append(seqOurs, ourSeq())
		}
	}
	fmt.Println(fcmd)
	fmt.Printf("%-24s %12s %12s %8s %18s\n", "test", "fsbench", "fio", "ratio", "range of rounds")
	printRounds(RandSeqWrite, seqOurs, seqRefs, -1)
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
		for i := 0; i < randRounds; i++ {
			ourRound := func() side {
				p, _, err := randomIO(ctx, osOps{}, fioFile, 256<<20, 4096, j.write, roundSecs*time.Second, 1<<30, uint64(i)+2)
				if err != nil {
					t.Fatal(err)
				}
				return side{j.test: float64(p.ops) / p.work.Seconds()}
			}
			fioRound := func() side {
				var iops float64
				iops, _, fcmd = fio(append([]string{"--name=" + j.test, "--bs=4k", "--size=256M", fmt.Sprintf("--runtime=%d", roundSecs), "--time_based"}, j.args...)...)
				return side{j.test: iops}
			}
			if i%2 == 0 { // ABBA: neither side always goes first
				o, r = append(o, ourRound()), append(r, fioRound())
			} else {
				r, o = append(r, fioRound()), append(o, ourRound())
			}
		}
		fmt.Println(fcmd)
		printRounds(j.test, o, r, -1)
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
