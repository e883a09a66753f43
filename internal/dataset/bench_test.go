package dataset

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestCopyReadVsTools compares CopyTree with `cp -a` and ReadTree with
// `tar cf - DIR | cat >/dev/null` on a ~200 MB generated tree on tmpfs, and prints the time
// ratios (goal: <= 1.05). It is a measurement, not a unit test: it runs only with
// FSBENCH_BENCH=1, as root, and fails only when a ratio exceeds 1.25 (noise on a shared
// machine makes a tighter bound flaky). Run:
//
//	FSBENCH_BENCH=1 go test -run TestCopyReadVsTools -v ./internal/dataset/
func TestCopyReadVsTools(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") != "1" {
		t.Skip("set FSBENCH_BENCH=1 to run the copy/read benchmark against cp and tar")
	}
	requireRoot(t)
	ctx := context.Background()
	srcMnt := mountTmpfs(t, "1g")
	dstMnt := mountTmpfs(t, "1g") // a second tmpfs: copies across filesystems, as in the benchmark
	src := srcMnt + "/src"
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, err := Generate(ctx, src, Spec{Seed: 42, TargetBytes: 200 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d files, %d MB in %v", st.Files, st.Bytes>>20, time.Since(start))

	const runs = 5
	timeIt := func(f func() error, cleanup func()) time.Duration {
		var ds []time.Duration
		for range runs {
			start := time.Now()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, time.Since(start))
			cleanup()
		}
		slices.Sort(ds)
		return ds[len(ds)/2] // median
	}
	shell := func(script string) func() error {
		return func() error {
			out, err := exec.Command("sh", "-c", script).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s: %v: %s", script, err, out)
			}
			return nil
		}
	}
	copyWith := func(dst string, c *copier) func() error {
		return func() error { _, err := c.copyTree(ctx, src, dst); return err }
	}
	type result struct {
		name string
		ours time.Duration
		ref  time.Duration
	}
	var results []result
	for _, dstRoot := range []string{srcMnt, dstMnt} {
		dst := dstRoot + "/dst"
		rm := func() {
			if err := os.RemoveAll(dst); err != nil {
				t.Fatal(err)
			}
		}
		where := "same tmpfs"
		if dstRoot == dstMnt {
			where = "tmpfs to other tmpfs"
		}
		ref := timeIt(shell("cp -a "+src+" "+dst), rm)
		for _, v := range []struct {
			name string
			cfr  bool
			buf  int
		}{{"CopyTree (as shipped)", true, copyBuf}, {"read/write 128 KiB", false, 128 << 10}, {"read/write 1 MiB", false, 1 << 20}} {
			ours := timeIt(copyWith(dst, &copier{useCFR: v.cfr, bufSize: v.buf}), rm)
			results = append(results, result{v.name + ", " + where + " vs cp -a", ours, ref})
		}
	}
	ref := timeIt(shell("tar cf - "+src+" 2>/dev/null | cat >/dev/null"), func() {})
	for _, buf := range []int{readBuf, 1 << 20} {
		ours := timeIt(func() error {
			rs, err := readTree(ctx, src, buf)
			if err == nil && rs.Bytes != st.Bytes {
				err = fmt.Errorf("read %d bytes, want %d", rs.Bytes, st.Bytes)
			}
			return err
		}, func() {})
		results = append(results, result{fmt.Sprintf("ReadTree %d KiB vs tar|cat", buf>>10), ours, ref})
	}
	for _, r := range results {
		ratio := float64(r.ours) / float64(r.ref)
		t.Logf("%-55s ours %8v  ref %8v  ratio %.2f", r.name, r.ours.Round(time.Millisecond), r.ref.Round(time.Millisecond), ratio)
	}
	for _, r := range results[:1] {
		if ratio := float64(r.ours) / float64(r.ref); ratio > 1.25 {
			t.Errorf("%s: ratio %.2f > 1.25", r.name, ratio)
		}
	}
}
