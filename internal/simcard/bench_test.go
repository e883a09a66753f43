//go:build linux && !(arm || 386 || mips || mipsle)

// The side-by-side benchmark needs the FUSE server, which is built only for 64-bit targets
// (see serve_fuse.go).

package simcard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/simcard"
	simkind "github.com/fsbench/fsbench/internal/targets/simcard"
	"github.com/fsbench/fsbench/internal/testkit/simcardtest"
)

// The benchmark's fixed parameters. The card is 1 GiB and served in real time (time scale 1):
// the point is to see what dd, fio and flashbench measure through a loop device, in seconds
// of the wall clock, against what the model says.
const (
	// measureRandomWrites is how many 4 KiB random writes flash.Measure's figure is made of.
	measureRandomWrites = 1000
	benchCardSize       = 1 << 30
	benchScale          = 1.0
	// goal is the tolerance the simulated card should meet against the modelled figures.
	goal = 0.15
	// ddBytes is how much each dd step moves: a few MiB, so that a 4 KiB step on the slowest
	// card (about 1.5 ms per request) still takes only ~3 s.
	ddBytes = 8 << 20
	// ddRegion is where the dd sweeps write and read, past the region fio's sequential jobs
	// use (which ends at 8 MiB + 64 MiB at most); each step gets its own AU-aligned 8 MiB.
	ddRegion = 128 << 20
	// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, which the kernel
	// fixes at 100 for user space on every architecture Go supports on Linux, whatever the
	// kernel's internal HZ.
	userHZ = 100
)

var benchProfiles = []string{"sd-typical", "sd-cheap-old", "sd-a1-modern", "emmc"}

// ddSizes are the dd sweep's block sizes: 4 KiB to 4 MiB in steps of four.
var ddSizes = []uint64{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}

// TestBenchSimcardVsTools serves each built-in profile as a 1 GiB card in real time, attaches
// a direct-I/O loop device over it, and measures it with fio (sequential 512 KiB write and
// read, 4 KiB random read and write at queue depth 1), dd sweeps by block size and, when
// FLASHBENCH names a flashbench binary, flashbench -a. It prints measured against modelled
// figures, the FUSE path's overhead per request and the server's CPU per request.
//
// It is a benchmark, not a test of the model: it fails only when a tool or the server fails,
// when the card did not see the requests the tool reports, or when it leaves a mount or loop
// device behind; figures outside the 15 % goal are printed as such. Run it with
//
//	sudo FSBENCH_BENCH=1 FLASHBENCH=/path/to/flashbench go test -count=1 -run TestBenchSimcardVsTools -v -timeout 30m ./internal/simcard/
//
// FSBENCH_BIN may name an fsbench binary to use instead of building one.
func TestBenchSimcardVsTools(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") == "" {
		t.Skip("benchmark: run with FSBENCH_BENCH=1 (make bench-simcard), as root")
	}
	if os.Geteuid() != 0 {
		t.Skip("benchmark needs root: it mounts FUSE and attaches loop devices (run with sudo)")
	}
	bin, _ := simcardtest.Binary(t)
	fio, fioErr := exec.LookPath("fio")
	if fioErr != nil {
		fmt.Printf("\nBENCH could not run fio: %v; install it (Debian: apt-get install fio) for the fio rows. The dd sweeps still run.\n", fioErr)
	}
	flashbench := os.Getenv("FLASHBENCH")
	if flashbench == "" {
		fmt.Printf("\nBENCH flashbench part skipped: FLASHBENCH is unset. Build flashbench (git clone https://github.com/bradfa/flashbench && make, outside this repository) and run with FLASHBENCH=/path/to/flashbench.\n")
	} else if st, err := os.Stat(flashbench); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		t.Fatalf("FLASHBENCH=%s is not an executable file (%v): point it at the flashbench binary built with make", flashbench, err)
	}

	var rows []row
	var cpus []cpuRow
	var fbs []string
	fmt.Printf("\nBENCH load average at the start: %s", procLoadavg())
	for _, name := range benchProfiles {
		t.Run(name, func(t *testing.T) {
			b := startBenchCard(t, bin, name)
			if fioErr == nil {
				r, c := b.fioJobs(t, fio)
				rows, cpus = append(rows, r...), append(cpus, c...)
			}
			r, c := b.ddSweeps(t)
			rows, cpus = append(rows, r...), append(cpus, c...)
			if flashbench != "" && (name == "sd-typical" || name == "sd-cheap-old") {
				fbs = append(fbs, b.flashbenchAlign(t, flashbench))
			}
		})
		// The subtest's cleanups have run: nothing of this card may remain.
		checkNothingLeft(t)
	}
	fmt.Printf("\nBENCH load average at the end: %s", procLoadavg())
	printTable(rows)
	printCPU(cpus)
	for _, s := range fbs {
		fmt.Print(s)
	}
}

// benchCard is one served card with a loop device over it.
type benchCard struct {
	name  string
	prof  flash.Profile
	fig   flash.Figures
	sc    *simkind.Simcard
	loop  *session.Loop
	cardP string
}

func startBenchCard(t *testing.T, bin, name string) *benchCard {
	p, err := flash.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := flash.NewModel(p, benchCardSize)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	var rt simcard.RoundTrip
	sc, err := simkind.StartSimcard(context.Background(), simkind.SimcardOptions{
		Profile: name, Size: benchCardSize, Dir: filepath.Join(tmp, "mnt"),
		Backing: filepath.Join(tmp, "card.img"), TimeScale: benchScale,
		Command: []string{bin}, PathCalibration: &rt,
	})
	if err != nil {
		t.Fatalf("start %s card: %v", name, err)
	}
	fmt.Printf("\nBENCH %s: path offset %v, the %s (load %s)\n", name, rt.Offset(), rt, loadavg())
	// Cleanups run last-registered first: the loop device is detached before the server is
	// stopped, because the server cannot unmount while the kernel holds DIR/card open.
	t.Cleanup(func() {
		if err := sc.Stop(); err != nil {
			t.Errorf("stop %s server (pid %d): %v", name, sc.Pid(), err)
		}
	})
	l, err := session.AttachLoop(sc.CardPath(), session.LoopOptions{DirectIO: true})
	if err != nil {
		t.Fatalf("attach loop device over %s: %v", sc.CardPath(), err)
	}
	t.Cleanup(func() {
		if err := l.Detach(); err != nil {
			t.Errorf("detach %s: %v", l.Path, err)
		}
	})
	if !l.DirectIO {
		// Without direct I/O the host page cache would absorb and reshape the requests and
		// the figures would be the page cache's, not the card's.
		t.Fatalf("%s over %s: the kernel refused direct I/O; the figures would be meaningless", l.Path, sc.CardPath())
	}
	return &benchCard{name: name, prof: p, fig: flash.Measure(m, 1), sc: sc, loop: l, cardP: sc.CardPath()}
}

// sample is the server's state at one moment.
type sample struct {
	st   simcard.Stats
	cpu  time.Duration // utime + stime of the whole server process (all threads)
	load string        // the machine's 1-minute load average
}

func (b *benchCard) sample(t *testing.T) sample {
	st, err := b.sc.FullStats()
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := procCPU(b.sc.Pid())
	if err != nil {
		t.Fatal(err)
	}
	return sample{st: st, cpu: cpu, load: loadavg()}
}

// procCPU reads utime and stime (fields 14 and 15) from /proc/PID/stat. The command name
// (field 2) may contain spaces and parentheses, so the fields are counted from the last ')'.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("server CPU time: %w", err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("server CPU time: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("server CPU time: /proc/%d/stat has %d fields after the name", pid, len(f))
	}
	// f[0] is field 3 (state), so utime (14) is f[11] and stime (15) f[12].
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("server CPU time: %w", err)
	}
	return time.Duration(u+s) * time.Second / userHZ, nil
}

// span is what the card saw between two samples.
type span struct {
	requests uint64
	busy     time.Duration // modelled time of those requests (Counters.BusyNs)
	waited   time.Duration // real time the server waited for them
	cpu      time.Duration
	sizes    string               // request sizes that reached the card, most frequent first
	server   simcard.Distribution // the server's own time per request
	late     uint64               // replies that left after their deadline
	lateNs   time.Duration
	offset   time.Duration // the card's path offset
	capped   uint64        // requests that started with less, a faster round trip seen
	load     [2]string     // 1-minute load average at the start and the end
}

func spanOf(a, z sample) span {
	c := z.st.Counters.Sub(a.st.Counters)
	return span{
		requests: c.Reads + c.Writes + c.Discards + c.Flushes,
		busy:     time.Duration(c.BusyNs),
		waited:   time.Duration(z.st.WaitedNs - a.st.WaitedNs),
		cpu:      z.cpu - a.cpu,
		sizes:    sizeMix(a.st, z.st),
		server:   z.st.ServerTime.Sub(a.st.ServerTime),
		late:     z.st.LateRequests - a.st.LateRequests,
		lateNs:   time.Duration(z.st.LateNs - a.st.LateNs),
		offset:   time.Duration(z.st.PathOffsetNs),
		capped:   z.st.PathOffsetCapped - a.st.PathOffsetCapped,
		load:     [2]string{a.load, z.load},
	}
}

// procLoadavg returns /proc/loadavg as it is.
func procLoadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err.Error() + "\n"
	}
	return string(b)
}

// loadavg returns the 1-minute load average: on this 2-core machine other builds and QEMU
// run beside the benchmark, and a figure taken under load says more about them.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

func sizeMix(a, z simcard.Stats) string {
	type kv struct {
		op   string
		size uint64
		n    uint64
	}
	var all []kv
	for _, x := range []struct {
		op   string
		a, z map[uint64]uint64
	}{{"r", a.ReadSizes, z.ReadSizes}, {"w", a.WriteSizes, z.WriteSizes}} {
		for s, n := range x.z {
			if d := n - x.a[s]; d > 0 {
				all = append(all, kv{x.op, s, d})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	var parts []string
	for i, e := range all {
		if i == 3 {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s%s×%d", e.op, bytesize.Format(e.size), e.n))
	}
	return strings.Join(parts, " ")
}

// row is one line of the result table.
type row struct {
	profile, measure, unit string
	measured, modelled     float64
	source                 string        // where modelled comes from
	sent                   float64       // the same figure from the model's time for the requests the tool sent
	tool                   time.Duration // the sum of the latencies the tool saw
	sp                     span
}

// cpuRow is the server's CPU per request for one job.
type cpuRow struct {
	profile, job string
	requests     uint64
	cpu          time.Duration
	wall         time.Duration
}

// fioResult is the part of fio's JSON output the benchmark uses.
type fioResult struct {
	IOPS     float64 `json:"iops"`
	BwBytes  float64 `json:"bw_bytes"`
	TotalIOs uint64  `json:"total_ios"`
	Runtime  uint64  `json:"runtime"` // ms
	Lat      struct {
		Mean float64 `json:"mean"`
	} `json:"lat_ns"`
}

type fioJob struct {
	name, rw string
	bs       uint64
	offset   uint64
	size     uint64 // 0: the whole device
	runtime  int    // seconds
	timed    bool   // time_based: run for runtime even when size is covered
	ios      int    // number_ios: stop after this many I/Os (0: no limit)
	endFsync bool
	measure  string
	unit     string
	modelled float64
}

// fioJobs runs the four fio jobs in the order that puts the card in the state flash.Measure
// models for each:
//
//  1. 4 KiB random write over the whole device on the FRESH card (all erased, nothing
//     mapped), exactly as many writes as Measure does (its figure depends on how many AUs
//     the writes revisit, so a run of another length measures another card state: a
//     10-second run did ~210 writes on sd-typical and came out 23 % faster). No
//     preconditioning: on a full AU-mapped card every random
//     write would copy most of an AU (sd-typical: ~4 MiB at 45 ms/MiB, ~0.2 s a write), and
//     filling 1 GiB first takes 2 min (sd-typical) to 6 min (sd-cheap-old) in real time per
//     card; the fresh-card figure is the one the profiles document. fio's random offsets may
//     repeat (norandommap), as Measure's do.
//  2. 512 KiB sequential write of 64 MiB from the start of the AU-mapped part (after the
//     page-mapped FAT area of sd-typical), flushed at the end, as Measure does. Whole AUs are
//     rewritten in order, so the few pages step 1 left there are overwritten, not copied;
//     the only difference from Measure's fresh card is an erase of previously used physical
//     AUs (2 × 2 ms per 4 MiB AU on sd-typical, under 1 %).
//  3. 512 KiB sequential read of the same 64 MiB.
//  4. 4 KiB random read over the whole device (the model's read time does not depend on
//     what was written).
func (b *benchCard) fioJobs(t *testing.T, fio string) ([]row, []cpuRow) {
	seqStart := uint64(b.prof.PageMappedArea)
	if b.prof.FTL == flash.FTLPage {
		seqStart = 0
	}
	jobs := []fioJob{
		{name: "randwrite", rw: "randwrite", bs: 4 << 10, ios: measureRandomWrites, runtime: 600, endFsync: true,
			measure: "fio 4K randwrite", unit: "IOPS", modelled: b.fig.RandWriteIOPS},
		{name: "seqwrite", rw: "write", bs: 512 << 10, offset: seqStart, size: 64 << 20, runtime: 20, endFsync: true,
			measure: "fio 512K seq write", unit: "MB/s", modelled: b.fig.SeqWriteMBps},
		{name: "seqread", rw: "read", bs: 512 << 10, offset: seqStart, size: 64 << 20, runtime: 10,
			measure: "fio 512K seq read", unit: "MB/s", modelled: b.fig.SeqReadMBps},
		{name: "randread", rw: "randread", bs: 4 << 10, runtime: 10, timed: true,
			measure: "fio 4K randread", unit: "IOPS", modelled: b.fig.RandReadIOPS},
	}
	var rows []row
	var cpus []cpuRow
	for _, j := range jobs {
		args := []string{"--name=" + j.name, "--filename=" + b.loop.Path, "--rw=" + j.rw,
			"--bs=" + strconv.FormatUint(j.bs, 10), "--ioengine=psync", "--iodepth=1", "--direct=1",
			"--numjobs=1", "--norandommap", "--randrepeat=1",
			"--offset=" + strconv.FormatUint(j.offset, 10),
			"--runtime=" + strconv.Itoa(j.runtime), "--output-format=json"}
		if j.size > 0 {
			args = append(args, "--size="+strconv.FormatUint(j.size, 10))
		}
		if j.ios > 0 {
			args = append(args, "--number_ios="+strconv.Itoa(j.ios))
		}
		if j.timed {
			args = append(args, "--time_based")
		}
		if j.endFsync {
			args = append(args, "--end_fsync=1")
		}
		a := b.sample(t)
		start := time.Now()
		out, err := exec.Command(fio, args...).Output()
		wall := time.Since(start)
		z := b.sample(t)
		if err != nil {
			t.Fatalf("fio %s on %s: %v\n%s", j.name, b.name, err, stderrOf(err))
		}
		res, err := parseFio(out, j.rw)
		if err != nil {
			t.Fatalf("fio %s on %s: %v", j.name, b.name, err)
		}
		sp := spanOf(a, z)
		if res.TotalIOs == 0 || res.IOPS <= 0 {
			t.Fatalf("fio %s on %s: no I/O completed: %+v", j.name, b.name, res)
		}
		// The loop device may split a request (the FUSE limit is 1 MiB) but never merge two
		// at queue depth 1, so the card must have seen at least as many requests.
		if sp.requests < res.TotalIOs {
			t.Errorf("fio %s on %s: fio did %d I/Os but the card saw %d requests", j.name, b.name, res.TotalIOs, sp.requests)
		}
		if z.st.Errors != a.st.Errors {
			t.Errorf("fio %s on %s: the server counted %d failed requests", j.name, b.name, z.st.Errors-a.st.Errors)
		}
		measured := res.IOPS
		perIO := float64(sp.busy) / float64(res.TotalIOs) // modelled ns per fio I/O
		sent := 1e9 / perIO
		if j.unit == "MB/s" {
			measured = res.BwBytes / 1e6
			sent = float64(j.bs) / perIO * 1e3
		}
		rows = append(rows, row{
			profile: b.name, measure: j.measure, unit: j.unit, measured: measured, modelled: j.modelled,
			source: "Measure", sent: sent, tool: time.Duration(res.Lat.Mean * float64(res.TotalIOs)), sp: sp,
		})
		cpus = append(cpus, cpuRow{profile: b.name, job: j.measure, requests: sp.requests, cpu: sp.cpu, wall: wall})
	}
	return rows, cpus
}

// parseFio reads fio's JSON (fio may print warnings before it) and returns the read or write
// part of its one job.
func parseFio(out []byte, rw string) (fioResult, error) {
	i := bytes.IndexByte(out, '{')
	if i < 0 {
		return fioResult{}, fmt.Errorf("no JSON in fio's output: %q", out)
	}
	var doc struct {
		Jobs []struct {
			Error int       `json:"error"`
			Read  fioResult `json:"read"`
			Write fioResult `json:"write"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out[i:], &doc); err != nil {
		return fioResult{}, fmt.Errorf("decode fio JSON: %w", err)
	}
	if len(doc.Jobs) != 1 {
		return fioResult{}, fmt.Errorf("fio reported %d jobs, want 1", len(doc.Jobs))
	}
	j := doc.Jobs[0]
	if j.Error != 0 {
		return fioResult{}, fmt.Errorf("fio job error %d", j.Error)
	}
	if strings.Contains(rw, "write") {
		return j.Write, nil
	}
	return j.Read, nil
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

var ddRe = regexp.MustCompile(`(\d+) bytes .* copied, ([0-9.e+-]+) s`)

// ddSweeps writes, then reads, ddBytes at each block size with dd and direct I/O, each size
// in its own 8 MiB region from ddRegion on (AU-aligned for every profile, and not written
// before: fresh AUs, written sequentially). The modelled figure is the model's own time for
// the requests that reached the card (from DIR/stats), so the ratio is the cost of the path
// between dd and the model: loop device, FUSE, server.
func (b *benchCard) ddSweeps(t *testing.T) ([]row, []cpuRow) {
	var rows []row
	var cpus []cpuRow
	for _, write := range []bool{true, false} {
		for k, bs := range ddSizes {
			off := uint64(ddRegion) + uint64(k)*ddBytes
			count := strconv.FormatUint(ddBytes/bs, 10)
			bsArg := "bs=" + strconv.FormatUint(bs, 10)
			var args []string
			what := "dd read "
			if write {
				what = "dd write "
				args = []string{"if=/dev/zero", "of=" + b.loop.Path, bsArg, "count=" + count,
					"seek=" + strconv.FormatUint(off/bs, 10), "oflag=direct", "conv=notrunc"}
			} else {
				args = []string{"if=" + b.loop.Path, "of=/dev/null", bsArg, "count=" + count,
					"skip=" + strconv.FormatUint(off/bs, 10), "iflag=direct"}
			}
			what += bytesize.Format(bs)
			cmd := exec.Command("dd", args...)
			cmd.Env = append(os.Environ(), "LC_ALL=C") // dd's summary line is parsed
			a := b.sample(t)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			wall := time.Since(start)
			z := b.sample(t)
			if err != nil {
				t.Fatalf("dd %v on %s: %v\n%s", args, b.name, err, out)
			}
			m := ddRe.FindSubmatch(out)
			if m == nil {
				t.Fatalf("dd %v: no summary line in %q", args, out)
			}
			n, _ := strconv.ParseFloat(string(m[1]), 64)
			secs, _ := strconv.ParseFloat(string(m[2]), 64)
			if n != ddBytes || secs <= 0 {
				t.Fatalf("dd %v on %s: moved %.0f bytes in %g s, want %d bytes", args, b.name, n, secs, ddBytes)
			}
			sp := spanOf(a, z)
			if sp.requests == 0 || sp.busy <= 0 {
				t.Fatalf("dd %v on %s: the card saw no requests", args, b.name)
			}
			modelled := n / sp.busy.Seconds() / 1e6
			rows = append(rows, row{
				profile: b.name, measure: what, unit: "MB/s", measured: n / secs / 1e6, modelled: modelled,
				source: "model(sent)", sent: modelled, tool: time.Duration(secs * 1e9), sp: sp,
			})
			cpus = append(cpus, cpuRow{profile: b.name, job: what, requests: sp.requests, cpu: sp.cpu, wall: wall})
		}
	}
	return rows, cpus
}

// fbLine is one line of flashbench -a: "align 4194304	pre 1.01ms	on 1.33ms	post 1.01ms	diff 316µs".
var fbLine = regexp.MustCompile(`^align (\d+)\s+pre (\S+)\s+on (\S+)\s+post (\S+)\s+diff (\S+)`)

// parseFBDuration reads flashbench's format_ns output: "812ns", "1.01ms", "316µs", "1.234s".
// format_ns writes into 8 bytes with snprintf, and prints every negative value (diff) in
// nanoseconds, so "-10476ns" arrives cut to "-10476n" and "-10.5µs" to "-10.5µ" (µ is two
// bytes); the cut unit is restored. A value cut into its digits (below -999999 ns) cannot be
// read back and is an error.
func parseFBDuration(s string) (time.Duration, error) {
	s = strings.Replace(s, "µ", "u", 1)
	if strings.HasSuffix(s, "n") || strings.HasSuffix(s, "u") || strings.HasSuffix(s, "m") {
		s += "s"
	}
	return time.ParseDuration(s)
}

type fbPoint struct {
	align          uint64
	pre, on, post  time.Duration
	diff, modelled time.Duration
}

// flashbenchAlign runs flashbench -a with 1 KiB reads. For each power-of-two alignment it
// times reads just before, across and just after the boundary; the "diff" (across minus the
// mean of the others) steps up at the page, plane-group and AU boundaries, and the AU size
// is where it stops growing: the plateau. The model's diff for the same three reads is
// printed beside it.
func (b *benchCard) flashbenchAlign(t *testing.T, fb string) string {
	out, err := exec.Command(fb, "-a", "--blocksize=1024", b.loop.Path).CombinedOutput()
	if err != nil {
		t.Fatalf("flashbench -a on %s: %v\n%s", b.name, err, out)
	}
	m, err := flash.NewModel(b.prof, benchCardSize)
	if err != nil {
		t.Fatal(err)
	}
	lat := func(off uint64) time.Duration {
		d, err := m.Do(flash.Request{Op: flash.OpRead, Off: off, Len: 1024})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var pts []fbPoint
	for _, line := range strings.Split(string(out), "\n") {
		f := fbLine.FindStringSubmatch(strings.TrimSpace(line))
		if f == nil {
			continue
		}
		align, _ := strconv.ParseUint(f[1], 10, 64)
		var d [4]time.Duration
		for i := range d {
			if d[i], err = parseFBDuration(f[i+2]); err != nil {
				t.Fatalf("flashbench line %q: %v", line, err)
			}
		}
		pre, on, post := lat(align-1024), lat(align-512), lat(align)
		pts = append(pts, fbPoint{align: align, pre: d[0], on: d[1], post: d[2], diff: d[3], modelled: on - (pre+post)/2})
	}
	if len(pts) < 5 {
		t.Fatalf("flashbench -a on %s: %d alignment lines in its output, want a dozen or more:\n%s", b.name, len(pts), out)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "\nBENCH flashbench -a --blocksize=1024 on %s (%s); modelled diff from the model for the same reads\n", b.name, b.loop.Path)
	w := tabwriter.NewWriter(&s, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "align\tpre\ton\tpost\tdiff\tmodelled diff\t")
	for _, p := range pts {
		fmt.Fprintf(w, "%s\t%v\t%v\t%v\t%v\t%v\t\n", bytesize.Format(p.align), p.pre.Round(time.Microsecond), p.on.Round(time.Microsecond), p.post.Round(time.Microsecond), p.diff, p.modelled)
	}
	w.Flush()
	measured := plateauStart(pts, func(p fbPoint) time.Duration { return p.diff })
	modelled := plateauStart(pts, func(p fbPoint) time.Duration { return p.modelled })
	au := uint64(b.prof.AUSize)
	verdict := "plateau starts at the AU size"
	if measured != au {
		verdict = "plateau does NOT start at the AU size"
	}
	fmt.Fprintf(&s, "diff plateau starts at %s (model: %s); profile AU size %s: %s\n",
		bytesize.Format(measured), bytesize.Format(modelled), bytesize.Format(au), verdict)
	if modelled != au {
		t.Errorf("%s: the model's own flashbench diffs plateau at %s, not at the AU size %s", b.name, bytesize.Format(modelled), bytesize.Format(au))
	}
	return s.String()
}

// plateauStart is the smallest alignment from which the diff stays at the level of the
// largest alignments: level = median of the top three, tolerance 10 % of it (at least 40 µs,
// the scatter of a FUSE round trip). Walking down from the largest alignment, the plateau
// ends at the first diff below level − tolerance.
func plateauStart(pts []fbPoint, diff func(fbPoint) time.Duration) uint64 {
	sorted := append([]fbPoint(nil), pts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].align > sorted[j].align })
	top := []time.Duration{diff(sorted[0]), diff(sorted[1]), diff(sorted[2])}
	sort.Slice(top, func(i, j int) bool { return top[i] < top[j] })
	level := top[1]
	tol := max(level/10, 40*time.Microsecond)
	start := sorted[0].align
	for _, p := range sorted {
		if diff(p) < level-tol {
			break
		}
		start = p.align
	}
	return start
}

func printTable(rows []row) {
	fmt.Printf("\nBENCH simulated cards (1 GiB, time scale 1) through a direct-I/O loop device, queue depth 1\n")
	fmt.Printf("modelled: Measure = flash.Measure's headline figure (fresh card, its own request pattern); model(sent) = the model's time for the requests that reached the card.\n")
	fmt.Printf("sent: the figure the model's time for the requests the tool actually sent gives, and measured/sent. Per card request: host = the time the tool saw beyond the modelled time\n")
	fmt.Printf("(loop device, FUSE, server, less the card's path offset); server p50/p99 = the server's own time (arrival to reply ready, from DIR/stats); late = replies that left after\n")
	fmt.Printf("their modelled completion (count, total); offset = the card's calibrated path offset (/requests capped by a faster round trip); load = 1-minute load average at the start and end of the measurement.\n")
	w := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "profile\tmeasure\tunit\tmeasured\tmodelled\tsource\tratio\tgoal ±15%\tsent\tmeas/sent\tmodelled µs/req\thost µs/req\tserver p50/p99 µs\tlate\toffset µs\tload\trequest sizes")
	within := 0
	var server simcard.Distribution
	var late, requests uint64
	var lateNs time.Duration
	for _, r := range rows {
		ratio := r.measured / r.modelled
		verdict := "within"
		if ratio < 1-goal || ratio > 1+goal {
			verdict = "OUTSIDE"
		} else {
			within++
		}
		n := float64(r.sp.requests)
		fmt.Fprintf(w, "%s\t%s\t%s\t%.4g\t%.4g\t%s\t%.3f\t%s\t%.4g\t%.3f\t%.0f\t%.0f\t%.0f/%.0f\t%d, %v\t%.0f/%d\t%s→%s\t%s\n",
			r.profile, r.measure, r.unit, r.measured, r.modelled, r.source, ratio, verdict, r.sent, r.measured/r.sent,
			float64(r.sp.busy.Microseconds())/n, float64((r.tool-r.sp.busy).Microseconds())/n,
			float64(r.sp.server.P50Ns)/1e3, float64(r.sp.server.P99Ns)/1e3, r.sp.late, r.sp.lateNs.Round(time.Microsecond),
			float64(r.sp.offset.Nanoseconds())/1e3, r.sp.capped, r.sp.load[0], r.sp.load[1], r.sp.sizes)
		server = merge(server, r.sp.server)
		late += r.sp.late
		lateNs += r.sp.lateNs
		requests += r.sp.requests
	}
	w.Flush()
	fmt.Printf("\nBENCH %d of %d figures within 15 %% of the profile; server's own time per request p50 %v, p99 %v; %d of %d replies late (%v in all)\n",
		within, len(rows), time.Duration(server.P50Ns), time.Duration(server.P99Ns), late, requests, lateNs.Round(time.Millisecond))
}

// merge adds two distributions of disjoint sets of requests.
func merge(a, b simcard.Distribution) simcard.Distribution {
	counts := map[uint64]uint64{}
	for _, x := range append(append([]simcard.Bucket(nil), a.Buckets...), b.Buckets...) {
		counts[x.LeNs] += x.Count
	}
	out := simcard.Distribution{Count: a.Count + b.Count, SumNs: a.SumNs + b.SumNs, MaxNs: max(a.MaxNs, b.MaxNs)}
	for le, n := range counts {
		out.Buckets = append(out.Buckets, simcard.Bucket{LeNs: le, Count: n})
	}
	sort.Slice(out.Buckets, func(i, j int) bool { return out.Buckets[i].LeNs < out.Buckets[j].LeNs })
	out.P50Ns, out.P99Ns = out.Quantile(0.5), out.Quantile(0.99)
	return out
}

func printCPU(cpus []cpuRow) {
	fmt.Printf("\nBENCH server CPU per request (utime+stime of the server process from /proc/PID/stat, 10 ms ticks, ÷ requests from DIR/stats)\n")
	w := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "profile\tjob\trequests\tCPU\twall\tCPU µs/request\t± (one tick)\tCPU share")
	var tot time.Duration
	var n uint64
	for _, c := range cpus {
		tot += c.cpu
		n += c.requests
		// One clock tick (10 ms) over few requests is a large error: the ± column says how large.
		fmt.Fprintf(w, "%s\t%s\t%d\t%v\t%v\t%.0f\t%.0f\t%.0f%%\n", c.profile, c.job, c.requests, c.cpu,
			c.wall.Round(time.Millisecond), float64(c.cpu.Microseconds())/float64(c.requests),
			float64((time.Second/userHZ).Microseconds())/float64(c.requests), 100*c.cpu.Seconds()/c.wall.Seconds())
	}
	w.Flush()
	if n > 0 {
		fmt.Printf("all jobs: %d requests, %v CPU: %.0f µs/request\n", n, tot, float64(tot.Microseconds())/float64(n))
	}
}

// checkNothingLeft fails when a simcard FUSE mount or a loop device over a card file of this
// benchmark is still present. Other tests' loop devices may exist on a shared machine; only
// the card files (".../mnt/card" under this test's temporary directories) are looked for.
func checkNothingLeft(t *testing.T) {
	mounts, err := os.ReadFile("/proc/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "fsbench-simcard" && strings.Contains(f[1], "TestBenchSimcardVsTools") {
			t.Errorf("left mounted: %s", line)
		}
	}
	out, err := exec.Command("losetup", "-a").CombinedOutput()
	if err != nil {
		t.Fatalf("losetup -a: %v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "TestBenchSimcardVsTools") {
			t.Errorf("loop device left attached: %s", line)
		}
	}
}

func TestParseFBDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"1.01ms", 1010 * time.Microsecond, false},
		{"316µs", 316 * time.Microsecond, false},
		{"812ns", 812, false},
		{"1.234s", 1234 * time.Millisecond, false},
		{"-10476n", -10476, false}, // "-10476ns" cut to 7 bytes by format_ns
		{"-10.5µ", -10500, false},  // "-10.5µs": µ is two bytes
		{"-123456", 0, true},       // cut into its digits: unreadable
		{"", 0, true},
	} {
		got, err := parseFBDuration(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("parseFBDuration(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

// TestPlateauStart: the model's own flashbench -a diffs plateau at each AU profile's AU size,
// and measurement noise within the tolerance does not move the plateau.
func TestPlateauStart(t *testing.T) {
	aligns := func(m *flash.Model, noise func(uint64) time.Duration) []fbPoint {
		var pts []fbPoint
		for a := uint64(256 << 20); a >= 2048; a /= 2 {
			lat := func(off uint64) time.Duration {
				d, err := m.Do(flash.Request{Op: flash.OpRead, Off: off, Len: 1024})
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			d := lat(a-512) - (lat(a-1024)+lat(a))/2
			pts = append(pts, fbPoint{align: a, diff: d + noise(a), modelled: d})
		}
		return pts
	}
	for _, c := range []struct {
		profile string
		noise   func(uint64) time.Duration
		want    uint64
	}{
		{"sd-typical", func(uint64) time.Duration { return 0 }, 4 << 20},
		{"../flash/testdata/sd-cheap-old-uncalibrated.toml", func(uint64) time.Duration { return 0 }, 128 << 10}, // a 128 KiB AU
		{"sd-typical", func(a uint64) time.Duration { return time.Duration(a%7) * 8 * time.Microsecond }, 4 << 20},
		// A card whose diff keeps growing up to 16 MiB (noise as large as a step) has its
		// plateau there, not at the profile's AU.
		{"sd-typical", func(a uint64) time.Duration {
			if a >= 16<<20 {
				return 200 * time.Microsecond
			}
			return 0
		}, 16 << 20},
	} {
		p, err := flash.Lookup(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		m, err := flash.NewModel(p, benchCardSize)
		if err != nil {
			t.Fatal(err)
		}
		if got := plateauStart(aligns(m, c.noise), func(p fbPoint) time.Duration { return p.diff }); got != c.want {
			t.Errorf("%s: plateau at %s, want %s", c.profile, bytesize.Format(got), bytesize.Format(c.want))
		}
	}
}
