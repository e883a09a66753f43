package fs

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestBenchConfine measures what the jail costs the figures fsbench reports: mkfs time (the
// tool starts in its jail) and mount time (mount(2) made by the jail's thread), each against the
// same operation without the jail, in alternating pairs on one loop device, with the median
// ratio and the spread. Not a test: it prints figures (make bench-confine).
func TestBenchConfine(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") == "" {
		t.Skip("benchmark: run with FSBENCH_BENCH=1 (make bench-confine), as root")
	}
	needRoot(t)
	const pairs = 30
	dev := attachLoop(t, imageSize)
	mnt := t.TempDir()
	ctx := context.Background()
	for _, name := range []string{"vfat", "ext4"} {
		k, _ := Lookup(name)
		argv, _ := mkfsArgs(k, dev, nil)
		jailed := func() error { return Mkfs(ctx, nil, k, dev, nil) }
		plain := func() error { _, err := runPlain(ctx, mustLook(t, k.Tool), argv); return err }
		report(t, "mkfs "+name, pairs, jailed, plain, nil)
	}
	k, _ := Lookup("ext4")
	if err := Mkfs(ctx, nil, k, dev, nil); err != nil {
		t.Fatal(err)
	}
	umount := func() { unix.Unmount(mnt, 0) }
	report(t, "mount ext4", 100,
		func() error { return Mount(ctx, k, dev, mnt, "") },
		func() error { return unix.Mount(dev, mnt, "ext4", 0, "") }, umount)
}

func mustLook(t *testing.T, tool string) string {
	p, err := hostLookPath(tool)
	if err != nil {
		t.Skipf("%s not installed", tool)
	}
	return p
}

// report times a and b in turn (a b, then b a: neither always goes first) and prints the
// medians, the median of the pairwise ratios a/b and its spread, with the load average.
func report(t *testing.T, what string, pairs int, a, b func() error, after func()) {
	t.Helper()
	timed := func(f func() error) time.Duration {
		start := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		d := time.Since(start)
		if after != nil {
			after()
		}
		return d
	}
	var da, db, ratio []float64
	for i := range pairs {
		var x, y time.Duration
		if i%2 == 0 {
			x = timed(a)
			y = timed(b)
		} else {
			y = timed(b)
			x = timed(a)
		}
		da, db = append(da, x.Seconds()*1e3), append(db, y.Seconds()*1e3)
		ratio = append(ratio, x.Seconds()/y.Seconds())
	}
	med := func(v []float64) float64 { s := slices.Clone(v); slices.Sort(s); return s[len(s)/2] }
	mm := func(v []float64) (float64, float64) { return slices.Min(v), slices.Max(v) }
	lo, hi := mm(ratio)
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("BENCH %-10s jailed %.2f ms, plain %.2f ms (medians of %d), difference %.2f ms, ratio %.2f [%.2f..%.2f] (load %s)\n",
		what, med(da), med(db), pairs, med(da)-med(db), med(ratio), lo, hi, strings.Join(strings.Fields(string(load))[:3], " "))
}
