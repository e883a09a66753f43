package capacity

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
)

// TestGenuineTenRuns: no genuine profile is ever called a counterfeit, in ten runs each, with
// the card's reset and without (a run draws a new nonce each time: its stamps differ), and the
// card's data ends as it began. (Every counterfeit profile is caught: TestProbeProfiles.)
func TestGenuineTenRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 100 capacity checks, without a reset each writing past a 128 MiB cache bound")
	}
	for _, name := range flash.Builtins() {
		t.Run(name, func(t *testing.T) {
			tg, _, backing := simTarget(t, name, 256<<20)
			before := sumFile(t, backing)
			verdicts := map[string]int{}
			for i := 0; i < 10; i++ {
				for _, noReset := range []bool{false, true} {
					r, err := Probe(context.Background(), tg, Options{UndoDir: t.TempDir(), NoReset: noReset})
					if err != nil {
						t.Fatalf("run %d (no reset %v): %v", i+1, noReset, err)
					}
					verdicts[fmt.Sprintf("%s (reset %v)", r.Verdict, !noReset)]++
					if r.Verdict != VerdictGenuine {
						t.Errorf("run %d (no reset %v): %s %s: %s", i+1, noReset, r.Verdict, r.Class, r.Why)
					}
				}
			}
			if after := sumFile(t, backing); after != before {
				t.Errorf("the card's data changed over the 20 runs")
			}
			t.Logf("%s: %v", name, verdicts)
		})
	}
}

// TestBenchBigCard serves a 1 TiB sd-typical card (a sparse backing file) in real time behind a
// loop device and times `fsbench probe --capacity` on it, with the card's reset and without
// (writing past caches of up to 1 GiB, every real card's path), against the bound of
// 15 minutes each (f3's users report a 1 TB card taking more than two days with f3write/f3read;
// f3probe says "seconds to 15 minutes"). It prints the time, the bytes and the load average.
//
//	sudo FSBENCH_BENCH=1 go test -count=1 -run TestBenchBigCard -v -timeout 60m ./internal/capacity/
func TestBenchBigCard(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") != "1" {
		t.Skip("benchmark: run with FSBENCH_BENCH=1, as root")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root and FUSE: serves a simulated card through a loop device")
	}
	bin := buildFsbench(t)
	const size = 1 << 40
	dir := t.TempDir()
	backing := filepath.Join(dir, "card.img")
	dev := serveLoopScale(t, dir, "sd-typical", size, backing, 1)
	for _, noReset := range []bool{false, true} {
		args := []string{"probe", "--capacity", "--undo-dir", filepath.Join(dir, "undo"), "-o", filepath.Join(dir, "out"), dev}
		if noReset {
			args = append(args[:2], append([]string{"--no-reset"}, args[2:]...)...)
		}
		load0 := loadavg()
		start := time.Now()
		cmd := exec.Command(bin, args...)
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		t.Logf("big card: fsbench %s: %v, load average %s before, %s after:\n%s", strings.Join(args, " "), took.Round(time.Second), load0, loadavg(), out)
		if err != nil {
			t.Errorf("fsbench probe --capacity on a 1 TiB card: %v", err)
		}
		if took > 15*time.Minute {
			t.Errorf("took %v, want at most 15 minutes", took)
		}
	}
}
