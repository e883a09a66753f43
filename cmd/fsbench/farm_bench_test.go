package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/labfarm"
)

// TestBenchFarm is make bench-farm: a labgrid farm of FARM_PLACES places (default 3), each a
// real sshd on this machine, starts; one `fsbench run --target labgrid:p1,labgrid:p2,...`
// runs a bigger matrix (FARM_ARGS, default 256 MiB, four variants (at 320 MiB, xfs fills up on the fifth copy of the dataset), the bootlin suite, -n 2) on
// all of them side by side; it prints how long the farm took to start, the farm run, each
// place's run and their sum over the farm run's time (how much the places overlapped). The
// boards all being this 2-core machine, the places compete for it, and each would run faster
// alone: the figures show what the farm's machinery costs and that the places run at once,
// not how fast a real farm is.
//
// FARM_BOARDS=emulated puts emulated arm64 boards behind the places instead (QEMU under TCG,
// each its own SD card, default 2 places) and benchmarks their cards: labgrid:PLACE/dev/mmcblk0
// with --destroy /dev/mmcblk0 (FARM_ARGS default: ext4, ext2 and f2fs, mkfs, mount, write and
// read, -n 2, a 16 MiB dataset).
func TestBenchFarm(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") == "" {
		t.Skip("benchmark: run with make bench-farm (FSBENCH_BENCH=1)")
	}
	emulated := os.Getenv("FARM_BOARDS") == "emulated"
	n := 3
	if emulated {
		n = 2
	}
	if s := os.Getenv("FARM_PLACES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			t.Fatalf("FARM_PLACES=%q: want a number >= 2", s)
		}
	}
	places := make([]string, n)
	targets := make([]string, n)
	for i := range places {
		places[i] = fmt.Sprintf("p%d", i+1)
		targets[i] = "labgrid:" + places[i]
		if emulated {
			targets[i] += "/dev/mmcblk0"
		}
	}
	t0 := time.Now()
	var f *labfarm.Farm
	var ef *emulatedFarm
	kind := "sshd boards"
	if emulated {
		ef = startEmulatedFarm(t, places...)
		f, kind = ef.Farm, "emulated arm64 boards under QEMU TCG"
	} else {
		f = startFarm(t, places...)
	}
	startup := time.Since(t0)
	dir := t.TempDir()
	res := filepath.Join(dir, "res")
	args := strings.Fields(os.Getenv("FARM_ARGS"))
	if len(args) == 0 {
		args = []string{"--size", "256M", "-n", "2", "--variants", "ext4,ext4-nojournal,ext2,btrfs"}
		if emulated {
			args = []string{"-n", "2", "--variants", "ext4,ext2,f2fs", "--tests", "mkfs,mount,write,read", "--dataset-size", "16M"}
		}
	}
	var cmd *exec.Cmd
	if emulated {
		cmd = ef.cmd(append([]string{"run", "--target", strings.Join(targets, ","), "--destroy", "/dev/mmcblk0", "-o", res}, args...)...)
	} else {
		cmd = farmCmd(f, dir, append([]string{"--target", strings.Join(targets, ","), "-o", res}, args...)...)
	}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t1 := time.Now()
	err := cmd.Run()
	wall := time.Since(t1)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	fmt.Println(out.String())
	r, err := results.Load(res)
	if err != nil {
		t.Fatal(err)
	}
	var sum time.Duration
	per := regexp.MustCompile(`\[(p[0-9]+)\] done in ([0-9hms.]+)`)
	fmt.Printf("\nBENCH farm of %d places (labgrid %s, %s on 127.0.0.1), fsbench run %s\n", n, f.Coordinator, kind, strings.Join(args, " "))
	fmt.Printf("BENCH   farm start (coordinator, exporter, %d %s, places): %s\n", n, kind, startup.Round(time.Millisecond))
	for _, m := range per.FindAllStringSubmatch(out.String(), -1) {
		d, _ := time.ParseDuration(m[2])
		sum += d
		fmt.Printf("BENCH   place %s's run, side by side with the others: %s\n", m[1], d)
	}
	fmt.Printf("BENCH   farm run, all places side by side, merged: %s (sum of the places' runs: %s, overlap %.2f)\n",
		wall.Round(time.Millisecond), sum, sum.Seconds()/wall.Seconds())
	fmt.Printf("BENCH   merged: %d variants, %d measurements, status %s\n", len(r.Variants), len(r.Measurements), r.Status)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("BENCH   load average after: %s", b)
	}
	checkReleased(t, f, places...)
	checkNoLeftovers(t, dir)
}
