package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/fsbench/fsbench/internal/aging"
	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/dataset"
	"github.com/fsbench/fsbench/internal/endurance"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/nand"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/simcard"
)

// Env is what the repetitions of a run work with. Everything in it was made or named by the
// caller. The filesystem lives either on a block device (Device) or on raw flash (Flash).
type Env struct {
	Device     string // block device path, e.g. /dev/loop3
	DeviceName string // its name in /sys/block, e.g. loop3
	Sysfs      string // normally /sys
	// Flash is the simulated NAND chip of the free-electrons suite; nil on a block device.
	Flash      *FlashChip
	Mountpoint string // empty directory the filesystem is mounted on
	WorkDir    string // scratch space for images (not on the device)
	Source     string // the dataset tree, in RAM (tmpfs)
	Video      string // the incompressible file, in RAM (tmpfs)
	Dataset    dataset.Stats
	Copies     int // copies of the dataset written by the write test (Bootlin: 5)
	// VideoCopies is the number of copies video_write makes (Bootlin: 5).
	VideoCopies int
	VideoBytes  uint64
	// Params are the suites' sizes (the configuration's tables; Rep.Params).
	Params    plan.SuiteParams
	Timeout   time.Duration // per test
	Selection Selection
	Run       fs.Runner
	System    fs.System
	// Log receives one line per finished test; may be nil.
	Log func(format string, args ...any)
	// OnTest is called before each test starts (for a progress display); may be nil.
	OnTest func(test string)
	// Card reads the simulated card's counters and its server's overhead (simcard target); nil
	// for other targets.
	Card func() (simcard.Stats, error)
	// PowerCut records the simulated card's requests and builds the card after power cuts
	// (simcard target; nil elsewhere, where the powercut test does not run). CardProfile is
	// the card's profile, whose power-loss model the cuts apply.
	PowerCut    powercut.Card
	CardProfile string
	// Tracing, when set, captures each timed test's block requests from tracefs.
	Tracing *Tracing
	// ModulesAtStart are the kernel modules loaded when the run started: a filesystem module
	// that is loaded at a repetition's module_load but was not then, an earlier repetition
	// loaded and the kernel kept (see fs.ModuleLeftLoaded). Nil: not known.
	ModulesAtStart map[string]bool
	// Sentinel, when set, records what else the machine did during each timed span.
	Sentinel *measure.Sentinel
	// AgeSeed seeds the aging of aged variants (Variant.Age); EmitAging receives each aging's
	// record, to be saved apart from the measurements.
	AgeSeed uint64
	// CardState is plan.CardUsed to fill the device before each mkfs and make every mkfs keep
	// from discarding (a used card), "" or plan.CardFresh to discard it (a fresh card).
	CardState string
	EmitAging func(results.Aging) error
	// PartitionStart is where Device starts on the card, in bytes (a partition window): block
	// traces are shifted by it, so that alignment and the card model see the card's offsets.
	PartitionStart uint64
	// Endurance is the simulated card's wear, for the endurance suite (nil elsewhere).
	Endurance endurance.Card
	// ResultsDir is the run's results directory, where a suite keeps state that outlives the
	// process (Rep.StateDir).
	ResultsDir string
}

// FlashChip is the simulated NAND chip a raw-flash repetition loads afresh.
type FlashChip struct {
	Chip    nand.Chip
	Timings nand.Timings
}

// Job is one variant as a repetition makes it: on raw flash, with its partition's size.
type Job struct {
	Variant plan.Variant
	Kind    fs.Kind
	// PartitionBytes is the MTD partition on raw flash; 0 on a block device.
	PartitionBytes uint64
}

// Tracing says how block requests are captured and replayed.
type Tracing struct {
	// Profiles are the card profiles every trace is replayed through: one model per profile
	// and repetition, fed test after test, so that each test meets the card as the earlier ones
	// left it (mkfs first).
	Profiles []flash.Profile
	// Align is the profile whose page and AU sizes the summary's alignment shares use.
	Align flash.Profile
	// Size is the device size; each model is the largest multiple of its AU not above it.
	Size uint64
	// KeepDir, when set, is where trace files are written (<variant>.rep<N>.<test>.fsbtrace).
	KeepDir string
	// Rel turns a trace file path into the form recorded in the results.
	Rel func(string) string
}

// Emit receives each measurement as soon as it is taken, so that it can be saved before the
// next test starts.
type Emit func(results.Measurement) error

// recorder stamps a repetition's measurements with its variant and number, logs them and
// emits them.
type recorder struct {
	variant string
	n       int
	warmup  bool
	emit    Emit
	log     func(format string, args ...any) // may be nil
}

func (c recorder) put(m results.Measurement) error {
	m.Variant, m.Rep, m.Warmup = c.variant, c.n, c.warmup
	// The results, the report and the exporters read a figure in the catalog's unit: a test
	// recording another is a bug, caught here rather than shown wrongly.
	if m.Status == results.OK {
		if ct, ok := catalog.Lookup(m.Test); !ok || ct.Unit != m.Unit {
			return fmt.Errorf("%s recorded a figure in %q, the catalog says %q (a bug in the suite)", m.Test, m.Unit, ct.Unit)
		}
	}
	if c.log != nil {
		c.log("%s", describe(m))
	}
	return c.emit(m)
}

// rep is one repetition in progress.
type rep struct {
	recorder
	ctx     context.Context
	env     *Env
	v       plan.Variant
	k       fs.Kind
	mounted bool
	failed  string // the first test that failed; later tests are not run
	// On a block device: the span meter, and the flash models the traces of this repetition
	// are replayed through.
	meter  *measure.Meter
	models map[string]*flash.Model
	// traceEnd is when the last replayed trace's last request completed: the models rest from
	// then to the next trace's start (a card with an SLC cache folds it).
	traceEnd time.Time
	// On raw flash: the chip and what the repetition loaded on it.
	fl *flashState
	// noTrace: the timed spans are not traced (Rep.Trace).
	noTrace bool
	// day are the write tests' requests so far, one after the other: the day whose lifetime
	// the wear line gives (dayOfWrites).
	day []flash.Request
	// past are the requests of the filesystem's mkfs and first mount: what the card holds
	// before the first day (flash.Before.Past).
	past []flash.Request
}

// RunRepetition makes the filesystem of job's variant (on the block device, or on a fresh
// simulated NAND chip with the dataset stored on it) and runs the selected tests in order,
// emitting a measurement for every recorded test: its figures, or why it failed or did not
// run. It returns an error only when ctx was cancelled or emit failed; a test's own failure is
// recorded and the remaining tests of this repetition are recorded as not run, because they
// would measure a filesystem in an unknown state. Whatever the repetition mounted or loaded is
// undone before it returns, also when ctx was cancelled.
func RunRepetition(ctx context.Context, env *Env, job Job, n int, warmup bool, emit Emit) (err error) {
	r := &rep{recorder: recorder{variant: job.Variant.Name, n: n, warmup: warmup, emit: emit, log: env.Log},
		ctx: ctx, env: env, v: job.Variant, k: job.Kind}
	defer func() {
		// A fresh context: ctx may be done (Ctrl-C), and the filesystem must go anyway.
		tctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if terr := r.teardown(tctx); terr != nil && err == nil {
			err = terr
		}
	}()
	if perr := r.setup(ctx, job); perr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The filesystem could not be made: every test of this repetition is not run, and
		// the first one carries the error.
		return r.failAll(perr)
	}
	sel := env.Selection
	aged := job.Variant.Age == ""
	for _, s := range sel.Order {
		if s.Run == nil || !sel.Run[s.Name] {
			continue // produced by another test's step, or not selected
		}
		if s.Flash != (env.Flash != nil) {
			return fmt.Errorf("%s: a raw-flash test cannot run on a block device, nor the other way round (a bug in the suite selection)", s.Name)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !aged && !s.Setup && r.failed == "" && r.mounted {
			// An aged variant: the churn runs once the filesystem is made and mounted, before
			// the first measured test.
			aged = true
			if err := r.ageOnce(ctx); err != nil {
				return err
			}
		}
		if err := r.runTest(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// ageOnce runs the aged variant's churn; a churn that fails marks the repetition failed, so
// that its tests are recorded as not run. It returns an error only when ctx was cancelled or
// emit failed.
func (r *rep) ageOnce(ctx context.Context) error {
	if r.env.OnTest != nil {
		r.env.OnTest("aging")
	}
	failed, err := r.age(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	if failed != nil {
		r.failed = "aging"
	}
	return nil
}

// runTest runs test s and records what it measured, or why it did not run (an earlier test
// failed, the filesystem is read-only) or failed. It returns an error only when ctx was
// cancelled, emit failed, or the order of tests is wrong.
func (r *rep) runTest(ctx context.Context, s Test) error {
	env := r.env
	if env.OnTest != nil {
		env.OnTest(s.Name)
	}
	switch {
	case r.failed != "":
		return r.putAll(s, results.Measurement{Status: results.NotRun, Note: r.failed + " failed in this repetition"})
	case r.k.ReadOnly && !s.ReadOnly:
		return r.putAll(s, results.Measurement{Status: results.NA, Note: "read-only filesystem"})
	case !s.Setup && !r.mounted:
		// Never let a test write into the bare mount point, which is on the host's disk.
		return fmt.Errorf("%s: the filesystem is not mounted on %s (a bug in the order of tests)", s.Name, env.Mountpoint)
	}
	tctx, cancel := context.WithTimeout(ctx, env.Timeout)
	if s.Long {
		// Bounded step by step (Rep.Timeout), not as a whole: it runs until its end.
		tctx, cancel = context.WithCancel(ctx)
	}
	ms, serr := s.Run(tctx, r)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err() // interrupted: the half-done test is not recorded
	}
	if serr != nil {
		if errors.Is(serr, context.DeadlineExceeded) {
			serr = fmt.Errorf("timed out after %v (raise timeout in the config or with --timeout): %w", env.Timeout, serr)
		}
		if hint := fullHint(r.k, serr); hint != "" {
			serr = fmt.Errorf("%w; %s", serr, hint)
		}
		r.failed = s.Name
		return r.putAll(s, results.Measurement{Status: results.Failed, Error: serr.Error()})
	}
	for _, m := range ms {
		if env.Selection.Record[m.Test] {
			if err := r.put(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// putAll records m for test s and for the tests s produces (mount_mem with mount), each if
// selected; when s failed, what it would have produced is recorded as not run.
func (r *rep) putAll(s Test, m results.Measurement) error {
	for i, name := range append([]string{s.Name}, s.Produces...) {
		if !r.env.Selection.Record[name] {
			continue
		}
		mm := m
		mm.Test = name
		if i > 0 && m.Status == results.Failed {
			mm = results.Measurement{Test: name, Status: results.NotRun, Note: s.Name + " failed in this repetition"}
		}
		if err := r.put(mm); err != nil {
			return err
		}
	}
	return nil
}

// failAll records a failure to make the filesystem before any test: the first recorded test
// gets the error, the rest are not run.
func (r *rep) failAll(perr error) error {
	first := true
	for _, t := range r.env.Selection.Order {
		if !r.env.Selection.Record[t.Name] {
			continue
		}
		m := results.Measurement{Test: t.Name, Status: results.NotRun, Note: "the filesystem could not be prepared"}
		if first {
			m = results.Measurement{Test: t.Name, Status: results.Failed, Error: perr.Error()}
			first = false
		}
		if err := r.put(m); err != nil {
			return err
		}
	}
	return nil
}

// setup readies the repetition: on a block device, the span meter and the flash models the
// traces are replayed through; on raw flash, a fresh chip with the dataset stored on it.
func (r *rep) setup(ctx context.Context, job Job) error {
	if r.env.Flash != nil {
		return r.prepareFlash(ctx, job.PartitionBytes)
	}
	r.meter = measure.NewMeter(r.env.Sysfs, r.env.DeviceName)
	if tr := r.env.Tracing; tr != nil {
		r.models = map[string]*flash.Model{}
		for _, p := range tr.Profiles {
			m, err := flash.NewModel(p, tr.Size/uint64(p.AUSize)*uint64(p.AUSize))
			if err != nil {
				return fmt.Errorf("flash model %s: %w", p.Name, err)
			}
			r.models[p.Name] = m
		}
	}
	return nil
}

// teardown unmounts what the repetition mounted and, on raw flash, unloads the chip.
func (r *rep) teardown(ctx context.Context) error {
	if r.fl != nil {
		return r.teardownFlash(ctx)
	}
	if !r.mounted {
		return nil
	}
	if err := fs.Unmount(ctx, r.k, r.env.Mountpoint); err != nil {
		return fmt.Errorf("unmounting %s: %w", r.env.Mountpoint, err)
	}
	r.mounted = false
	return nil
}

// describe is the log line of a measurement.
func describe(m results.Measurement) string {
	s := fmt.Sprintf("%s rep %d %s: ", m.Variant, m.Rep, m.Test)
	switch {
	case m.Status == results.OK && m.Unit == "s":
		s += strconv.FormatFloat(*m.Value, 'f', 3, 64) + " s"
		if m.MBps > 0 {
			s += fmt.Sprintf(" (%.1f MB/s)", m.MBps)
		}
	case m.Status == results.OK && m.Unit == "bytes" && *m.Value >= 0:
		s += bytesize.Format(uint64(*m.Value))
	case m.Status == results.OK && m.Unit == "bytes": // mount_mem can be < 0: memory freed meanwhile
		s += "-" + bytesize.Format(uint64(-*m.Value))
	case m.Status == results.OK:
		// Rates: files/s, IOPS, KiB/s.
		s += figure.Format(*m.Value) + " " + m.Unit
	case m.Error != "":
		s += m.Status + ": " + m.Error
	default:
		s += m.Status
		if m.Note != "" {
			s += " (" + m.Note + ")"
		}
	}
	return s
}

// The repetition as a test sees it (suites.Rep): what a suite's package may use.

// Mountpoint is where the filesystem is mounted.
func (r *rep) Mountpoint() string { return r.env.Mountpoint }

// WorkDir is scratch space off the device.
func (r *rep) WorkDir() string { return r.env.WorkDir }

// Variant is the variant being measured.
func (r *rep) Variant() plan.Variant { return r.v }

// Kind is the variant's filesystem.
func (r *rep) Kind() fs.Kind { return r.k }

// N is the repetition's number (0: the warm-up).
func (r *rep) N() int { return r.n }

// Params are the run's sizes of the named suite.
func (r *rep) Params(suite string) any { return r.env.Params.Get(suite) }

// Timed measures fn as a seconds-valued test (see timed).
func (r *rep) Timed(test string, logical uint64, fn func() error) (results.Measurement, error) {
	return r.timed(test, logical, fn)
}

// Clear removes every top-level entry of the mounted filesystem except keep (and ext's
// lost+found), then syncs: each test starts from the space it needs, whatever the tests or
// suites before it left. Not timed.
func (r *rep) Clear(ctx context.Context, keep ...string) error {
	if r.v.Age != "" {
		keep = append(keep, aging.Dir) // an aged variant's tests run beside its aged tree
	}
	entries, err := os.ReadDir(r.env.Mountpoint)
	if err != nil {
		return err
	}
	removed := false
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.Name() == "lost+found" || slices.Contains(keep, e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.env.Mountpoint, e.Name())); err != nil {
			return fmt.Errorf("clearing the filesystem before the test: %w", err)
		}
		removed = true
	}
	if removed {
		return r.syncfs()
	}
	return nil
}

// Unmount unmounts the filesystem; the repetition's teardown then has nothing to unmount.
func (r *rep) Unmount(ctx context.Context) error {
	if !r.mounted {
		return nil
	}
	if err := fs.Unmount(ctx, r.k, r.env.Mountpoint); err != nil {
		return err
	}
	r.mounted = false
	return nil
}

// Runner runs the programs a test starts.
func (r *rep) Runner() fs.Runner { return r.env.Run }

// Logf writes a line to the run's log, if it has one.
func (r *rep) Logf(format string, args ...any) {
	if r.env.Log != nil {
		r.env.Log(format, args...)
	}
}

// PowerCut is the simulated card's power switch and profile; nil and "" elsewhere.
func (r *rep) PowerCut() (powercut.Card, string) { return r.env.PowerCut, r.env.CardProfile }
