package probe

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
)

// The benchmark's card: 1 GiB served in real time (time scale 1), so that every tool waits
// the card's modelled latencies on the wall clock, through the same loop device.
const benchProbeCardSize = 1 << 30

// benchProbeProfiles are AU-mapped SD profiles, whose AU is what flashbench -a is used to find:
// 4 MiB (sd-typical) and 128 KiB (the small-AU card that was sd-cheap-old before the profiles'
// calibration, kept as a test profile: no shipped profile has so small an AU now).
var benchProbeProfiles = []string{"sd-typical", "../flash/testdata/sd-cheap-old-uncalibrated.toml"}

// benchReadSizes are the block sizes compared with dd in the read sweep: 4 KiB to 4 MiB in
// steps of four.
var benchReadSizes = []uint64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}

// benchWriteSizes are the sizes of fsbench's write sweep (512 B to 1 MiB) compared with dd,
// in steps of four: Bootlin's dd range starts at 512 B.
var benchWriteSizes = []uint64{512, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}

// benchDDOnlyWrites continue Bootlin's dd range (up to 64 MiB) past fsbench's largest write
// block, with the number of blocks each: 96 MiB in all, about 35 s on the small-AU card (~3 MB/s).
// These rows have no fsbench figure.
var benchDDOnlyWrites = []struct{ bs, count uint64 }{{4 << 20, 4}, {16 << 20, 1}, {64 << 20, 1}}

// TestBenchProbeVsTools serves sd-typical and the small-AU card as 1 GiB cards in real time and,
// on one direct-I/O loop device per card, compares fsbench's probe with the tools it imitates:
//
//  1. the alignment test (probe.Run) against flashbench -a --blocksize=1024: the diff per
//     alignment side by side, each one's AU (fsbench's estimate; flashbench's the start of
//     the diff plateau, as a user reads it) and the profile's AU;
//  2. the read sweep against dd iflag=direct reads of the same blocks, and the write sweep
//     (probe.Run with Write, which destroys the card: it is ours) against dd oflag=direct
//     writes of the same blocks at the same place.
//
// It prints the exact commands. It fails when a tool fails, when dd did not move what it was
// asked to, when fsbench's AU estimate is not the profile's AU, or when a mount or loop device
// is left behind (simcardLoop's cleanup). Run it with
//
//	sudo FSBENCH_BENCH=1 FLASHBENCH=/path/to/flashbench go test -count=1 -run TestBenchProbeVsTools -v -timeout 20m ./internal/probe/
func TestBenchProbeVsTools(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") == "" {
		t.Skip("benchmark: run with FSBENCH_BENCH=1 (make bench-probe), as root")
	}
	if os.Geteuid() != 0 {
		t.Skip("benchmark needs root: it serves FUSE cards and attaches loop devices (run with sudo)")
	}
	for _, tool := range []string{"dd", "blkdiscard"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (%v): install coreutils and util-linux", tool, err)
		}
	}
	fb := os.Getenv("FLASHBENCH")
	if fb == "" {
		fmt.Printf("\nBENCH flashbench part skipped: FLASHBENCH is unset. Build flashbench (git clone https://github.com/bradfa/flashbench && make, outside this repository) and run with FLASHBENCH=/path/to/flashbench.\n")
	} else if st, err := os.Stat(fb); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("FLASHBENCH=%s is not an executable file (%v): point it at the flashbench binary built with make", fb, err)
	}
	start := time.Now()
	for _, name := range benchProbeProfiles {
		t.Run(name, func(t *testing.T) { benchProbeCard(t, name, fb) })
	}
	fmt.Printf("\nBENCH total time %v\n", time.Since(start).Round(time.Second))
}

func benchProbeCard(t *testing.T, profile, fb string) {
	p, err := flash.Lookup(profile)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	dev := simcardLoop(t, profile, benchProbeCardSize) // cleanups: detach, stop the server, check
	fmt.Printf("\n===== BENCH %s: 1 GiB card, time scale 1, direct-I/O loop device %s =====\n", profile, dev)

	// fsbench probe, as "fsbench probe --write" runs it (Identify only fills the identity).
	d, closeDev, err := OpenDevice(dev, true)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Write: true, MaxReadBlock: 4 << 20}
	r, err := Run(t.Context(), d, opts)
	if cerr := closeDev(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", dev, cerr)
	}
	if err != nil {
		t.Fatalf("probe %s: %v", dev, err)
	}
	fmt.Printf("fsbench: probe.Run(OpenDevice(%q, write=true), Options{Write: true, MaxReadBlock: 4 MiB}), what\n", dev)
	fmt.Printf("  fsbench probe --write --destroy %s --max-block 4M %s\n  runs (read sweep, alignment test, write tests; %v)\n", dev, dev, time.Duration(r.DurationNs).Round(time.Second))

	// 1. Alignment test.
	var fbPts []benchFBPoint
	var fbCmd string
	if fb != "" {
		args := []string{"-a", "--blocksize=1024", dev}
		fbCmd = fb + " " + strings.Join(args, " ")
		fbStart := time.Now()
		out, err := exec.Command(fb, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", fbCmd, err, out)
		}
		if fbPts, err = parseFlashbenchAlign(string(out)); err != nil {
			t.Fatalf("%s: %v", fbCmd, err)
		}
		fbCmd += fmt.Sprintf("   (%v)", time.Since(fbStart).Round(time.Second))
	}
	auOK := benchAlignTable(t, p, r, fbPts, fbCmd)

	// 2. Read sweep against dd.
	benchReadTable(t, dev, r)

	// 3. Write sweep against dd (the probe's write tests have run: the card holds data).
	benchWriteTable(t, dev, r)

	fmt.Printf("%s done in %v\n", profile, time.Since(t0).Round(time.Second))
	if !auOK {
		t.Errorf("%s: fsbench's AU estimate %s (%s: %s), want the profile's %s", profile,
			formatSize(r.Estimates.AU.Value), r.Estimates.AU.Confidence, r.Estimates.AU.Evidence, formatSize(uint64(p.AUSize)))
	}
}

// benchAlignTable prints the diffs side by side with the AU estimates and reports whether
// fsbench's AU estimate is the profile's.
func benchAlignTable(t *testing.T, p flash.Profile, r *Result, fbPts []benchFBPoint, fbCmd string) bool {
	m, err := flash.NewModel(p, benchProbeCardSize)
	if err != nil {
		t.Fatal(err)
	}
	rs := r.Align.ReadSize // 1024 on a 512-byte-sector loop device, as flashbench --blocksize=1024
	lat := func(off uint64) time.Duration {
		d, err := m.Do(flash.Request{Op: flash.OpRead, Off: off, Len: rs})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	fsb := map[uint64]AlignPoint{}
	fbm := map[uint64]benchFBPoint{}
	var aligns []uint64
	for _, a := range r.Align.Points {
		fsb[a.Align] = a
		aligns = append(aligns, a.Align)
	}
	for _, f := range fbPts {
		fbm[f.align] = f
		if _, ok := fsb[f.align]; !ok {
			aligns = append(aligns, f.align)
		}
	}
	slices.Sort(aligns)
	steps := map[uint64]bool{}
	for _, s := range r.Align.Steps {
		steps[s] = true
	}

	fmt.Printf("\nalignment test: read-time diff = on − (pre + post)/2, µs (reads of %d B before, across and after each boundary)\n", rs)
	fmt.Printf("fsbench: medians over up to 64 odd-multiple boundaries (the default) of the fastest of %d tries; flashbench: mean over 7 boundaries of 8 tries; model: the profile's latencies\n",
		r.Align.Tries)
	w := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "align\tfsbench pre\tfsbench on\tfsbench diff\tstep\tflashbench pre\tflashbench on\tflashbench diff\tmodel diff\t")
	us := func(ns float64) string { return strconv.FormatFloat(ns/1e3, 'f', 1, 64) }
	var fsbDiffs []benchFBPoint // fsbench's diffs, for the plateau rule
	for _, a := range aligns {
		row := []string{formatSize(a), "", "", "", "", "", "", "", ""}
		if f, ok := fsb[a]; ok {
			row[1], row[2], row[3] = us(f.PreNs), us(f.OnNs), us(f.DiffNs)
			if steps[a] {
				row[4] = "step"
			}
			fsbDiffs = append(fsbDiffs, benchFBPoint{align: a, diff: time.Duration(f.DiffNs)})
		}
		if f, ok := fbm[a]; ok {
			row[5], row[6], row[7] = us(float64(f.pre)), us(float64(f.on)), us(float64(f.diff))
		}
		if a >= rs && a+rs <= benchProbeCardSize {
			row[8] = us(float64(lat(a-rs/2) - (lat(a-rs)+lat(a))/2))
		}
		fmt.Fprintln(w, strings.Join(row, "\t")+"\t")
	}
	w.Flush()

	truth := uint64(p.AUSize)
	est := r.Estimates.AU
	agree := func(v uint64) string {
		if v == truth {
			return "= profile AU: agrees"
		}
		return "≠ profile AU: DISAGREES"
	}
	atLeast := ""
	if est.AtLeast {
		atLeast = "at least "
	}
	fmt.Printf("profile AU (truth):            %s\n", formatSize(truth))
	fmt.Printf("fsbench AU estimate:           %s%s (%s confidence) %s\n", atLeast, formatSize(est.Value), est.Confidence, agree(est.Value))
	fmt.Printf("  evidence: %s\n", est.Evidence)
	if len(fsbDiffs) >= 3 {
		v := benchPlateauStart(fsbDiffs)
		fmt.Printf("fsbench diffs, plateau rule:   %s %s (the rule used for flashbench below, on fsbench's diffs)\n", formatSize(v), agree(v))
	}
	if len(fbPts) >= 3 {
		v := benchPlateauStart(fbPts)
		fmt.Printf("flashbench AU (diff plateau):  %s %s; fsbench and flashbench %s\n", formatSize(v), agree(v),
			map[bool]string{true: "agree", false: "DISAGREE"}[v == est.Value])
		fmt.Printf("  plateau rule: smallest alignment from which the diff stays within max(10 %%, 40 µs) of the median of the three largest alignments' diffs\n")
	}
	fmt.Printf("commands:\n  fsbench probe --write --destroy DEV --max-block 4M DEV (alignment test: --max-align 64M, 64 positions, 6 tries by default)\n")
	if fbCmd != "" {
		fmt.Printf("  %s\n", fbCmd)
	}
	return est.Value == truth && !est.AtLeast
}

// ddResult is what dd's summary line says it moved.
type ddResult struct {
	bytes uint64
	secs  float64
}

func (d ddResult) mbps() float64 { return float64(d.bytes) / d.secs / 1e6 }

// ddSummary matches dd's last line. GNU dd leaves out the human-readable sizes in
// parentheses below 1000 bytes ("512 bytes copied, 0.07 s, 7.5 kB/s").
var ddSummary = regexp.MustCompile(`(\d+) bytes (?:\(.*\) )?copied, ([0-9.e+-]+) s`)

// runDD runs dd with args, checks that it moved want bytes and returns its timing and the
// command line.
func runDD(t *testing.T, want uint64, args ...string) (ddResult, string) {
	t.Helper()
	line := "dd " + strings.Join(args, " ")
	cmd := exec.Command("dd", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C") // the summary line is parsed
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	res, err := parseDD(string(out))
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if res.bytes != want {
		t.Fatalf("%s: moved %d bytes, want %d", line, res.bytes, want)
	}
	return res, line
}

func parseDD(out string) (ddResult, error) {
	m := ddSummary.FindStringSubmatch(out)
	if m == nil {
		return ddResult{}, fmt.Errorf("no summary line in dd's output %q", out)
	}
	n, err1 := strconv.ParseUint(m[1], 10, 64)
	s, err2 := strconv.ParseFloat(m[2], 64)
	if err1 != nil || err2 != nil || s <= 0 {
		return ddResult{}, fmt.Errorf("unreadable dd summary %q", m[0])
	}
	return ddResult{bytes: n, secs: s}, nil
}

func sweepAt(pts []SweepPoint, bs uint64) (SweepPoint, bool) {
	for _, p := range pts {
		if p.BlockSize == bs {
			return p, true
		}
	}
	return SweepPoint{}, false
}

// benchReadTable reads, with dd, the blocks fsbench's read sweep read: Count blocks of each
// size from the start of the device.
func benchReadTable(t *testing.T, dev string, r *Result) {
	fmt.Printf("\nread sweep: fsbench (sum of request latencies) vs dd iflag=direct (its wall time), the same blocks from offset 0, MB/s = 10^6 B/s\n")
	w := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "block\tcount\tfsbench MB/s\tdd MB/s\tfsbench/dd\t")
	var cmds []string
	for _, bs := range benchReadSizes {
		p, ok := sweepAt(r.ReadSweep, bs)
		if !ok || p.Count == 0 {
			t.Fatalf("fsbench's read sweep has no %s point: %+v", formatSize(bs), r.ReadSweep)
		}
		n := uint64(p.Count)
		dd, line := runDD(t, n*bs, "if="+dev, "of=/dev/null", "bs="+strconv.FormatUint(bs, 10),
			"count="+strconv.FormatUint(n, 10), "iflag=direct")
		cmds = append(cmds, line)
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%.2f\t%.3f\t\n", formatSize(bs), n, p.MBps, dd.mbps(), p.MBps/dd.mbps())
	}
	w.Flush()
	fmt.Printf("commands:\n  fsbench probe (read sweep: up to 64 reads or 4 MiB per size, stopped after 1 s of reads)\n")
	for _, c := range cmds {
		fmt.Printf("  %s\n", c)
	}
}

// benchWriteTable writes, with dd, what fsbench's write sweep wrote: the same blocks of each
// size at the same place (the middle of the device, AU-aligned), after discarding the same
// range as fsbench did, so that both start from erased flash. fsbench writes Count+1 blocks
// and does not time the first, which pays for what the previous size left open (on an
// AU-mapped card, closing an AU: 60 ms on sd-typical, more than the 64 timed 512 B writes
// take); so dd writes the first block with one command and the Count others with a second,
// and both figures are printed: the second alone (like for like) and the two together (what
// a single dd of Count+1 blocks, as Bootlin ran it, reports).
func benchWriteTable(t *testing.T, dev string, r *Result) {
	au := r.Estimates.AU.Value
	if au == 0 {
		au = defaultAU // what writeTests assumed
	}
	base := alignDown(r.SizeBytes/2, au)
	discardOK := r.DiscardWorks == "yes"
	var cmds []string
	discard := func(length uint64) {
		if !discardOK {
			return
		}
		args := []string{"-o", strconv.FormatUint(base, 10), "-l", strconv.FormatUint(length, 10), dev}
		line := "blkdiscard " + strings.Join(args, " ")
		if out, err := exec.Command("blkdiscard", args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		cmds = append(cmds, line)
	}
	// write writes count blocks of bs with dd from block skip on (seek is in blocks of bs).
	write := func(bs, count, skip uint64) ddResult {
		res, line := runDD(t, bs*count, "if=/dev/zero", "of="+dev, "bs="+strconv.FormatUint(bs, 10),
			"count="+strconv.FormatUint(count, 10), "seek="+strconv.FormatUint(base/bs+skip, 10), "oflag=direct")
		cmds = append(cmds, line)
		return res
	}

	fmt.Printf("\nwrite sweep at %s (the middle of the card), MB/s: fsbench (sequential O_DIRECT, xorshift data; 1 untimed + N timed writes)\n", formatSize(base))
	fmt.Printf("vs dd oflag=direct from /dev/zero, run as fsbench writes: one dd of the first block (timed apart: it pays for what the previous size left open),\n")
	fmt.Printf("then one dd of the N others; \"dd 1+N\" is the single-dd figure (all N+1 blocks: first + rest), what one dd of count=N+1 measures\n")
	if !discardOK {
		fmt.Printf("no discard before the dd writes: fsbench's discard did not work (%s)\n", r.DiscardWorks)
	}
	w := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "block\tN\tfsbench MB/s\tdd MB/s\tfsbench/dd\tdd first write ms\tdd 1+N MB/s\tfsbench/dd 1+N\t")
	for _, bs := range benchWriteSizes {
		p, ok := sweepAt(r.WriteSweep, bs)
		if !ok || p.Count == 0 {
			t.Fatalf("fsbench's write sweep has no %s point: %+v", formatSize(bs), r.WriteSweep)
		}
		// The count writeSweep planned (it may have stopped early on its time cap): its
		// discard covered count+1 blocks rounded up to 1 MiB.
		planned := uint64(max(8, min(64, writeSweepBytes/bs)))
		discard(alignUp((planned+1)*bs, 1<<20))
		n := uint64(p.Count)
		first := write(bs, 1, 0)
		rest := write(bs, n, 1)
		all := ddResult{bytes: first.bytes + rest.bytes, secs: first.secs + rest.secs}
		fmt.Fprintf(w, "%s\t%d\t%.2f\t%.2f\t%.3f\t%.1f\t%.2f\t%.3f\t\n", formatSize(bs), n, p.MBps, rest.mbps(), p.MBps/rest.mbps(),
			first.secs*1e3, all.mbps(), p.MBps/all.mbps())
	}
	for _, x := range benchDDOnlyWrites {
		discard(x.bs * x.count)
		dd := write(x.bs, x.count, 0)
		fmt.Fprintf(w, "%s\t%d\t-\t%.2f\t-\t\t\t\t\n", formatSize(x.bs), x.count, dd.mbps())
	}
	w.Flush()
	fmt.Printf("commands (in this order):\n  fsbench probe --write --destroy DEV --max-block 4M DEV (write sweep: 512 B ... 1 MiB, 1+max(8, min(64, 256 KiB/size)) writes per size, each size's range discarded first)\n")
	for _, c := range cmds {
		fmt.Printf("  %s\n", c)
	}
	fmt.Printf("  (Bootlin's script: dd ... conv=fdatasync, 512 B ... 64 MiB; here oflag=direct reaches the card per request, as fsbench's O_DIRECT writes do, so no final flush is added)\n")
}

// benchFBPoint is one line of flashbench -a:
// "align 4194304	pre 1.01ms	on 1.33ms	post 1.01ms	diff 316µs".
type benchFBPoint struct {
	align         uint64
	pre, on, post time.Duration
	diff          time.Duration
}

var benchFBLine = regexp.MustCompile(`^align (\d+)\s+pre (\S+)\s+on (\S+)\s+post (\S+)\s+diff (\S+)`)

// parseFlashbenchAlign reads flashbench -a's output, smallest alignment first.
func parseFlashbenchAlign(out string) ([]benchFBPoint, error) {
	var pts []benchFBPoint
	for _, line := range strings.Split(out, "\n") {
		f := benchFBLine.FindStringSubmatch(strings.TrimSpace(line))
		if f == nil {
			continue
		}
		align, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("flashbench line %q: %w", line, err)
		}
		var d [4]time.Duration
		for i := range d {
			if d[i], err = parseFBDuration(f[i+2]); err != nil {
				return nil, fmt.Errorf("flashbench line %q: %w", line, err)
			}
		}
		pts = append(pts, benchFBPoint{align: align, pre: d[0], on: d[1], post: d[2], diff: d[3]})
	}
	if len(pts) < 5 {
		return nil, fmt.Errorf("%d alignment lines in flashbench's output, want a dozen or more:\n%s", len(pts), out)
	}
	slices.SortFunc(pts, func(a, b benchFBPoint) int { return cmp.Compare(a.align, b.align) })
	return pts, nil
}

// parseFBDuration reads flashbench's format_ns output: "812ns", "1.01ms", "316µs", "1.234s".
// format_ns writes into 8 bytes with snprintf and prints every negative value (a diff) in
// nanoseconds, so "-10476ns" arrives cut to "-10476n" and "-10.5µs" to "-10.5µ" (µ is two
// bytes); the cut unit is restored. A value cut into its digits cannot be read back: error.
// (A copy of internal/simcard's benchmark helper, which another package cannot import.)
func parseFBDuration(s string) (time.Duration, error) {
	s = strings.Replace(s, "µ", "u", 1)
	if strings.HasSuffix(s, "n") || strings.HasSuffix(s, "u") || strings.HasSuffix(s, "m") {
		s += "s"
	}
	return time.ParseDuration(s)
}

// benchPlateauStart is how a flashbench user reads the AU off -a's output: the smallest
// alignment from which the diff stays at the level of the largest alignments (the median of
// the top three, within 10 % of it or 40 µs, the scatter of a FUSE round trip). Walking down
// from the largest alignment, the plateau ends at the first diff below level − tolerance.
// (internal/simcard's benchmark uses the same rule.)
func benchPlateauStart(pts []benchFBPoint) uint64 {
	sorted := slices.Clone(pts)
	slices.SortFunc(sorted, func(a, b benchFBPoint) int { return cmp.Compare(b.align, a.align) })
	top := []time.Duration{sorted[0].diff, sorted[1].diff, sorted[2].diff}
	slices.Sort(top)
	level := top[1]
	tol := max(level/10, 40*time.Microsecond)
	start := sorted[0].align
	for _, p := range sorted {
		if p.diff < level-tol {
			break
		}
		start = p.align
	}
	return start
}

// TestBenchHelpers checks the benchmark's parsers and plateau rule on flashbench's and dd's
// real output formats, without root.
func TestBenchHelpers(t *testing.T) {
	fbOut := "align 268435456\tpre 1.01ms\ton 1.33ms\tpost 1.01ms\tdiff 316µs\n" +
		"align 134217728\tpre 1.01ms\ton 1.32ms\tpost 1.01ms\tdiff 310µs\n" +
		"align 67108864\tpre 1.01ms\ton 1.33ms\tpost 1ms\tdiff 322µs\n" +
		"align 4194304\tpre 1.01ms\ton 1.31ms\tpost 1.01ms\tdiff 300µs\n" +
		"align 2097152\tpre 1.01ms\ton 1.16ms\tpost 1.01ms\tdiff 150µs\n" +
		"align 1024\tpre 812ns\ton 900ns\tpost 812ns\tdiff -10476n\n"
	for _, c := range []struct {
		name    string
		out     string
		wantErr bool
		wantN   int
		wantAU  uint64
	}{
		{"plateau from 4 MiB", fbOut, false, 6, 4 << 20},
		{"too few lines", "align 4096\tpre 1ms\ton 1ms\tpost 1ms\tdiff 0ns\n", true, 0, 0},
		{"unreadable diff", strings.Replace(fbOut, "-10476n", "-123456", 1), true, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			pts, err := parseFlashbenchAlign(c.out)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want error %v", err, c.wantErr)
			}
			if c.wantErr {
				return
			}
			if len(pts) != c.wantN || pts[0].align != 1024 || pts[0].diff != -10476 {
				t.Errorf("parsed %+v: want %d points, smallest first, -10476 ns at 1 KiB", pts, c.wantN)
			}
			if got := benchPlateauStart(pts); got != c.wantAU {
				t.Errorf("plateau at %s, want %s", formatSize(got), formatSize(c.wantAU))
			}
		})
	}
	for _, c := range []struct {
		out     string
		want    ddResult
		wantErr bool
	}{
		{"16+0 records in\n16+0 records out\n65536 bytes (66 kB, 64 KiB) copied, 0.0123 s, 5.3 MB/s\n", ddResult{65536, 0.0123}, false},
		{"1+0 records in\n1+0 records out\n4194304 bytes (4.2 MB, 4.0 MiB) copied, 1.5 s, 2.8 MB/s\n", ddResult{4194304, 1.5}, false},
		{"1+0 records in\n1+0 records out\n512 bytes copied, 0.0681545 s, 7.5 kB/s\n", ddResult{512, 0.0681545}, false},
		{"dd: failed to open '/dev/loop9': Permission denied\n", ddResult{}, true},
	} {
		got, err := parseDD(c.out)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("parseDD(%q) = %+v, %v; want %+v, error %v", c.out, got, err, c.want, c.wantErr)
		}
	}
}
