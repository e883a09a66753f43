package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/targets"
	"github.com/fsbench/fsbench/internal/trace"
)

// engine runs a local run's repetitions: one scheduler for every target and suite, with the
// progress line, --until-stable and the order of repetitions.
type engine struct {
	ctx  context.Context
	opt  Options
	cfg  plan.Config
	plan *Plan
	run  *results.Run
	ses  *session.Session
	prep *targets.Prepared
	// caps are the target's capabilities.
	caps targets.Capability
	logf func(string, ...any)
	save func() error

	env suite.Env // the parts every repetition shares; data fields are set per group
	// cgroup is fsbench's own cgroup v2 ("" without one, cgroupWhy says why).
	cgroup, cgroupWhy string
	// fp is the device under test's fingerprint at the start of the run (nil on raw NAND).
	fp *blockdev.Fingerprint
	// keptModules are the modules the kernel would not unload after a repetition (said once).
	keptModules map[string]bool
	mnt         string
	groups      []group
	done        int
	total       int
	started     time.Time
}

// group is the jobs that share a dataset: all of them on a block device; those of one partition
// size on raw NAND, whose data is scaled to the partition.
type group struct {
	size uint64
	jobs []suite.Job
	need dataNeed
}

// setup makes the mount point, sets up block tracing, checks that the data fits (on the device
// and in RAM) and that every variant's mkfs and mount options work on this device.
func (e *engine) setup(user *userData) error {
	p, cfg := e.plan, e.cfg
	// The confined tools' private directories go into a directory the ledger records: a tool
	// still running when fsbench is killed leaves its directory to the cleanup.
	tools, err := e.ses.Tree(".tools-")
	if err != nil {
		return err
	}
	e.ctx = fs.WithWorkDir(e.ctx, tools)
	if err := e.recordDevice(); err != nil {
		return err
	}
	e.run.Methods["confinement"] = fs.ConfinementMethod()
	e.mnt = filepath.Join(e.ses.Work, "mnt")
	if err := e.ses.Mountpoint(e.mnt); err != nil {
		return err
	}
	sys, err := fs.HostSystem()
	if err != nil {
		return err
	}
	e.env = suite.Env{
		Device: e.prep.Device, DeviceName: e.prep.DeviceName, Sysfs: "/sys", Mountpoint: e.mnt,
		Timeout: cfg.Timeout.Duration, Selection: p.Selection, Run: fs.DefaultRunner, System: sys, Log: e.logf,
		Params: cfg.Params, ModulesAtStart: fs.LoadedModules(),
	}
	setKindData(&e.env, e.prep)
	e.env.AgeSeed, e.env.CardState, e.env.ResultsDir = cfg.Seed, cfg.CardState, e.ses.Dir
	e.env.EmitAging = func(a results.Aging) error {
		e.run.Aging = append(e.run.Aging, a)
		return e.save()
	}
	e.env.Sentinel = e.sentinel(e.prep.DeviceName, e.prep.Backing)
	e.recordSentinel()
	// The groups and what their data needs, all checked before any is staged.
	for _, j := range p.Jobs {
		size := e.prep.Size
		if j.PartitionBytes > 0 {
			size = j.PartitionBytes
		}
		i := slices.IndexFunc(e.groups, func(g group) bool { return g.size == size })
		if i < 0 {
			e.groups = append(e.groups, group{size: size})
			i = len(e.groups) - 1
		}
		e.groups[i].jobs = append(e.groups[i].jobs, j)
	}
	for i := range e.groups {
		g := &e.groups[i]
		if user != nil && e.env.Flash == nil {
			if err := user.checkFits(g.size, e.logf); err != nil {
				return err
			}
		}
		need := dataNeeds(cfg, dataBasis(cfg, g.size), e.env.Flash != nil, user)
		if err := need.checkRAM(); err != nil {
			return err
		}
		g.need = need
	}
	if e.prep.Device != "" {
		var extra []string
		if cfg.Card != "" {
			extra = append(extra, cfg.Card)
		}
		if e.env.CardProfile != "" {
			extra = append(extra, e.env.CardProfile)
			if p, err := flash.CardProfile(e.env.CardProfile); err == nil {
				recordCalibration(e.run, p)
			}
		}
		if err := setupTracing(&e.env, e.run, e.prep.Size, extra, cfg.KeepTraces, e.ses.Dir, cfg.CardState); err != nil {
			e.logf("block-request traces not recorded: %v", err)
		}
		if err := e.preflight(); err != nil {
			return err
		}
		for _, j := range p.Jobs {
			if j.Variant.PartitionStart > 0 {
				e.run.Methods["partition_start"] = fmt.Sprintf("variants with a partition start run on a loop device over the target's device starting there, %s long (the device less the largest start, so that every such partition has the same size); their block traces are shifted by the start, so that alignment shares and the card models see the card's offsets, as a real partition's requests reach the card", bytesize.Format(e.partitionSize()))
				break
			}
		}
	}
	return nil
}

// sentinel watches for interference with the tests on device (a /sys/block name), whose
// data finally lands in backing when its own stack does not say so.
func (e *engine) sentinel(device, backing string) *measure.Sentinel {
	s := measure.NewSentinel(device)
	s.Backing, s.Cgroup = backing, e.cgroup
	return s
}

// recordSentinel says in the results what the sentinel watches and judges, and what it could
// not see here.
func (e *engine) recordSentinel() {
	st := e.env.Sentinel.Setup()
	if e.cgroup == "" && e.cgroupWhy != "" && len(st.Notes) > 0 {
		st.Notes[0] += " (" + e.cgroupWhy + ")"
	}
	e.run.Sentinel = &results.Sentinel{Cgroup: st.Cgroup, PSI: st.PSI, OwnPSI: st.OwnPSI, OwnIO: st.OwnIO, Notes: st.Notes}
	cpu := "the CPU time of processes other than fsbench, its children and kernel threads (/proc/<pid>/stat)"
	if st.Cgroup != "" {
		cpu = "the CPU time of everything else: the machine's task time (/proc/stat) less fsbench's own cgroup's (cpu.stat, children that ended included) and the kernel threads' (/proc/<pid>/stat)"
	}
	psi := "PSI pressure (/proc/pressure)"
	if st.OwnPSI {
		psi = "PSI pressure felt only by tasks outside fsbench (/proc/pressure less its cgroup's *.pressure)"
	}
	own := "this run's own I/O on the device"
	if len(st.OwnIO) > 0 {
		own += " and on the disks under it: " + strings.Join(st.OwnIO, "; ")
	}
	e.run.Methods["noise"] = "noise: during each timed test, what else the machine did: CPU steal (/proc/stat), " + cpu + ", " + psi +
		", and the bytes other disks moved (/proc/diskstats, less " + own + "); " +
		fmt.Sprintf("a test is marked busy above %.0f %% steal, %.0f %% of a CPU used by other processes, %.0f %% memory pressure or %.0f MB/s of other disk I/O (details: docs/noise-sentinel.md)",
			measure.BusySteal, measure.BusyOtherCPU, measure.BusyMemPSI, measure.BusyOtherIOPS/1e6)
	for _, n := range st.Notes {
		e.logf("noise sentinel: %s", n)
	}
}

// runAll runs every group's repetitions.
func (e *engine) runAll() error {
	e.total, e.started = e.plan.Total(), time.Now()
	for gi, g := range e.groups {
		if len(g.jobs) == 0 {
			continue // every variant of it was skipped by the preflight
		}
		d, err := stage(e.ctx, e.ses, e.cfg, g, e.logf)
		if err != nil {
			return err
		}
		if gi == 0 || e.run.Dataset.Files == 0 {
			e.run.Dataset = d.desc
		}
		env := e.env
		d.fill(&env)
		err = e.runGroup(&env, g.jobs)
		if uerr := d.unstage(); err == nil {
			err = uerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// runGroup runs the repetitions of jobs in the plan's order, then, with --until-stable, more
// of those not yet stable.
func (e *engine) runGroup(env *suite.Env, jobs []suite.Job) error {
	p := e.plan
	rounds := p.Reps - p.First + 1
	switch p.Order {
	case plan.OrderInterleaved:
		// Repetition n of every variant, in a shuffled order, then n+1: slow drift of the
		// machine spreads over every variant instead of landing on the last ones.
		rng := rand.New(rand.NewPCG(e.cfg.Seed, 0x6f7264))
		for n := p.First; n <= p.Reps; n++ {
			order := slices.Clone(jobs)
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, j := range order {
				if err := e.rep(env, j, n); err != nil {
					return err
				}
			}
		}
		return e.untilStable(env, jobs, p.Reps+1)
	default:
		for _, j := range jobs {
			for n := p.First; n < p.First+rounds; n++ {
				if err := e.rep(env, j, n); err != nil {
					return err
				}
			}
			if err := e.untilStable(env, []suite.Job{j}, p.Reps+1); err != nil {
				return err
			}
		}
		return nil
	}
}

// untilStable repeats, from repetition n, the jobs whose timed tests are not yet known within
// the target, up to MaxReps, and records how many repetitions each variant took.
func (e *engine) untilStable(env *suite.Env, jobs []suite.Job, n int) error {
	target := e.cfg.UntilStable
	if target <= 0 {
		return nil
	}
	for ; ; n++ {
		var pending []suite.Job
		for _, j := range jobs {
			unstable := unstableTests(e.run, j.Variant.Name, target)
			setStability(e.run, j.Variant.Name, n-1, unstable)
			if len(unstable) == 0 {
				continue
			}
			if n > e.plan.MaxReps {
				e.logf("%s: not stable within ±%.3g %% after %d repetitions: %s", j.Variant.Name, 100*target, n-1, strings.Join(unstable, ", "))
				continue
			}
			pending = append(pending, j)
		}
		if len(pending) == 0 {
			return nil
		}
		// Repeating while other work disturbs the machine would only add disturbed samples: wait
		// for it to calm down, and give up (saying so) if it does not.
		if why := e.waitQuiet(); why != "" {
			for _, j := range pending {
				e.logf("%s: not repeated further: the machine stayed busy (%s); its figures are unreliable", j.Variant.Name, why)
			}
			e.run.Methods["until_stable_busy"] = "until-stable stopped repeating because the machine stayed busy with other work: " + why
			return nil
		}
		e.total += len(pending)
		for _, j := range pending {
			if err := e.rep(env, j, n); err != nil {
				return err
			}
		}
		jobs = pending
	}
}

// quietWait bounds how long until-stable waits for a busy machine to calm down.
var quietWait = 2 * time.Minute

// waitQuiet returns "" once a short watch of the machine shows no interference, or what kept
// it busy after quietWait.
func (e *engine) waitQuiet() string {
	if e.env.Sentinel == nil {
		return ""
	}
	deadline := time.Now().Add(quietWait)
	for {
		w := e.env.Sentinel.Start()
		select {
		case <-e.ctx.Done():
			return ""
		case <-time.After(2 * time.Second):
		}
		n := w.Stop()
		if !n.Busy {
			return ""
		}
		if time.Now().After(deadline) {
			return n.Why
		}
		e.logf("until-stable: waiting for the machine to calm down (%s)", n.Why)
	}
}

// rep runs repetition n of job j, with the progress display, and stops the run when the target
// itself broke (its backing filesystem is full, the card server died).
func (e *engine) rep(env *suite.Env, j suite.Job, n int) error {
	if e.opt.Progress != nil {
		pr := Progress{Variant: j.Variant.Name, Rep: n, Reps: e.plan.Reps, Done: e.done, Total: e.total}
		if e.done > 0 {
			pr.ETA = time.Duration(float64(time.Since(e.started)) / float64(e.done) * float64(e.total-e.done))
		}
		env.OnTest = func(test string) { pr.Test = test; e.opt.Progress(pr) }
	}
	if err := e.verifyDevice(); err != nil {
		return err
	}
	failed := false
	emit := func(m results.Measurement) error {
		if m.Status == results.Failed {
			failed = true
		}
		e.run.Measurements = append(e.run.Measurements, m)
		return e.save()
	}
	e.run.Order = append(e.run.Order, fmt.Sprintf("%s#%d", j.Variant.Name, n))
	if start := j.Variant.PartitionStart; start > 0 {
		penv, done, err := e.partition(env, start)
		if err != nil {
			return fmt.Errorf("%s repetition %d: %w", j.Variant.Name, n, err)
		}
		defer done()
		env = penv
	}
	modules := fs.LoadedModules()
	err := suite.RunRepetition(e.ctx, env, j, n, n == 0, emit)
	e.coldBoot(j.Kind, modules)
	if err != nil {
		return fmt.Errorf("%s repetition %d: %w", j.Variant.Name, n, err)
	}
	e.done++
	if failed {
		// A test that failed on another medium is that medium's failure, not the filesystem's.
		if err := e.verifyDevice(); err != nil {
			return err
		}
	}
	if failed && e.prep.Health != nil {
		if herr := e.prep.Health(); herr != nil {
			return &targetError{herr}
		}
	}
	return nil
}

// coldBoot unloads the filesystem's module after a repetition that loaded it, so that the next
// repetition pays the module load, as every boot does (a module fsbench did not load, one
// loaded before the repetition, is never touched). One the kernel keeps is said once; the
// module_load of later repetitions then says it was left loaded, and the boot time leaves
// those repetitions out.
func (e *engine) coldBoot(k fs.Kind, before map[string]bool) {
	if k.Module == "" || len(before) == 0 {
		return // no module, or a kernel without loadable modules (no /proc/modules)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	unloaded, left := fs.UnloadKindModules(ctx, e.env.Run, e.env.System, k, before)
	if len(unloaded) > 0 {
		e.run.Methods["module_unload"] = "cold boot: after each repetition, the kernel modules its module_load (modprobe) loaded were unloaded again (rmmod, after the unmount; only modules.dep's closure of the filesystem's module, never one loaded before the repetition), so that every repetition's boot time pays the module load"
	}
	if len(left) > 0 && !e.keptModules[k.Module] {
		if e.keptModules == nil {
			e.keptModules = map[string]bool{}
		}
		e.keptModules[k.Module] = true
		e.logf("warning: the kernel keeps %s loaded after %s's repetition (rmmod refused): later repetitions cannot time its load, so boot time uses the repetitions that loaded it", strings.Join(left, ", "), k.Name)
	}
}

// partitionSize is the size of every partition window of the run: the device less the largest
// partition start of the matrix, in whole MiB, so that aligned and misaligned partitions have
// the same size.
func (e *engine) partitionSize() uint64 {
	var maxStart uint64
	for _, j := range e.plan.Jobs {
		maxStart = max(maxStart, j.Variant.PartitionStart)
	}
	return (e.prep.Size - maxStart) / (1 << 20) * (1 << 20)
}

// partition attaches a loop device over the target's device (the image, the card's file, or
// the real device) starting at start, for one repetition: the filesystem then lies where a
// partition starting there would, and the card sees its requests at the card's offsets. The
// returned function detaches it.
func (e *engine) partition(env *suite.Env, start uint64) (*suite.Env, func(), error) {
	if e.prep.Underlying == "" {
		return nil, nil, fmt.Errorf("a partition start needs a block device (this target has none)")
	}
	size := e.partitionSize()
	loop, err := session.AttachLoop(e.prep.Underlying, session.LoopOptions{DirectIO: !e.opt.NoDirectIO, Offset: start, SizeLimit: size,
		Device: e.caps.Has(targets.UserDevice)})
	if err != nil {
		return nil, nil, fmt.Errorf("the partition at %s: %w", bytesize.Format(start), err)
	}
	if err := e.ses.Ledger.AddLoop(loop.Path, e.prep.Underlying); err != nil {
		loop.Detach()
		return nil, nil, err
	}
	penv := *env
	penv.Device, penv.DeviceName, penv.PartitionStart = loop.Path, loop.Name, start
	backing := e.prep.Backing
	if backing == "" {
		backing = e.prep.Underlying
	}
	penv.Sentinel = e.sentinel(loop.Name, backing)
	return &penv, func() {
		if err := loop.Detach(); err != nil {
			e.logf("warning: detaching the partition window %s: %v", loop.Path, err)
			return
		}
		e.ses.Ledger.RemoveLoop(loop.Path)
	}, nil
}

// recordDevice takes the fingerprint of the device under test (number, size, partition start,
// disk sequence number, the card's or drive's identity, a loop device's file) as the run starts,
// and has every mkfs, fsck and mount of the run, and fsbench's own writes to the device, compare
// the device with it first: a card swapped in its reader, or another device at the same number
// after a reset, stops the run before anything is written to it.
func (e *engine) recordDevice() error {
	if e.prep.Device == "" {
		return nil // raw NAND: nandsim's chip is made for the repetition and removed after it
	}
	fp, err := blockdev.ReadFingerprint("/sys", e.prep.Device)
	if err != nil {
		return fmt.Errorf("identifying the device under test: %w", err)
	}
	e.fp = &fp
	e.run.Methods["device_identity"] = "before each repetition, each mkfs, fsck and mount, and fsbench's own writes to the device, the device was compared with its identity at the start of the run (device number, size, partition start, the kernel's disk sequence number, the card's CID or the drive's serial, a loop device's file); a difference would have stopped the run before writing"
	e.ctx = fs.WithDeviceCheck(e.ctx, func(string) error { return e.verifyDevice() })
	return nil
}

// verifyDevice compares the device under test with its fingerprint: a *targetError when it is
// another medium.
func (e *engine) verifyDevice() error {
	if e.fp == nil {
		return nil
	}
	if err := e.fp.Verify("/sys"); err != nil {
		return &targetError{err}
	}
	return nil
}

// targetError is a failure of the target itself, found after a test failed.
type targetError struct{ err error }

func (e *targetError) Error() string { return e.err.Error() }
func (e *targetError) Unwrap() error { return e.err }

// stopped records why the run stopped: interrupted (completed cells are kept), the target broke,
// or an error outside any test.
func (e *engine) stopped(err error) error {
	run := e.run
	run.Finished = time.Now()
	run.Tool.PeakRSSBytes = measure.PeakRSS()
	var se *SaveError
	switch {
	case errors.As(err, &se):
		return err // nothing more can be saved
	case e.ctx.Err() != nil:
		run.Status = results.RunInterrupted
		// Why, when it is more than a cancellation: a signal, or a board's link to its host
		// gone silent (the host that fetches the results learns it from here).
		if c := context.Cause(e.ctx); c != nil && !errors.Is(c, context.Canceled) && !errors.Is(c, context.DeadlineExceeded) {
			run.Error = c.Error()
		}
		if serr := e.save(); serr != nil {
			return serr
		}
		return e.ctx.Err()
	default:
		run.Status, run.Error = results.RunFailed, err.Error()
		if serr := e.save(); serr != nil {
			return errors.Join(err, serr)
		}
		return err
	}
}

// recordCalibration records which calibration of profile p the run's figures stand on.
func recordCalibration(run *results.Run, p flash.Profile) {
	if run.CardCalibrations == nil {
		run.CardCalibrations = map[string]int{}
	}
	run.CardCalibrations[p.Name] = p.Calibration
}

// setupTracing turns on block-request capture when tracefs is usable, replaying every trace
// through each built-in card profile (and the simulated card's own profile).
func setupTracing(env *suite.Env, run *results.Run, size uint64, extra []string, keep bool, dir, cardState string) error {
	if err := trace.Available(); err != nil {
		run.Methods["trace"] = "not recorded: " + err.Error()
		return err
	}
	tr := &suite.Tracing{Size: size}
	for _, n := range flash.Builtins() {
		p, err := flash.Lookup(n)
		if err != nil {
			return err
		}
		tr.Profiles = append(tr.Profiles, p)
		recordCalibration(run, p)
		if n == "sd-typical" {
			tr.Align = p
		}
	}
	for i, e := range extra {
		p, err := flash.CardProfile(e)
		if err != nil {
			run.Methods["trace"] = "not recorded: " + err.Error()
			return err
		}
		if i == 0 {
			tr.Align = p
		}
		if !slices.ContainsFunc(tr.Profiles, func(q flash.Profile) bool { return q.Name == p.Name }) {
			tr.Profiles = append(tr.Profiles, p)
			recordCalibration(run, p)
		}
	}
	if keep {
		tr.KeepDir = filepath.Join(dir, "traces")
		tr.Rel = func(p string) string { r, _ := filepath.Rel(dir, p); return r }
	}
	env.Tracing = tr
	run.Methods["trace"] = fmt.Sprintf("trace: the block requests of each timed test, captured from tracefs (block_rq_issue/complete, a private instance filtered to the device); "+
		"alignment shares use %s's page and AU; replay: each repetition feeds its tests' traces in order through one fresh flash model per profile (mkfs included; the untimed remounts and the discard before mkfs are not traced); "+
		"the capture's reader adds a little to fsbench's own CPU time", tr.Align.Name)
	state := "fresh (nothing written before: what the discard before mkfs leaves)"
	if cardState == plan.CardUsed {
		state = "used (written whole once before, nothing discarded since: --card-state used)"
	}
	run.Methods["lifetime"] = "day_lifetime_years: how many days of the write tests the card takes before its first error, ÷ 365.25: the write tests of a repetition up to this one, run one after the other as one day, once a day, on a card the size of the device under test (" + bytesize.Format(size) + "; a larger card with the same daily writes lasts about proportionally longer). " +
		"The card model runs the day's block requests again and again on a " + state + " card until its spare blocks are used up and it fails as its profile says (read-only, dead or wrong data), each block with its own endurance around the profile's; " +
		"its endurance is scaled down to make that quick and the days scaled back up (docs/cards.md, \"End of life\"). So the blocks the day actually wears, the spread of their endurance and the spares count; " +
		"what it assumes: the device sends the card the same requests every day; retention and read disturb ignored"
	run.Methods["block_amplification"] = "extra.block_amplification: device bytes written ÷ bytes the test wrote through the filesystem (write, read_remove_write, video_write)"
	return nil
}

// unstableTests lists the timed tests (times and rates) of a variant whose median is not yet
// known within ±target (stats.Stable). Byte figures are left out (used space does not vary;
// mount_mem hovers around 0, where a relative interval means nothing), and so is module_load,
// measured once per boot at most.
func unstableTests(run *results.Run, variant string, target float64) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range run.Measurements {
		if m.Variant != variant || m.Unit == "" || m.Test == catalog.ModuleLoad || seen[m.Test] {
			continue
		}
		if t, ok := catalog.Lookup(m.Test); !ok || !t.Quantity.MachineBound() {
			continue
		}
		seen[m.Test] = true
		if ok, _ := stats.Stable(run.Values(variant, m.Test), target); !ok {
			out = append(out, m.Test)
		}
	}
	return out
}

// setStability records how many repetitions a variant took and what did not settle.
func setStability(run *results.Run, variant string, reps int, unstable []string) {
	for i := range run.Variants {
		if run.Variants[i].Name == variant {
			run.Variants[i].Repetitions = reps
			run.Variants[i].Unstable = unstable
		}
	}
}
