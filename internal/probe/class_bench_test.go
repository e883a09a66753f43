package probe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites/randio"
	// The randio suite's sizes are set through the suites' registry (plan.Params.Set): load it.
	_ "github.com/fsbench/fsbench/internal/suites/all"
	"github.com/fsbench/fsbench/internal/testkit/simcardtest"
)

// agnosticsEnv names the environment variable that points at a checkout of Raspberry Pi's
// card test (github.com/raspberrypi-ui/agnostics): its data/sd_bench.fio and data/sdtest.sh.
const agnosticsEnv = "AGNOSTICS"

// classBenchCard is each bench card's size: room for the 256 MiB area, and for ext4 with
// agnostics' 256 MiB file and fsbench's randio file; and 4 GiB so that the area runs inside
// the SLC cache of the profiles that have one (1/8 of the card), as on the 32-64 GB cards
// their sources measured. The backing files are sparse.
const classBenchCard = 4 << 30

// classRow is one line of the table: who measured, through what, at which depth.
type classRow struct {
	profile, who, path string
	depth              int
	seqMBps, w, r      float64
	a1                 string // "pass", "FAIL" or "-"
	note               string
}

// TestBenchClass serves every built-in profile in real time and measures its application
// class three ways, alternating fsbench and fio from one profile to the next:
//
//  1. fsbench probe --class on the raw loop device (probe.Class): depth 1 and 32;
//  2. fsbench's randio suite at queue depth 32 through ext4 (fsbench run, iodepth 32);
//  3. agnostics' own fio job (sd_bench.fio: libaio, iodepth 32, 256 MiB, direct) through ext4,
//     run unchanged in a private mount namespace whose /var/tmp is the card's filesystem, its
//     figures read and judged as sdtest.sh does (its thresholds read from sdtest.sh).
//
// It prints them side by side with the model's own depth-1 and depth-32 figures and fails when
// fsbench's A1 verdict (probe at depth 32, and randio) differs from agnostics', or when a
// profile with a command queue gains less than 2 times at depth 32. Run it with
//
//	sudo FSBENCH_BENCH=1 AGNOSTICS=/path/to/agnostics go test -count=1 -run TestBenchClass -v -timeout 90m ./internal/probe/
func TestBenchClass(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") == "" {
		t.Skip("benchmark: run with FSBENCH_BENCH=1 (make bench-class), as root")
	}
	if os.Geteuid() != 0 {
		t.Skip("benchmark needs root: it serves FUSE cards, attaches loop devices and mounts ext4 (run with sudo)")
	}
	ag := agnosticsJob(t)
	bin, _ := simcardtest.Binary(t)
	profiles := flash.Builtins()
	if s := os.Getenv("CLASS_PROFILES"); s != "" {
		profiles = strings.Split(s, ",")
	}
	start := time.Now()
	fmt.Printf("\nCLASS fsbench %s; load average at the start: %s", bin, procLoad())
	var rows []classRow
	for i, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			steps := []func() []classRow{
				func() []classRow { return benchClassProbe(t, profile) },
				func() []classRow { return benchClassRandio(t, bin, profile) },
				func() []classRow { return benchClassAgnostics(t, ag, profile) },
			}
			if i%2 == 1 { // alternate: fio first on every other profile
				steps[0], steps[2] = steps[2], steps[0]
			}
			var got []classRow
			for _, s := range steps {
				got = append(got, s()...)
			}
			mine := append(modelRows(t, profile), got...)
			printClassRows(mine) // now, too: a later profile's failure must not lose this one's
			rows = append(rows, mine...)
			checkClassRows(t, profile, got)
		})
	}
	fmt.Printf("\nCLASS load average at the end: %s", procLoad())
	printClassRows(rows)
	fmt.Printf("CLASS took %v\n", time.Since(start).Round(time.Second))
}

// agnosticsFiles are agnostics' job file and pass thresholds.
type agnosticsFiles struct {
	job                          string
	seqKBps, writeIOPS, readIOPS float64
}

// agnosticsJob finds agnostics' files through AGNOSTICS and reads sdtest.sh's thresholds; nil
// (the fio part skipped, saying so) when AGNOSTICS is unset.
func agnosticsJob(t *testing.T) *agnosticsFiles {
	dir := os.Getenv(agnosticsEnv)
	if dir == "" {
		fmt.Printf("\nCLASS agnostics part skipped: %s is unset. Clone github.com/raspberrypi-ui/agnostics outside this repository and run with %s=/path/to/agnostics (its data/sd_bench.fio and data/sdtest.sh are read from there).\n", agnosticsEnv, agnosticsEnv)
		return nil
	}
	if _, err := exec.LookPath("fio"); err != nil {
		t.Fatalf("fio not found (%v): install the Debian package fio", err)
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare not found (%v): install the Debian package util-linux", err)
	}
	a := &agnosticsFiles{job: filepath.Join(dir, "data", "sd_bench.fio")}
	if _, err := os.Stat(a.job); err != nil {
		t.Fatalf("%s=%s: %v (want the agnostics repository, holding data/sd_bench.fio)", agnosticsEnv, dir, err)
	}
	sh, err := os.ReadFile(filepath.Join(dir, "data", "sdtest.sh"))
	if err != nil {
		t.Fatalf("%s=%s: %v (want the agnostics repository, holding data/sdtest.sh)", agnosticsEnv, dir, err)
	}
	for name, dst := range map[string]*float64{"swri": &a.seqKBps, "rwri": &a.writeIOPS, "rrea": &a.readIOPS} {
		m := regexp.MustCompile(`"\$` + name + `" -lt ([0-9]+)`).FindSubmatch(sh)
		if m == nil {
			t.Fatalf("sdtest.sh: no threshold for $%s (\"$%s\" -lt N): has agnostics changed its test?", name, name)
		}
		*dst, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	fmt.Printf("\nCLASS agnostics: fio --output-format=terse --max-jobs=4 %s in a mount namespace whose /var/tmp is ext4 on the card; pass (sdtest.sh) at %g KB/s sequential write, %g write IOPS, %g read IOPS\n",
		a.job, a.seqKBps, a.writeIOPS, a.readIOPS)
	return a
}

func procLoad() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}

func passText(b bool) string {
	if b {
		return "pass"
	}
	return "FAIL"
}

// modelRows are the card's own figures at depth 1 and 32 (flash.QueuedIOPS; the sequential
// rate from flash.Measure), without a host.
func modelRows(t *testing.T, profile string) []classRow {
	p, err := flash.Lookup(profile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := flash.NewModel(p, classBenchCard)
	if err != nil {
		t.Fatal(err)
	}
	seq := flash.Measure(m, 1).SeqWriteMBps
	var out []classRow
	for _, d := range []int{1, 32} {
		r, w, err := flash.QueuedIOPS(p, classBenchCard, 256<<20, d, 4000, 1)
		if err != nil {
			t.Fatal(err)
		}
		a1 := ClassVerdicts(seq, []ClassPoint{{Write: true, Depth: d, IOPS: w}, {Depth: d, IOPS: r}})[0]
		out = append(out, classRow{profile: profile, who: "card model", path: "no host", depth: d, seqMBps: seq, w: w, r: r, a1: passText(a1.Pass)})
	}
	return out
}

// benchClassProbe is fsbench probe --class on a fresh card's loop device.
func benchClassProbe(t *testing.T, profile string) []classRow {
	dev := simcardLoop(t, profile, classBenchCard)
	t0 := time.Now()
	r, err := Class(t.Context(), dev, "/sys", ClassOptions{})
	if err != nil {
		t.Fatalf("probe --class on %s: %v", profile, err)
	}
	fmt.Printf("CLASS %s: fsbench probe --class --destroy %s %s: %v, load %s", profile, dev, dev, time.Since(t0).Round(time.Second), procLoad())
	var out []classRow
	for _, d := range []int{1, 32} {
		row := classRow{profile: profile, who: "fsbench probe --class", path: "raw loop device", depth: d, seqMBps: r.SeqWriteMBps}
		for _, p := range r.Random {
			if p.Depth == d && p.Write {
				row.w = p.IOPS
			} else if p.Depth == d {
				row.r = p.IOPS
			}
		}
		for _, v := range r.Verdicts {
			if v.Class == "A1" && v.Depth == d {
				row.a1 = passText(v.Pass)
			}
		}
		if r.Host != nil && d == 32 {
			row.note = fmt.Sprintf("host: %d tags, write cache %q", r.Host.Tags, r.Host.WriteCache)
		}
		out = append(out, row)
	}
	return out
}

// benchClassRandio is fsbench's randio suite at queue depth 32 on ext4 (fsbench run on
// simcard:PROFILE, its own card).
func benchClassRandio(t *testing.T, bin, profile string) []classRow {
	cfg := plan.Default()
	cfg.Suite, cfg.Repetitions, cfg.Size = plan.Suites{"randio"}, 1, classBenchCard
	cfg.Variants = slices.DeleteFunc(cfg.Variants, func(v plan.Variant) bool { return v.Name != "ext4" })
	if err := cfg.Params.Set(randio.Name, "iodepth", 32); err != nil {
		t.Fatal(err)
	}
	spec, err := plan.ParseTarget("simcard:" + profile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, req := filepath.Join(dir, "results"), filepath.Join(dir, "request.json")
	if err := plan.WriteRequest(req, plan.Request{Config: cfg, Target: spec, Out: out, TimeScale: 1}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	b, err := exec.Command(bin, "run", "--request", req).CombinedOutput()
	fmt.Printf("CLASS %s: fsbench run --suite randio (iodepth 32) --target simcard:%s: %v, load %s", profile, profile, time.Since(t0).Round(time.Second), procLoad())
	run, lerr := results.Load(filepath.Join(out, "results.json"))
	if lerr != nil {
		t.Fatalf("fsbench run: %v %v\n%s", err, lerr, lastLinesOf(b, 8))
	}
	row := classRow{profile: profile, who: "fsbench randio", path: "ext4 on the loop device", depth: 32}
	pass := true
	for test, dst := range map[string]*float64{randio.SeqWrite: &row.seqMBps, randio.RandWrite: &row.w, randio.RandRead: &row.r} {
		var m *results.Measurement
		for i := range run.Measurements {
			if run.Measurements[i].Test == test && run.Measurements[i].Rep > 0 {
				m = &run.Measurements[i]
			}
		}
		if m == nil || m.Value == nil {
			t.Fatalf("fsbench randio on %s: no figure for %s\n%s", profile, test, lastLinesOf(b, 8))
		}
		*dst = *m.Value
		pass = pass && m.Extra["a1_pass"] == 1
	}
	row.a1 = passText(pass)
	return []classRow{row}
}

func lastLinesOf(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// benchClassAgnostics runs agnostics' fio job unchanged on ext4 on a fresh card: in a private
// mount namespace (unshare), the card's filesystem is bind-mounted on /var/tmp, the job's
// directory, and fio runs as sdtest.sh runs it; the figures are read from the terse lines as
// sdtest.sh cuts them (fields 3, 7, 8, 48, 49) and judged by its thresholds.
func benchClassAgnostics(t *testing.T, a *agnosticsFiles, profile string) []classRow {
	if a == nil {
		return []classRow{{profile: profile, who: "agnostics sd_bench.fio", path: "not run", a1: "-", note: agnosticsEnv + " unset"}}
	}
	dev := simcardLoop(t, profile, classBenchCard)
	mnt := t.TempDir()
	// nodiscard: the card's model would take minutes to discard 1 GiB; the job writes its
	// file before it reads it either way.
	if b, err := exec.Command("mkfs.ext4", "-q", "-F", "-E", "nodiscard", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4 %s: %v\n%s", dev, err, b)
	}
	if b, err := exec.Command("mount", "-t", "ext4", dev, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v\n%s", dev, err, b)
	}
	t.Cleanup(func() { // before the loop device's detach (cleanups run last-in first-out)
		if b, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", mnt, err, b)
		}
	})
	t0 := time.Now()
	// Both of the namespace's references to the card's ext4 (the bind on /var/tmp and its copy
	// of the mount itself) are dropped before it ends, so that the umount below is the last one
	// and the loop device can be detached at once: a namespace torn down holding them shuts the
	// filesystem down on its own time.
	script := `mount --bind "$1" /var/tmp || exit 1
fio --output-format=terse --max-jobs=4 "$2"; rc=$?
umount /var/tmp && umount "$1"; exit $rc`
	b, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", mnt, a.job).Output()
	fmt.Printf("CLASS %s: agnostics' fio job on ext4: %v, load %s", profile, time.Since(t0).Round(time.Second), procLoad())
	if err != nil {
		t.Fatalf("fio %s on %s: %v\n%s", a.job, profile, err, b)
	}
	figs, err := parseAgnostics(string(b))
	if err != nil {
		t.Fatalf("fio's terse output on %s: %v\n%s", profile, err, b)
	}
	pass := figs.seqKBps >= a.seqKBps && figs.writeIOPS >= a.writeIOPS && figs.readIOPS >= a.readIOPS
	return []classRow{{profile: profile, who: "agnostics sd_bench.fio", path: "ext4 on the loop device", depth: 32,
		seqMBps: figs.seqKBps * 1024 / 1e6, w: figs.writeIOPS, r: figs.readIOPS, a1: passText(pass),
		note: fmt.Sprintf("sequential write %.0f KB/s (fio's KiB/s)", figs.seqKBps)}}
}

// agnosticsFigures are the three figures sdtest.sh judges.
type agnosticsFigures struct{ seqKBps, writeIOPS, readIOPS float64 }

// parseAgnostics reads fio's terse lines as sdtest.sh does: `cut -f 3,7,8,48,49 -d";"` (job
// name, read KiB/s, read IOPS, write KiB/s, write IOPS), the sequential write's write KiB/s
// from the job seq-write, write IOPS from rand-4k-write, read IOPS from rand-4k-read (sdtest.sh
// takes lines 2, 4 and 5; here by name).
func parseAgnostics(out string) (agnosticsFigures, error) {
	var f agnosticsFigures
	found := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		fs := strings.Split(line, ";")
		if len(fs) < 49 {
			continue
		}
		num := func(i int) float64 { v, _ := strconv.ParseFloat(fs[i-1], 64); return v }
		switch fs[2] {
		case "seq-write":
			f.seqKBps = num(48)
		case "rand-4k-write":
			f.writeIOPS = num(49)
		case "rand-4k-read":
			f.readIOPS = num(8)
		default:
			continue
		}
		found[fs[2]] = true
	}
	if len(found) != 3 {
		return f, fmt.Errorf("want terse lines for seq-write, rand-4k-write and rand-4k-read, found %v", found)
	}
	return f, nil
}

// checkClassRows fails when fsbench's A1 verdicts at depth 32 differ from agnostics', or when a
// profile with a command queue does not gain at depth 32 on the raw device.
func checkClassRows(t *testing.T, profile string, rows []classRow) {
	var ag *classRow
	probe := map[int]classRow{}
	for i, r := range rows {
		switch r.who {
		case "agnostics sd_bench.fio":
			if r.a1 != "-" {
				ag = &rows[i]
			}
		case "fsbench probe --class":
			probe[r.depth] = r
		}
	}
	for _, r := range rows {
		if ag != nil && r.depth == 32 && r.who != ag.who && r.a1 != ag.a1 {
			t.Errorf("%s: %s says A1 %s at depth 32, agnostics %s", profile, r.who, r.a1, ag.a1)
		}
	}
	p, err := flash.Lookup(profile)
	if err != nil {
		t.Fatal(err)
	}
	if p.QueueDepth > 1 {
		one, deep := probe[1], probe[32]
		if deep.r < 2*one.r || deep.w < 2*one.w {
			t.Errorf("%s has a command queue but gains only x%.2f reads, x%.2f writes at depth 32", profile, deep.r/one.r, deep.w/one.w)
		}
	}
}

func printClassRows(rows []classRow) {
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLASS\tprofile\twho\tthrough\tdepth\tseq write MB/s\t4K write IOPS\t4K read IOPS\tA1\tnote")
	for _, r := range rows {
		fmt.Fprintf(tw, "CLASS\t%s\t%s\t%s\t%d\t%.1f\t%.0f\t%.0f\t%s\t%s\n", r.profile, r.who, r.path, r.depth, r.seqMBps, r.w, r.r, r.a1, r.note)
	}
	tw.Flush()
}

// TestParseAgnostics reads fio terse lines the way sdtest.sh cuts them.
func TestParseAgnostics(t *testing.T) {
	line := func(name string, rbw, riops, wbw, wiops string) string {
		f := make([]string, 60)
		f[0], f[1], f[2] = "3", "fio-3.33", name
		f[6], f[7], f[47], f[48] = rbw, riops, wbw, wiops
		return strings.Join(f, ";")
	}
	out := strings.Join([]string{
		line("prepare-file", "0", "0", "30000", "60"),
		line("seq-write", "0", "0", "12345", "3"),
		line("seq-read", "40000", "10", "0", "0"),
		line("rand-4k-write", "0", "0", "2000", "501"),
		line("rand-4k-read", "6000", "1499", "0", "0"),
	}, "\n")
	f, err := parseAgnostics(out)
	if err != nil {
		t.Fatal(err)
	}
	if f != (agnosticsFigures{seqKBps: 12345, writeIOPS: 501, readIOPS: 1499}) {
		t.Errorf("got %+v", f)
	}
	if _, err := parseAgnostics(line("seq-write", "0", "0", "1", "1")); err == nil {
		t.Error("output without the random jobs was accepted")
	}
}
