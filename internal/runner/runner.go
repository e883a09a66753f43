// Package runner carries out one `fsbench run`: it decides what the run does (MakePlan, pure),
// claims the results directory, has the target prepare the device (or hand the whole run to a
// guest or a board), checks every variant's options on it, stages the dataset in RAM, runs the
// repetitions, saves the results after every test, and always undoes what it set up.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
	"github.com/fsbench/fsbench/internal/trace"
)

// Options are the inputs of a run beyond the configuration.
type Options struct {
	// Options are the run's request (configuration, target, results directory and every
	// setting a target can take) and the host's log and console: see targets.Options and
	// plan.Request, the one options type from run's flags to here.
	targets.Options
	// Version is fsbench's own, for results.json.
	Version string
	// LedgerDir is where the cleanup ledger goes; empty = session.DefaultLedgerDir.
	LedgerDir string
	// Progress receives the state before each test; may be nil.
	Progress func(Progress)
}

// Progress is where a run stands.
type Progress struct {
	Variant   string
	Test      string
	Rep, Reps int // Rep 0 is the warm-up
	Done      int // repetitions finished
	Total     int // repetitions planned
	ETA       time.Duration
}

// Outcome is what a finished (or interrupted) run produced.
type Outcome struct {
	Dir string
	Run *results.Run
	// Saved is false when the results could not be written (a full disk): the run's figures
	// are then only in Run.
	Saved bool
}

// SaveError is a failure to write the results: the run cannot say where its results are.
type SaveError struct{ Err error }

func (e *SaveError) Error() string { return "the results could not be saved: " + e.Err.Error() }
func (e *SaveError) Unwrap() error { return e.Err }

// Run carries out the run. The returned Outcome is non-nil as soon as the results directory
// exists, also with an error, so that the caller can point at what was kept.
func Run(ctx context.Context, opt Options) (out *Outcome, err error) {
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("fsbench run needs root: it makes loop devices, mounts filesystems and drops caches; run it with sudo")
	}
	t, err := newTarget(opt)
	if err != nil {
		return nil, err
	}
	ledgerDir := opt.ledgerDir()
	if err := cleanStale(ledgerDir, opt.Log); err != nil {
		return nil, err
	}
	if t.Caps().Has(targets.RemoteRunner) {
		remote, err := targets.AsRemote(t)
		if err != nil {
			return nil, err
		}
		return runRemote(ctx, opt, remote, ledgerDir)
	}
	local, err := targets.AsLocal(t)
	if err != nil {
		return nil, err
	}
	return runLocal(ctx, opt, local, ledgerDir)
}

// ledgerDir is where the run's cleanup ledger goes.
func (o Options) ledgerDir() string {
	if o.LedgerDir == "" {
		return session.DefaultLedgerDir
	}
	return o.LedgerDir
}

// openSession makes the run's results directory (opt.Out, else a timestamped one under the
// configuration's results directory) and opens its ledger.
func openSession(opt Options, ledgerDir string) (*session.Session, error) {
	return session.OpenSession(session.SessionOptions{Dir: opt.Out, Root: opt.Config.ResultsDir, Force: opt.Force,
		LedgerDir: ledgerDir, WorkRoot: opt.Work, Log: opt.Log})
}

// closeSession closes ses when a run returns, its error becoming the run's if there was none.
func closeSession(ses *session.Session, err *error) {
	if cerr := ses.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

// newTarget makes the run's target and refuses, before anything is made, what it cannot do.
func newTarget(opt Options) (targets.Target, error) {
	cfg := opt.Config
	t, err := targets.New(opt.Target, opt.Options)
	if err != nil {
		return nil, &plan.InputError{Err: err}
	}
	if err := t.Check(cfg); err != nil {
		return nil, err
	}
	if err := checkIdentities(cfg, t, opt.Log); err != nil {
		return nil, err
	}
	if err := checkScheduler(cfg.Scheduler); err != nil {
		return nil, err
	}
	return t, nil
}

// cleanStale undoes what killed runs left behind before anything new is made: what their
// ledgers recorded, and their trace instances, which hold kernel buffers.
func cleanStale(ledgerDir string, logf func(string, ...any)) error {
	if actions, err := session.CleanupStale(ledgerDir, func(string, ...any) {}); err != nil {
		return fmt.Errorf("cleaning up after an earlier run: %w", err)
	} else if len(actions) > 0 {
		logf("cleaned up after an earlier run that was killed: %s", strings.Join(actions, "; "))
	}
	if removed, err := trace.CleanStale(); err != nil {
		logf("warning: %v", err)
	} else if len(removed) > 0 {
		logf("cleaned up after an earlier run that was killed: %s", strings.Join(removed, "; "))
	}
	return nil
}

// runLocal runs the tests on a device the target prepares on this machine.
func runLocal(ctx context.Context, opt Options, t targets.Local, ledgerDir string) (out *Outcome, err error) {
	cfg, logf := opt.Config, opt.Log
	sys, err := fs.HostSystem()
	if err != nil {
		return nil, err
	}
	p, err := MakePlan(cfg, t, sys)
	if err != nil {
		return nil, err
	}
	// The user's dataset is described (read, not copied) before anything is made, so that a
	// tree too large for the device or RAM is refused first.
	var user *userData
	if cfg.Dataset != "" {
		if user, err = describeUserData(ctx, cfg.Dataset); err != nil {
			return nil, err
		}
	}
	ses, err := openSession(opt, ledgerDir)
	if err != nil {
		return nil, err
	}
	out = &Outcome{Dir: ses.Dir}
	run := newRun(opt, p)
	out.Run = run
	measured := false
	defer func() {
		closeSession(ses, &err)
		var ie *plan.InputError
		if !measured && errors.As(err, &ie) {
			// Refused before anything was measured: leave nothing behind.
			ses.Discard("results.json", "results.csv")
			out = nil
		}
	}()
	for _, rv := range p.Variants {
		if rv.Status == results.Skipped && (rv.PartitionBytes == 0 || rv.PartitionBytes == cfg.PartitionSizes()[0]) {
			logf("skipping %s: %s", baseName(rv), rv.Reason)
		}
	}
	eng := &engine{ctx: ctx, opt: opt, cfg: cfg, plan: p, run: run, ses: ses, caps: t.Caps(), logf: logf}
	eng.save = func() error {
		if err := results.Save(ses.Dir, run); err != nil {
			return &SaveError{err}
		}
		out.Saved = true
		return nil
	}
	if len(p.Jobs) == 0 {
		run.Status, run.Finished = results.RunComplete, time.Now()
		measured = true
		return out, eng.save()
	}
	recordTools(ctx, run, p)
	// Into a cgroup of its own before anything starts a process (the card server among them),
	// so that the noise sentinel counts fsbench and all of its children as the run's own.
	if eng.cgroup, err = ses.JoinCgroup(); err != nil {
		eng.cgroupWhy = err.Error()
		logf("note: the noise sentinel works without a cgroup of fsbench's own: %v", err)
	}
	if err := eng.prepare(t); err != nil {
		return out, err
	}
	cardCheck, finishCard, err := checkCard(ctx, opt, t.Caps(), eng.prep, logf)
	run.CardCheck = cardCheck
	if err != nil {
		run.Status, run.Error = results.RunFailed, err.Error()
		return out, errors.Join(err, eng.save())
	}
	// However the run ends: the card's final state, and its identity and health again, saved.
	defer func() {
		if serr := eng.finishCard(cardCheck != nil, finishCard, measured); serr != nil && err == nil {
			err = serr
		}
	}()
	if err := eng.setScheduler(); err != nil {
		return out, err
	}
	if err := eng.setup(user); err != nil {
		return out, err
	}
	measured = true
	if err := eng.save(); err != nil {
		return out, err
	}
	if err := eng.runAll(); err != nil {
		return out, eng.stopped(err)
	}
	run.Status, run.Finished = results.RunComplete, time.Now()
	run.Tool.PeakRSSBytes = measure.PeakRSS()
	return out, eng.save()
}

// prepare has the target make the device and records what it is.
func (e *engine) prepare(t targets.Local) error {
	prep, err := t.Prepare(e.ctx, e.ses, e.cfg)
	if err != nil {
		return err
	}
	for _, n := range prep.Notes {
		e.logf("%s", n)
	}
	run := e.run
	run.Target, run.Device = prep.Result, results.FromIdentity(prep.Identity)
	if run.Target.CardProfile == "" {
		// The card its card figures are rated on, recorded, so that no report guesses it: a
		// simulated card records its own (its kind fills it in), any other device the default
		// card the traces are replayed through.
		run.Target.CardProfile = plan.DefaultCardProfile
	}
	e.prep = prep
	return nil
}

// finishCard records, once the run ended (however it ended) and if it measured anything, the
// simulated card's final state (its wear histogram), while its server still runs (the
// session's cleanup stops it), and the card's identity and health after the run (checked:
// checkCard read them before), and saves the results again.
func (e *engine) finishCard(checked bool, finish func(), measured bool) error {
	if checked {
		finish()
	}
	if !measured {
		return nil
	}
	changed := checked
	if stats := cardStats(e.prep); stats != nil {
		if c, err := stats(); err == nil {
			e.run.Card = results.FromCounters(c.Counters)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return e.save()
}

// setScheduler sets the I/O scheduler of the run's device: --scheduler's, else, on a
// simulated card, the one the kernel gives a real card.
func (e *engine) setScheduler() error {
	name, run, logf := e.prep.DeviceName, e.run, e.logf
	if name == "" {
		return nil
	}
	if e.cfg.Scheduler != "" {
		if err := e.ses.SetScheduler(name, e.cfg.Scheduler); err != nil {
			return &plan.InputError{Err: err}
		}
		run.Target.Scheduler = e.cfg.Scheduler
		logf("I/O scheduler of %s: %s", name, e.cfg.Scheduler)
		return nil
	}
	if !run.Target.SimulatedCard() {
		return nil
	}
	// A loop device has no scheduler by default (the kernel marks it "no scheduler by
	// default"), but the kernel gives a real SD card or eMMC mq-deadline, which sorts the
	// writes waiting for the card by sector. On a card with few open AUs that order decides
	// how many AU merges the card does (ext4's card time on sd-typical was 25-30 % lower
	// with it), so the simulated card gets what the card it stands for would get. The loop
	// device outlives the run and keeps its scheduler for the next user: restored on close.
	if err := e.ses.SetScheduler(name, simcardScheduler); err != nil {
		logf("warning: the simulated card keeps its loop device's scheduler (a real card gets %s): %v", simcardScheduler, err)
		return nil
	}
	run.Target.Scheduler = simcardScheduler
	logf("I/O scheduler of %s: %s, as the kernel gives an SD card (--scheduler none for the loop device's own)", name, simcardScheduler)
	return nil
}

// baseName is the configured name of a variant (without the partition size on raw NAND).
func baseName(rv results.Variant) string {
	if rv.Base != "" {
		return rv.Base
	}
	return rv.Name
}

// recordTools records the version line of every tool the jobs use.
func recordTools(ctx context.Context, run *results.Run, p *Plan) {
	for _, k := range p.Kinds {
		if ver, err := fs.ToolVersion(ctx, fs.DefaultRunner, k); err == nil {
			run.Tools[k.Tool] = ver
		} else {
			run.Tools[k.Tool] = "unknown: " + err.Error()
		}
	}
}

// simcardScheduler is the I/O scheduler a simulated card's loop device gets unless --scheduler
// says otherwise: the one the kernel gives an mmcblk device.
const simcardScheduler = "mq-deadline"

// checkScheduler refuses a scheduler name this kernel does not offer, before anything is made:
// the list is what the kernel reports for any block device (a loop device's list is the same
// for every disk: none, mq-deadline, and the modules loaded). A name is also never written to
// sysfs unless it is one of the kernel's own.
func checkScheduler(name string) error {
	if name == "" {
		return nil
	}
	if strings.ContainsAny(name, " \t\n;/|&$`'\"\\") {
		return plan.Refusef("scheduler %q is not a scheduler name: use one of the names in /sys/block/<device>/queue/scheduler (none, mq-deadline, bfq, kyber)", name)
	}
	files, _ := filepath.Glob("/sys/block/*/queue/scheduler")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		avail, _ := session.ParseScheduler(string(b))
		for _, a := range avail {
			if a == name {
				return nil
			}
		}
		return plan.Refusef("I/O scheduler %q is not available on this kernel (available: %s): the kernel lacks it or its module", name, strings.Join(avail, ", "))
	}
	return nil // no block device to ask: SetScheduler checks on the device itself
}

// runRemote hands the run to another fsbench (a guest, a board) and keeps its results.
func runRemote(ctx context.Context, opt Options, t targets.Remote, ledgerDir string) (out *Outcome, err error) {
	if r, ok := t.(targets.Resumer); ok && opt.Out != "" && r.Resumes(opt.Out) {
		opt.Log("resuming the run in %s", opt.Out)
		opt.Force = true
	}
	ses, err := openSession(opt, ledgerDir)
	if err != nil {
		return nil, err
	}
	out = &Outcome{Dir: ses.Dir}
	defer func() {
		closeSession(ses, &err)
		var ie *plan.InputError
		if out.Run == nil && errors.As(err, &ie) {
			ses.Discard() // refused before anything ran there: leave nothing behind
			out = nil
		}
	}()
	req := opt.Request
	req.Out = ses.Dir
	r, err := t.Run(ctx, ses, req)
	out.Run = r
	out.Saved = r != nil
	if ctx.Err() != nil && err != nil && !errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return out, err
}

func newRun(opt Options, p *Plan) *results.Run {
	cfg := opt.Config
	cfg.Params = cfg.Params.Only(cfg.Suite) // results.json keeps the sizes of the suites that ran
	cfgJSON, _ := json.Marshal(cfg)
	r := &results.Run{
		Schema:       results.Schema,
		Tool:         results.Tool{Name: "fsbench", Version: opt.Version, GoVersion: runtime.Version()},
		Status:       results.RunRunning,
		Started:      time.Now(),
		Machine:      machine(),
		Tools:        map[string]string{},
		Config:       cfgJSON,
		Methods:      p.Methods,
		Variants:     p.Variants,
		Measurements: []results.Measurement{},
	}
	if r.Variants == nil {
		r.Variants = []results.Variant{}
	}
	return r
}

func machine() results.Machine {
	m := results.Machine{Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	m.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if mi, err := measure.ReadMeminfo(); err == nil {
		m.MemBytes = mi["MemTotal"]
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	return m
}
