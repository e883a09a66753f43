package randio

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/suites/suitekit"
	"github.com/fsbench/fsbench/internal/testkit/refbench"
)

// TestReferenceBench (FSBENCH_BENCH=1, root, fio installed) runs the randio suite's jobs and
// fio's with the same options on the same filesystem, in alternating rounds, and prints per
// test fsbench's median, fio's, the median of the per-round ratios with their range, and
// whether the noise sentinel saw other work during a round (internal/testkit/refbench). Goal on
// a quiet machine: within 10 %. It reports; it fails only when a tool fails. Both sides run in
// the same memory cgroup (refbench.MemLimit), with O_DIRECT, iodepth 1, fio's psync engine.
// (bonnie's TestReferenceBench is the half against bonnie++.)
func TestReferenceBench(t *testing.T) {
	const size = 12 << 30
	rounds := refbench.Rounds()
	b := refbench.Start(t, size, Name, []string{"fio"}, "fio")
	k, _ := fs.Lookup("ext4")
	ctx := context.Background()
	type side = map[string]float64 // test → figure

	// randio against fio: the sequential write once per round, then the random jobs in
	// alternating short rounds on fio's own file (same file, same preconditioning: fio's
	// sequential write laid it out).
	fioFile := filepath.Join(b.Env.Mountpoint, "fio.file")
	if err := fs.Mkfs(ctx, b.Env.Run, k, b.Env.Device, nil); err != nil {
		t.Fatal(err)
	}
	if err := fs.Mount(ctx, k, b.Env.Device, b.Env.Mountpoint, ""); err != nil {
		t.Fatal(err)
	}
	defer fs.Unmount(context.Background(), k, b.Env.Mountpoint)
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
	// (suitekit.MinMeasure, 0.5 s: "too fast to measure"), and the rounds of one quiet run spread
	// from 0.95 to 1.36 of fio's figure.
	const seqSize = 2 << 30
	// Per-write latency of the sequential write, p50 and mean, µs, per round: where the two
	// differ, the time a write takes from outside does (docs/agreement.md).
	var ourLat, refLat [][2]float64
	for i := 0; i < rounds; i++ {
		// Both sides time the same span: fio lays its file out (unlink, create, fallocate)
		// before its clock starts and counts its end_fsync in the bandwidth, and fsbench's
		// randio suite times seqWriteDirect, fsync included, after layOutSeqFile. Before, this
		// side left the fsync out (the writes' own time, p.Work): with the loop device's flush
		// reaching the host's page cache, that alone made fsbench 1.05 to 1.33 times fio's
		// figure from one run to the next.
		busy := false
		ourSeq := func() side {
			if err := layOutSeqFile(suitekit.OS{}, fioFile, seqSize); err != nil {
				t.Fatal(err)
			}
			var mbps float64
			busy = b.Watched("fsbench "+SeqWrite, func() {
				start := time.Now()
				p, _, err := seqWriteDirect(ctx, suitekit.OS{}, fioFile, seqSize, 512<<10)
				if err != nil {
					t.Fatal(err)
				}
				mbps = float64(p.Bytes) / 1e6 / time.Since(start).Seconds()
				ourLat = append(ourLat, [2]float64{p.Lat.Quantile(0.5) * 1e6, p.Work.Seconds() * 1e6 / float64(max(1, p.Ops))})
			}) || busy
			return side{SeqWrite: mbps}
		}
		refSeq := func() side {
			os.Remove(fioFile)
			var bw float64
			busy = b.Watched("fio "+SeqWrite, func() {
				_, bw, fcmd = fio("--name="+SeqWrite, "--rw=write", "--bs=512k", fmt.Sprintf("--size=%dM", seqSize>>20), "--end_fsync=1")
			}) || busy
			refLat = append(refLat, fioClat)
			return side{SeqWrite: bw / 1e6}
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
	refbench.PrintRounds(SeqWrite, seqOurs, seqRefs, seqBusy)
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
		{RandWrite, true, []string{"--rw=randwrite", "--end_fsync=1"}},
		{RandRead, false, []string{"--rw=randread"}},
	} {
		var o, r []side
		randBusy := 0
		for i := 0; i < randRounds; i++ {
			busy := false
			// The whole call is timed, its fsync included, as the randio suite's measurement
			// and fio's end_fsync=1 are.
			ourRound := func() side {
				var iops float64
				busy = b.Watched("fsbench "+j.test, func() {
					start := time.Now()
					p, _, err := randomIO(ctx, suitekit.OS{}, fioFile, 256<<20, 4096, j.write, roundSecs*time.Second, 1<<30, uint64(i)+2)
					if err != nil {
						t.Fatal(err)
					}
					iops = float64(p.Ops) / time.Since(start).Seconds()
				}) || busy
				return side{j.test: iops}
			}
			fioRound := func() side {
				var iops float64
				busy = b.Watched("fio "+j.test, func() {
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
		refbench.PrintRounds(j.test, o, r, randBusy)
	}
	refbench.PrintWhy(b.Why)
}
