//go:build linux && !(arm || 386 || mips || mipsle)

// The benchmark serves simulated cards through FUSE, which is built only for 64-bit targets
// (see internal/simcard/serve_fuse.go).

package calibration

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/probe"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/suites/randio"
	// The randio suite's sizes are set through the suites' registry (plan.Params.Set): load it.
	_ "github.com/fsbench/fsbench/internal/suites/all"
	simkind "github.com/fsbench/fsbench/internal/targets/simcard"
	"github.com/fsbench/fsbench/internal/testkit/simcardtest"
	"github.com/fsbench/fsbench/internal/trace"
)

// row is one target's figures in the benchmark.
type row struct {
	t Target
	// measured is the figure fsbench measured at time scale 1 (NaN: not measured, see note).
	measured float64
	// card is the same figure from the card's own modelled time for the requests fsbench sent
	// (randio rows: ops ÷ the card's busy time), without the host's path; NaN when the
	// measurement has no such split.
	card float64
	// host is the host's share of the wall time: 1 − card busy time ÷ wall time (NaN: unknown).
	host  float64
	late  uint64 // replies the server sent after their modelled completion
	model float64
	load  string
	note  string
}

// verdict is decided by the card's own figure where there is one (the model, not the host's
// path, is what is calibrated): PASS, "miss: host" when fsbench's figure is outside only
// because of the host, FAIL, "FAIL (host passed it)" when only the host's stalls put fsbench's
// figure inside. Without the card's own figure, fsbench's decides.
func (r row) verdict() string {
	switch {
	case !math.IsNaN(r.card) && r.t.Within(r.card) && !r.t.Within(r.measured):
		return "miss: host"
	case !math.IsNaN(r.card) && r.t.Within(r.card):
		return "PASS"
	case !math.IsNaN(r.card) && r.t.Within(r.measured):
		return "FAIL (host passed it)"
	case !math.IsNaN(r.card):
		return "FAIL"
	case math.IsNaN(r.measured):
		return "not measured"
	case r.t.Within(r.measured):
		return "PASS"
	}
	return "FAIL"
}

// TestBenchCalibration measures every calibration target with fsbench itself on the simulated
// card in real time: the randio suite on ext4 (configured as the sources' iozone runs: a
// 100 MiB file, 20 s per random test; and with fsbench's defaults where a target says so; and
// with 4 KiB sequential blocks for the append stream), and fsbench probe --write for the
// open-AU targets. It prints each target with fsbench's figure, the card's own figure (the
// model's time for the requests sent, without the host's path), the host's share of the wall
// time, the in-model figure (TestTargetsInModel's), the tolerance and the verdict. It fails
// only when a figure misses its target by the card's own measure: a miss the host's path
// explains is printed as such.
//
//	sudo FSBENCH_BENCH=1 go test -count=1 -run TestBenchCalibration -v -timeout 30m ./internal/calibration/
//
// FSBENCH_BIN names an fsbench binary to measure instead of building this tree's (the in-model
// column is then left out: it is this tree's model); CALIBRATION_PROFILES (comma-separated)
// limits the profiles.
func TestBenchCalibration(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") == "" {
		t.Skip("benchmark: run with FSBENCH_BENCH=1 (make bench-calibration), as root")
	}
	if os.Geteuid() != 0 {
		t.Skip("benchmark needs root: fsbench run and probe attach loop devices over a FUSE-served card (run with sudo)")
	}
	bin, own := simcardtest.Binary(t)
	profiles := Profiles()
	if s := os.Getenv("CALIBRATION_PROFILES"); s != "" {
		profiles = strings.Split(s, ",")
	}
	start := time.Now()
	fmt.Printf("\nCALIBRATION fsbench %s, load average at the start: %s", bin, procLoadavg())
	var rows []row
	for _, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			rows = append(rows, benchProfile(t, bin, own, profile)...)
		})
	}
	fmt.Printf("\nCALIBRATION load average at the end: %s", procLoadavg())
	printRows(rows, own)
	fmt.Printf("\nCALIBRATION took %v\n", time.Since(start).Round(time.Second))
	for _, r := range rows {
		if strings.HasPrefix(r.verdict(), "FAIL") {
			t.Errorf("%s %s: %.4g %s (card's own %.4g), want %s (%s)", r.t.Profile, r.t.What, r.measured, r.t.Measure.Unit(), r.card, r.t.Tolerance(), r.t.Source)
		}
	}
}

// benchProfile measures profile's targets.
func benchProfile(t *testing.T, bin string, own bool, profile string) []row {
	targets := For(profile)
	if len(targets) == 0 {
		t.Fatalf("no calibration targets for %q (have %s)", profile, strings.Join(Profiles(), ", "))
	}
	need := map[Measure]bool{}
	for _, tg := range targets {
		need[tg.Measure] = true
	}
	figs := map[Measure]row{}
	missing := func(m Measure, why string) {
		figs[m] = row{measured: math.NaN(), card: math.NaN(), host: math.NaN(), note: why}
	}
	if need[SeqWrite] || need[RandWrite] || need[RandRead] {
		run, _, err := runRandio(t, bin, profile, IozoneRandio, nil)
		for m, test := range map[Measure]string{SeqWrite: "randio_seq_write", RandWrite: "randio_rand_write", RandRead: "randio_rand_read"} {
			if err != nil {
				missing(m, err.Error())
				continue
			}
			figs[m] = randioRow(run, test)
		}
	}
	for m := range need {
		if m.Queued() {
			missing(m, "a command queue's figure: make bench-class measures it through the served card, beside fio")
		}
	}
	if need[RandWriteDefault] {
		run, _, err := runRandio(t, bin, profile, randioShape{}, []string{"randio_seq_write", "randio_rand_write"})
		if err != nil {
			missing(RandWriteDefault, err.Error())
		} else {
			figs[RandWriteDefault] = randioRow(run, "randio_rand_write")
		}
	}
	for _, am := range []struct {
		m     Measure
		shape randioShape
	}{{AppendMax, appendRandio}, {AppendMaxUsed, appendUsedRandio}} {
		if !need[am.m] {
			continue
		}
		run, dir, err := runRandio(t, bin, profile, am.shape, []string{"randio_seq_write"})
		if err != nil {
			missing(am.m, err.Error())
		} else {
			r := randioRow(run, "randio_seq_write")
			m := measurement(run, "randio_seq_write")
			r.measured, r.card = math.NaN(), math.NaN()
			if m != nil {
				if v, ok := m.Extra["latency_max_s"]; ok {
					r.measured = v * 1e3
				}
			}
			switch longest, err := longestWrite(run, dir, profile, "randio_seq_write"); {
			case !own:
				r.note = "card's own: needs this build's model (FSBENCH_BIN is another's)"
			case err != nil:
				r.note = err.Error()
			default:
				r.card = float64(longest) / 1e6
			}
			figs[am.m] = r
		}
	}
	if need[SLCFound] || need[SLCAfter] || need[SLCAfterRatio] {
		for m, r := range benchSustained(t, bin, profile) {
			figs[m] = r
		}
	}
	if need[OpenAU2] || need[OpenAU3] || need[OpenAURatio] || need[OpenAUs] {
		res, tr, load, err := runProbe(t, bin, profile)
		ms := []Measure{OpenAU2, OpenAU3, OpenAURatio, OpenAUs}
		if err != nil {
			for _, m := range ms {
				missing(m, err.Error())
			}
		} else {
			two, three, est := OpenAUFigures(res)
			vals := []float64{two, three, two / three, float64(est.Value)}
			// The card's own figures: the same rounds timed by the model from the requests
			// the probe sent (traced), without the host's stalls.
			cards := []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
			var cardNote string
			switch pts, err := cardOpenAU(tr, profile, res); {
			case !own:
				cardNote = "card's own: needs this build's model (FSBENCH_BIN is another's)"
			case err != nil:
				cardNote = "card's own: " + err.Error()
			default:
				c2, c3, cest := OpenAUFigures(&probe.Result{OpenAU: pts, Estimates: probe.Estimates{OpenAUs: probe.AnalyzeOpenAU(pts, pts[len(pts)-1].AUs)}})
				cards = []float64{c2, c3, c2 / c3, float64(cest.Value)}
			}
			for i, m := range ms {
				r := row{measured: vals[i], card: cards[i], host: math.NaN(), load: load, note: cardNote}
				if i < 2 && vals[i] > 0 {
					// Both are bytes over a time: the host's share is 1 − card time ÷ wall time.
					r.host = 1 - vals[i]/cards[i]
				}
				if m == OpenAUs && est.AtLeast {
					r.note = strings.TrimPrefix(r.note+"; at least: "+est.Evidence, "; ")
				}
				figs[m] = r
			}
		}
	}
	var model map[Measure]float64
	if own {
		model = modelFigures(t, profile)
	}
	var out []row
	for _, tg := range targets {
		r := figs[tg.Measure]
		r.t = tg
		r.model = math.NaN()
		if own {
			r.model = model[tg.Measure]
		}
		out = append(out, r)
	}
	return out
}

// appendRandio is the append stream: the randio suite's sequential write with 4 KiB blocks, a
// 32 MiB file (8192 O_DIRECT appends), whose latency_max_s is the longest single write;
// appendUsedRandio the same on a used card.
var (
	appendRandio     = randioShape{fileSize: 32 << 20, seqBlock: 4 << 10}
	appendUsedRandio = randioShape{fileSize: 32 << 20, seqBlock: 4 << 10, used: true}
)

// longestWrite replays the block requests fsbench traced in the run's first repetition, in
// order (mkfs included), through a fresh model of the profile, as the run's own card figures
// are made, and returns the longest modelled write of the test's requests: the card's own
// longest write, which the wall-clock maximum hides under the host's stalls.
func longestWrite(run *results.Run, dir, profile, test string) (time.Duration, error) {
	p, err := flash.Lookup(profile)
	if err != nil {
		return 0, err
	}
	var cfg plan.Config
	if err := json.Unmarshal(run.Config, &cfg); err != nil {
		return 0, fmt.Errorf("the run's configuration: %w", err)
	}
	m, err := flash.NewModel(p, cfg.Size/uint64(p.AUSize)*uint64(p.AUSize))
	if err != nil {
		return 0, err
	}
	if cfg.CardState == plan.CardUsed {
		// The run wrote the whole device once before mkfs (not traced): so does the replay.
		for off := uint64(0); off < m.Size(); off += 1 << 20 {
			if _, err := m.Do(flash.Request{Op: flash.OpWrite, Off: off, Len: min(1<<20, m.Size()-off)}); err != nil {
				return 0, err
			}
		}
		m.Do(flash.Request{Op: flash.OpFlush})
	}
	var longest time.Duration
	seen := false
	for _, ms := range run.Measurements {
		if ms.Rep != 1 || ms.Trace == nil || ms.Trace.File == "" {
			continue
		}
		f, err := os.Open(filepath.Join(dir, ms.Trace.File))
		if err != nil {
			return 0, fmt.Errorf("trace of %s: %w", ms.Test, err)
		}
		tr, err := trace.Read(f)
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("trace of %s: %w", ms.Test, err)
		}
		for _, q := range trace.Requests(tr) {
			d, err := m.Do(q)
			if err != nil {
				return 0, fmt.Errorf("replaying the trace of %s: %w", ms.Test, err)
			}
			if ms.Test == test && q.Op == flash.OpWrite {
				longest, seen = max(longest, d), true
			}
		}
	}
	if !seen {
		return 0, fmt.Errorf("no traced write of %s: the card's own longest write is unknown (tracefs unavailable?)", test)
	}
	return longest, nil
}

// runRandio runs fsbench's randio suite on ext4 on a simulated 1 GiB card of profile at time
// scale 1, with shape's file size, runtime and sequential block (zero: the suite's defaults),
// limited to tests when given, and returns its results. fsbench takes the configuration as a
// run request (fsbench run --request), the way a guest or a board takes one: the randio sizes
// have no flag.
func runRandio(t *testing.T, bin, profile string, shape randioShape, tests []string) (*results.Run, string, error) {
	cfg := plan.Default()
	if tests == nil {
		tests = []string{"randio_seq_write", "randio_rand_write", "randio_rand_read"}
	}
	cfg.Suite, cfg.Repetitions, cfg.Tests, cfg.KeepTraces = plan.Suites{"randio"}, 1, tests, true
	cfg.Variants = slices.DeleteFunc(cfg.Variants, func(v plan.Variant) bool { return v.Name != "ext4" })
	if shape.fileSize > 0 {
		must(cfg.Params.Set("randio", "file_size_bytes", shape.fileSize))
	}
	if shape.runtime > 0 {
		must(cfg.Params.Set("randio", "runtime", shape.runtime.String()))
	}
	if shape.seqBlock > 0 {
		must(cfg.Params.Set("randio", "seq_block_bytes", shape.seqBlock))
	}
	if shape.used {
		cfg.CardState = plan.CardUsed
	}
	spec, err := plan.ParseTarget("simcard:" + profile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "results")
	req := filepath.Join(dir, "request.json")
	if err := plan.WriteRequest(req, plan.Request{Config: cfg, Target: spec, Out: out, TimeScale: 1}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	cmd := exec.Command(bin, "run", "--request", req)
	b, err := cmd.CombinedOutput()
	fmt.Printf("CALIBRATION %s randio (file %s, %s): %v, load %s\n", profile, sizeOr(cfg.Params.Get(randio.Name).(*randio.Params).FileSize),
		strings.Join(tests, ","), time.Since(begin).Round(time.Second), loadavg())
	runErr := err
	run, err := results.Load(filepath.Join(out, "results.json"))
	if err != nil {
		if runErr != nil {
			return nil, out, fmt.Errorf("fsbench run --request (randio on simcard:%s): %v: %s", profile, runErr, lastLines(b, 4))
		}
		return nil, out, err
	}
	for _, test := range tests {
		if m := measurement(run, test); m == nil || m.Status != results.OK {
			why := "not run"
			if m != nil {
				why = m.Status + ": " + m.Error
			}
			return run, out, fmt.Errorf("%s on simcard:%s: %s (fsbench: %v %s)", test, profile, why, runErr, lastLines(b, 4))
		}
	}
	if runErr != nil {
		// Every figure is in: a failure after them (a cleanup under load) is reported, not fatal.
		fmt.Printf("CALIBRATION %s: fsbench run ended with %v after its tests: %s\n", profile, runErr, lastLines(b, 2))
	}
	return run, out, nil
}

// benchSustained runs fsbench probe --sustained on a fresh 512 MiB card of profile served in
// real time and returns the SLC targets' figures (fsbench's own: the probe times its writes;
// no card's own figure, whose split the probe's 1 MiB writes would barely change).
func benchSustained(t *testing.T, bin, profile string) map[Measure]row {
	out := map[Measure]row{}
	fail := func(why string) map[Measure]row {
		for _, m := range []Measure{SLCFound, SLCAfter, SLCAfterRatio} {
			out[m] = row{measured: math.NaN(), card: math.NaN(), host: math.NaN(), note: why}
		}
		return out
	}
	dir := t.TempDir()
	sc, err := simkind.StartSimcard(context.Background(), simkind.SimcardOptions{
		Profile: profile, Size: sustainedCard, Dir: filepath.Join(dir, "mnt"),
		Backing: filepath.Join(dir, "card.img"), TimeScale: 1, Command: []string{bin},
	})
	if err != nil {
		return fail(fmt.Sprintf("start a %s card: %v", profile, err))
	}
	defer func() {
		if err := sc.Stop(); err != nil {
			t.Errorf("stop the %s card's server (pid %d): %v", profile, sc.Pid(), err)
		}
	}()
	l, err := session.AttachLoop(sc.CardPath(), session.LoopOptions{DirectIO: true})
	if err != nil {
		return fail(fmt.Sprintf("attach a loop device over %s: %v", sc.CardPath(), err))
	}
	defer func() {
		if err := l.Detach(); err != nil {
			t.Errorf("detach %s: %v", l.Path, err)
		}
	}()
	res := filepath.Join(dir, "sustained")
	begin := time.Now()
	b, err := exec.Command(bin, "probe", "--sustained", "--destroy", l.Path, "--idle", "0", "-q", "-o", res, l.Path).CombinedOutput()
	load := loadavg()
	fmt.Printf("CALIBRATION %s probe --sustained: %v, load %s\n", profile, time.Since(begin).Round(time.Second), load)
	if err != nil {
		return fail(fmt.Sprintf("fsbench probe --sustained: %v: %s", err, lastLines(b, 4)))
	}
	raw, err := os.ReadFile(filepath.Join(res, probe.SustainedJSONFile))
	if err != nil {
		return fail(err.Error())
	}
	var r probe.SustainedResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return fail(err.Error())
	}
	p, err := flash.Lookup(profile)
	if err != nil {
		return fail(err.Error())
	}
	found, after, ratio := sustainedRatios(&r, p)
	note := ""
	if !r.First.Cliff {
		note = "no cliff found: " + lastLines(b, 12)
	}
	fmt.Printf("CALIBRATION %s probe --sustained found: %s\n", profile, strings.ReplaceAll(lastLines(b, 14), " / ", "\n  "))
	for m, v := range map[Measure]float64{SLCFound: found, SLCAfter: after, SLCAfterRatio: ratio} {
		out[m] = row{measured: v, card: math.NaN(), host: math.NaN(), load: load, note: note}
	}
	return out
}

func sizeOr(n uint64) string { return fmt.Sprintf("%d MiB", n>>20) }

func measurement(run *results.Run, test string) *results.Measurement {
	for i, m := range run.Measurements {
		if m.Test == test && m.Rep > 0 {
			return &run.Measurements[i]
		}
	}
	return nil
}

// randioRow is one randio test's figure, with the card's own figure and the host's share
// from the simulated card's counters over the test.
func randioRow(run *results.Run, test string) row {
	r := row{measured: math.NaN(), card: math.NaN(), host: math.NaN()}
	m := measurement(run, test)
	if m == nil || m.Value == nil {
		r.note = test + " has no figure"
		return r
	}
	r.measured = *m.Value
	if f := m.Flash; f != nil && f.BusyNs > 0 && m.WallSeconds > 0 {
		busy := float64(f.BusyNs) / 1e9
		// The figure is an amount over the wall time; over the card's busy time instead it is
		// what the card alone would give.
		r.card = r.measured * m.WallSeconds / busy
		r.host = 1 - busy/m.WallSeconds
		if f.Server != nil {
			r.late = f.Server.LateRequests
		}
	}
	return r
}

// runProbe serves a 256 MiB card of profile in real time, attaches a direct-I/O loop device
// over it and runs fsbench probe --write on it, tracing the block requests it sends (nil
// trace: tracefs unavailable, said in the log).
func runProbe(t *testing.T, bin, profile string) (*probe.Result, *trace.Trace, string, error) {
	dir := t.TempDir()
	sc, err := simkind.StartSimcard(context.Background(), simkind.SimcardOptions{
		Profile: profile, Size: probeCard, Dir: filepath.Join(dir, "mnt"),
		Backing: filepath.Join(dir, "card.img"), TimeScale: 1, Command: []string{bin},
	})
	if err != nil {
		return nil, nil, "", fmt.Errorf("start a %s card: %w", profile, err)
	}
	defer func() {
		if err := sc.Stop(); err != nil {
			t.Errorf("stop the %s card's server (pid %d): %v", profile, sc.Pid(), err)
		}
	}()
	l, err := session.AttachLoop(sc.CardPath(), session.LoopOptions{DirectIO: true})
	if err != nil {
		return nil, nil, "", fmt.Errorf("attach a loop device over %s: %w", sc.CardPath(), err)
	}
	defer func() {
		if err := l.Detach(); err != nil {
			t.Errorf("detach %s: %v", l.Path, err)
		}
	}()
	if !l.DirectIO {
		return nil, nil, "", fmt.Errorf("%s over %s: the kernel refused direct I/O: the probe would time the page cache", l.Path, sc.CardPath())
	}
	capture, err := trace.Start(l.Name)
	if err != nil {
		fmt.Printf("CALIBRATION %s probe: block requests not traced (%v): the open-AU rows have no card's own figure\n", profile, err)
	}
	out := filepath.Join(dir, "probe")
	begin := time.Now()
	b, err := exec.Command(bin, "probe", "--write", "--destroy", l.Path, "--max-block", "1M", "-o", out, l.Path).CombinedOutput()
	load := loadavg()
	var tr *trace.Trace
	if capture != nil {
		var terr error
		if tr, terr = capture.Stop(); terr != nil {
			fmt.Printf("CALIBRATION %s probe: tracing its block requests: %v\n", profile, terr)
			tr = nil
		}
	}
	fmt.Printf("CALIBRATION %s probe --write: %v, load %s\n", profile, time.Since(begin).Round(time.Second), load)
	if err != nil {
		return nil, nil, load, fmt.Errorf("fsbench probe --write on simcard:%s: %v: %s", profile, err, lastLines(b, 6))
	}
	raw, err := os.ReadFile(filepath.Join(out, "probe.json"))
	if err != nil {
		return nil, nil, load, err
	}
	var res probe.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, nil, load, fmt.Errorf("probe.json: %w", err)
	}
	return &res, tr, load, nil
}

func printRows(rows []row, own bool) {
	fmt.Printf("\n\nCALIBRATION targets, measured with fsbench on the simulated card at time scale 1 (randio on ext4, probe --write)\n")
	fmt.Printf("fsbench: the figure fsbench reports; card: the same from the card's modelled time for the requests fsbench sent (no host path);\n")
	fmt.Printf("host: the host's share of the wall time (1 - card busy / wall: loop device, FUSE, server, filesystem CPU); late: replies sent after their modelled time;\n")
	if own {
		fmt.Printf("model: TestTargetsInModel's figure (the model alone, no filesystem); ")
	} else {
		fmt.Printf("model: left out (FSBENCH_BIN is another build's model); ")
	}
	fmt.Printf("verdict on fsbench's figure, \"miss: host\" when only the host's path moved it out.\n")
	w := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(w, "profile\ttarget\tunit\tfsbench\tcard\thost\tlate\tmodel\ttolerance\tverdict\tload\tsource / note")
	pass := 0
	for _, r := range rows {
		v := r.verdict()
		if v == "PASS" {
			pass++
		}
		note := r.t.Source
		if r.note != "" {
			note = strings.ReplaceAll(r.note, "\n", " / ") + " | " + note
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.t.Profile, r.t.What, r.t.Measure.Unit(),
			num(r.measured), num(r.card), pct(r.host), r.late, num(r.model), r.t.Tolerance(), v, r.load, note)
	}
	w.Flush()
	fmt.Printf("\nCALIBRATION %d of %d targets pass\n", pass, len(rows))
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.4g", v)
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func procLoadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err.Error() + "\n"
	}
	return string(b)
}

// loadavg is the 1-minute load average: other builds and QEMU run beside the benchmark on a
// shared machine, and a figure taken under load says more about them.
func loadavg() string {
	if f := strings.Fields(procLoadavg()); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// lastLines returns the last n lines of b on one line, for error messages in the table.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}

// must stops the test binary on a size the randio suite refuses: a bug in the shapes above.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
