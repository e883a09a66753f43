package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchPeakRSS runs a default `fsbench run` (1 GiB image, every variant, 3 repetitions) and
// prints fsbench's own peak resident memory beside the goal. It is a benchmark, not a test of
// the suite: `make bench` runs it (FSBENCH_BENCH=1). The page cache is what is being measured,
// so the tool must not crowd it. FSBENCH_BENCH_ARGS may add flags (e.g. "--size 512M").
func TestBenchPeakRSS(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") == "" {
		t.Skip("benchmark: run with make bench (FSBENCH_BENCH=1)")
	}
	needRoot(t)
	dir := t.TempDir()
	args := []string{"run", "-o", filepath.Join(dir, "res")}
	if extra := os.Getenv("FSBENCH_BENCH_ARGS"); extra != "" {
		args = append(args, strings.Fields(extra)...)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("fsbench %v: %v", args, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "res", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Tool struct {
			PeakRSSBytes uint64 `json:"peak_rss_bytes"`
		} `json:"tool"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Tool.PeakRSSBytes == 0 {
		t.Fatal("results.json has no peak RSS: the figure could not be measured")
	}
	// The wait4 rusage of the fsbench process includes its children (mkfs), so the figure
	// fsbench records about itself (RUSAGE_SELF) is the one compared with the goal.
	const goal = 32 << 20
	verdict := "within goal"
	if r.Tool.PeakRSSBytes > goal {
		verdict = "OVER GOAL"
	}
	fmt.Printf("\nBENCH peak RSS of fsbench during `fsbench %v`: %.1f MiB (goal <= 32 MiB, ratio %.2f): %s\n",
		args, float64(r.Tool.PeakRSSBytes)/(1<<20), float64(r.Tool.PeakRSSBytes)/goal, verdict)
}
