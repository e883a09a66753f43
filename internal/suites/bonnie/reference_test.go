package bonnie

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/export"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/testkit/refbench"
)

// TestReferenceBench (FSBENCH_BENCH=1, root, bonnie++ installed; FSBENCH_REF_ONLY=fio skips it)
// runs the bonnie suite through the engine and bonnie++ with the same jobs on the same
// filesystem, in alternating rounds, and prints per test fsbench's median, bonnie++'s, the
// median of the per-round ratios with their range, and whether the noise sentinel saw other
// work during a round (internal/testkit/refbench). Goal on a quiet machine: within 15 %. It
// reports; it fails only when a tool fails. (randio's TestReferenceBench is its half against
// fio.)
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
	if os.Getenv("FSBENCH_REF_ONLY") == "fio" {
		t.Skip("FSBENCH_REF_ONLY=fio: only randio's half against fio runs (this half takes about 9 minutes)")
	}
	const size = 12 << 30 // room for the file, and inodes for the files (ext4: one per 16 KiB)
	rounds := refbench.Rounds()
	b := refbench.Start(t, size, Name, []string{"bonnie++"}, "bonnie++")
	for _, s := range []struct {
		key string
		v   any
	}{{"file_size_bytes", refFileSize}, {"files", refFiles * 1024}} {
		if err := b.Env.Params.Set(Name, s.key, s.v); err != nil {
			t.Fatal(err)
		}
	}
	k, _ := fs.Lookup("ext4")
	ctx := context.Background()
	v := plan.Variant{Name: "ext4", FS: "ext4"}

	// One side of a round: fsbench's bonnie suite on a fresh filesystem (RunRepetition makes
	// it), or bonnie++ on one made the same way.
	type side = map[string]float64 // test → figure (and test+"/nosync")
	ourRound := func() (side, bool) {
		got, busy := side{}, false
		p0 := b.Pressure()
		err := suite.RunRepetition(ctx, b.Env, suite.Job{Variant: v, Kind: k}, 1, false, func(m results.Measurement) error {
			if m.Value != nil {
				got[m.Test] = *m.Value
			}
			if ns, ok := m.Extra["rate_before_sync"]; ok {
				got[m.Test+"/nosync"] = ns
			}
			// The pressure since the previous measurement ended: the test's span and the
			// untimed preparation before it, a superset, so that others' share is if
			// anything overstated.
			p1 := b.Pressure()
			if m.Noise != nil {
				n := measure.Noise{Busy: m.Noise.Busy, Why: m.Noise.Why}
				if b.Judge(m.Test, n, m.WallSeconds, p1.Sub(p0)) {
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
	common := []string{"-d", b.Env.Mountpoint, "-r", fmt.Sprint(refbench.MemLimit >> 20), "-u", "root", "-f", "-q", "-x", "1", "-m", "ext4"}
	blockCmd := append([]string{"bonnie++", "-s", fmt.Sprintf("%d:8192:8192:3", refFileSize>>20), "-n", "0"}, common...)
	fileCmd := append([]string{"bonnie++", "-s", "0", "-n", fmt.Sprintf("%d:0:0:1", refFiles)}, common...)
	pairs := []struct {
		test, field string
		sync        int // index of bonnie++'s sync(2) in the phase, or -1
	}{
		{Write, "put_block", -1}, {Rewrite, "rewrite", -1}, {Read, "get_block", -1}, {Seeks, "seeks", -1},
		{SeqCreate, "seq_create", 0}, {SeqStat, "seq_stat", -1}, {SeqDelete, "seq_del", 1},
		{RandCreate, "ran_create", 2}, {RandStat, "ran_stat", -1}, {RandDelete, "ran_del", 3},
	}
	refRound := func() (side, bool) {
		if err := fs.Mkfs(ctx, b.Env.Run, k, b.Env.Device, nil); err != nil {
			t.Fatal(err)
		}
		if err := fs.Mount(ctx, k, b.Env.Device, b.Env.Mountpoint, ""); err != nil {
			t.Fatal(err)
		}
		defer fs.Unmount(context.Background(), k, b.Env.Mountpoint)
		syncLog := filepath.Join(t.TempDir(), "sync.strace")
		traced := fileCmd
		if _, err := exec.LookPath("strace"); err == nil {
			traced = append([]string{"strace", "-f", "--seccomp-bpf", "-T", "-e", "trace=sync", "-o", syncLog}, fileCmd...)
		}
		fields, busy := map[string]string{}, false
		for _, cmd := range [][]string{blockCmd, traced} {
			var out []byte
			var err error
			if b.Watched("bonnie++", func() { out, err = exec.Command(cmd[0], cmd[1:]...).Output() }) {
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
		strings.Join(blockCmd, " "), strings.Join(fileCmd, " "), mustRAM()>>20, refbench.MemLimit>>20, rounds)
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
			refbench.PrintRounds(key, ours, refs, busyRounds)
		}
	}
	refbench.PrintWhy(b.Why)
}

// The bonnie half's sizes: a block I/O file 8 times the memory limit (so that at most an
// eighth of bonnie++'s random seeks find their chunk in the cache), and the file count of the
// create tests in bonnie++'s units of 1024.
const (
	refFileSize = 8 * refbench.MemLimit
	refFiles    = 256
)

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
