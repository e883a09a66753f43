package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
)

// TestReferenceBench (FSBENCH_BENCH=1, root, bonnie++ and fio installed) runs fsbench's bonnie
// and randio tests and then bonnie++ and fio with the same jobs on the same filesystem, and
// prints the ratios fsbench ÷ reference with the exact commands. Goals: bonnie within 15 %,
// randio within 10 %. It reports; it fails only when a tool fails.
//
// Three things make the two sides measure the same work on a shared machine:
//   - Memory: the whole test process (fsbench's tests, and bonnie++ and fio, its children)
//     runs in a cgroup v1 memory group limited to refMemLimit, and the block I/O file is twice
//     that, so that neither side's block figures come from the page cache (bonnie++'s
//     -r tells it the RAM it may assume; on a 24 GiB machine a 512 MiB file is all cache).
//   - sync: bonnie++ ends each create and delete phase with sync(2), which waits for every
//     filesystem of the machine (other users' builds, other loop devices), while fsbench
//     syncs only the filesystem under test (syncfs). bonnie++ runs under strace (system call
//     sync only, through seccomp, so nothing else is slowed down), and the time of each sync
//     is taken out of its figure for the "nosync" comparison.
//   - Load: the random 4 KiB jobs run in alternating short rounds (fsbench, fio, fio,
//     fsbench, ...) and the median of the per-round ratios is reported, so that other load on
//     the machine weighs on both sides alike.
func TestReferenceBench(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") != "1" {
		t.Skip("set FSBENCH_BENCH=1 to run the side-by-side benchmark against bonnie++ and fio")
	}
	for _, tool := range []string{"bonnie++", "fio"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install bonnie++ fio)", tool)
		}
	}
	const size = 4 << 30 // room for the file, and inodes for the files (ext4: one per 16 KiB)

	env, done := mounted(t, size, "bonnie,randio")
	defer done()
	env.Params.Bonnie.FileSize = refFileSize
	env.Params.Bonnie.Files = refFiles * 1024 // enough that stat and delete take over 0.5 s
	env.Params.Randio.FileSize, env.Params.Randio.Runtime = 256<<20, plan.Duration{Duration: 10 * time.Second}
	Bonnie := env.Params.Bonnie
	defer memLimit(t, refMemLimit)()
	k, _ := fs.Lookup("ext4")
	ours := map[string]results.Measurement{}
	v := plan.Variant{Name: "ext4", FS: "ext4"}
	if err := RunRepetition(context.Background(), env, Job{Variant: v, Kind: k}, 1, false, func(m results.Measurement) error { ours[m.Test] = m; return nil }); err != nil {
		t.Fatal(err)
	}
	// The references, on the same filesystem made afresh.
	ctx := context.Background()
	if err := fs.Mkfs(ctx, env.Run, k, env.Device, nil); err != nil {
		t.Fatal(err)
	}
	if err := fs.Mount(ctx, k, env.Device, env.Mountpoint, ""); err != nil {
		t.Fatal(err)
	}
	defer fs.Unmount(context.Background(), k, env.Mountpoint)

	ramMiB := mustRAM() >> 20
	bonnieCmd := []string{"bonnie++", "-d", env.Mountpoint, "-s", fmt.Sprintf("%d:8192:8192:3", Bonnie.FileSize>>20), "-r", fmt.Sprint(refMemLimit >> 20),
		"-n", fmt.Sprintf("%d:0:0:1", refFiles), "-u", "root", "-f", "-q", "-x", "1", "-m", "ext4"}
	syncLog := filepath.Join(t.TempDir(), "sync.strace")
	cmd := bonnieCmd
	if _, err := exec.LookPath("strace"); err == nil {
		cmd = append([]string{"strace", "-f", "--seccomp-bpf", "-T", "-e", "trace=sync", "-o", syncLog}, bonnieCmd...)
	}
	out, err := exec.Command(cmd[0], cmd[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd, " "), err)
	}
	syncs := syncTimes(syncLog) // seq create, seq delete, random create, random delete
	recs, err := report.ParseBonnieCSV(bytes.NewReader(lastLine(out)))
	if err != nil || len(recs) != 1 {
		t.Fatalf("bonnie++ output %q: %v", out, err)
	}
	b := recs[0]
	fmt.Printf("bonnie++: %s\n  (RAM %d MiB; memory cgroup limit %d MiB; sync(2) times %v)\n", strings.Join(cmd, " "), ramMiB, refMemLimit>>20, syncs)
	fmt.Printf("%-20s %14s %14s %14s %14s  %s\n", "test", "fsbench", "fsbench-nosync", "reference", "ref-nosync", "ratio")
	pairs := []struct {
		test, field string
		sync        int // index in syncs, or -1
	}{
		{BonnieWrite, "put_block", -1}, {BonnieRewrite, "rewrite", -1}, {BonnieRead, "get_block", -1}, {BonnieSeeks, "seeks", -1},
		{BonnieSeqCreate, "seq_create", 0}, {BonnieSeqStat, "seq_stat", -1}, {BonnieSeqDelete, "seq_del", 1},
		{BonnieRandCreate, "ran_create", 2}, {BonnieRandStat, "ran_stat", -1}, {BonnieRandDelete, "ran_del", 3},
	}
	for _, p := range pairs {
		refNosync := ""
		if r, err := strconv.ParseFloat(b[p.field], 64); err == nil && r > 0 && p.sync >= 0 && p.sync < len(syncs) {
			files := float64(Bonnie.Files)
			if secs := files/r - syncs[p.sync]; secs > 0 {
				refNosync = strconv.FormatFloat(files/secs, 'f', 1, 64)
			}
		}
		printRatio(ours[p.test], b[p.field], refNosync)
	}

	fioFile := filepath.Join(env.Mountpoint, "fio.file")
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
	_, bw, fcmd := fio("--name="+RandSeqWrite, "--rw=write", "--bs=512k", "--size=256M", "--end_fsync=1")
	fmt.Println(fcmd)
	printRatio(ours[RandSeqWrite], strconv.FormatFloat(bw/1e6, 'f', 1, 64), "")

	// The random jobs: fsbench's own figures from the run above, then alternating rounds of
	// randomIO (the loop of randio_rand_*) and fio on fio's file.
	const rounds, roundSecs = 10, 2
	for _, j := range []struct {
		test  string
		write bool
		args  []string
	}{
		{RandWrite4K, true, []string{"--rw=randwrite", "--end_fsync=1"}},
		{RandRead4K, false, []string{"--rw=randread"}},
	} {
		var ratios []float64
		var fcmd string
		var ourSum, fioSum float64
		for i := 0; i < rounds; i++ {
			ourRound := func() float64 {
				p, _, err := randomIO(ctx, osOps{}, fioFile, 256<<20, 4096, j.write, roundSecs*time.Second, 1<<30, uint64(i)+2)
				if err != nil {
					t.Fatal(err)
				}
				return float64(p.ops) / p.work.Seconds()
			}
			fioRound := func() float64 {
				var iops float64
				iops, _, fcmd = fio(append([]string{"--name=" + j.test, "--bs=4k", "--size=256M", fmt.Sprintf("--runtime=%d", roundSecs), "--time_based"}, j.args...)...)
				return iops
			}
			var our, ref float64
			if i%2 == 0 { // ABBA: neither side always goes first
				our, ref = ourRound(), fioRound()
			} else {
				ref, our = fioRound(), ourRound()
			}
			ratios = append(ratios, our/ref)
			ourSum, fioSum = ourSum+our, fioSum+ref
		}
		fmt.Println(fcmd)
		printRatio(ours[j.test], "", "")
		slices.Sort(ratios)
		med := (ratios[rounds/2-1] + ratios[rounds/2]) / 2
		fmt.Printf("%-20s %14.1f %14s %14.1f %14s IOPS %.2f (median of %d alternating %d s rounds; per-round ratios %.2f)\n",
			"  rounds", ourSum/rounds, "", fioSum/rounds, "", med, rounds, roundSecs, ratios)
	}
}

// The reference benchmark's sizes: a memory limit, a block I/O file of at least twice that
// (8×: at 1 GB/s and more through a loop device on a virtio disk a 512 MiB file takes under
// the 0.5 s that bonnie++ prints as +++++), and the file count of the create tests in
// bonnie++'s units of 1024.
const (
	refMemLimit = 256 << 20
	refFileSize = 2 << 30
	refFiles    = 64
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

func printRatio(m results.Measurement, ref, refNosync string) {
	our, nosync := "n/a", ""
	if m.Value != nil {
		our = strconv.FormatFloat(*m.Value, 'f', 1, 64)
	} else {
		our = "(" + m.Note + ")"
	}
	if v, ok := m.Extra["rate_before_sync"]; ok {
		nosync = strconv.FormatFloat(v, 'f', 1, 64)
	}
	ratio := ""
	if r, err := strconv.ParseFloat(ref, 64); err == nil && r > 0 && m.Value != nil {
		ratio = fmt.Sprintf("%.2f", *m.Value/r)
		if nosync != "" {
			ns, _ := strconv.ParseFloat(nosync, 64)
			rn := r
			if v, err := strconv.ParseFloat(refNosync, 64); err == nil && v > 0 {
				rn = v // both sides without their final sync
			}
			ratio += fmt.Sprintf(" (nosync %.2f)", ns/rn)
		}
	}
	fmt.Printf("%-20s %14s %14s %14s %14s  %s %s\n", m.Test, our, nosync, ref, refNosync, m.Unit, ratio)
}
