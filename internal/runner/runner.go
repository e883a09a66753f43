// Package runner carries out one `fsbench run`: it checks which variants this machine can run,
// stages the dataset in RAM, makes the image and its loop device, runs every repetition of every
// variant, saves the results after every test, and always undoes what it set up.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/dataset"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/target"
	"github.com/fsbench/fsbench/internal/trace"
)

// LedgerDir is where runs record what they created, for the cleanup after a killed run. /run is
// a tmpfs: it empties at reboot, as do the loop devices and mounts the ledgers describe.
const LedgerDir = "/run/fsbench"

// Options are the inputs of a run beyond the configuration.
type Options struct {
	Config plan.Config
	// OutDir is the results directory to create; empty = <Config.ResultsDir>/<timestamp>.
	OutDir string
	// Image is the image file to create; empty = <OutDir>/.work/fsbench.img, deleted at the end.
	Image string
	// KeepImage leaves the image file in place after the run.
	KeepImage bool
	// Target is where the block device comes from: "" or "image" (a sparse image file),
	// "simcard:PROFILE" (the flash model served as a file; PROFILE is a built-in profile name
	// or a profile file), or "device:/dev/X" (a real device, destroyed: Destroy must name it).
	Target string
	// Destroy must name the device of a "device:" target, as a deliberate second confirmation.
	Destroy string
	// TimeScale multiplies the simulated card's modelled waits (1 = real time).
	TimeScale float64
	// UntilStable, when > 0, repeats each variant beyond Config.Repetitions until the confidence
	// interval of the median of every timed test is within ±UntilStable of the median (0.03 =
	// ±3 %), up to MaxRepetitions.
	UntilStable    float64
	MaxRepetitions int
	// NANDNoDelays turns off nandsim's simulated chip timings (target nandsim): times are then
	// the kernel's and the CPU's work only.
	NANDNoDelays bool
	// KeepTraces writes each test's block-request trace to <OutDir>/traces/.
	KeepTraces bool
	// Card is a card profile (name or file) to replay traces through besides the built-ins,
	// so that flash wear can be rated on the user's own card.
	Card string
	// Self is the argv prefix that runs fsbench's own command line, used to start the card
	// server as a child; empty = this executable (tests pass a built fsbench binary).
	Self []string
	// DirectIO asks for a loop device with direct I/O (the default): reads and writes then reach
	// the image file instead of being answered by the host's page cache a second time.
	DirectIO bool
	Version  string
	// Log receives progress lines; Progress receives the state before each test. Either may be nil.
	Log      func(format string, args ...any)
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
}

// Run carries out the run. The returned Outcome is non-nil as soon as the results directory
// exists, also with an error, so that the caller can point at what was kept.
func Run(ctx context.Context, opt Options) (out *Outcome, err error) {
	logf := opt.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("fsbench run needs root: it makes loop devices, mounts filesystems and drops caches; run it with sudo")
	}
	cfg := opt.Config
	sel, err := suite.Select(cfg.Suite, cfg.Tests)
	if err != nil {
		return nil, err
	}

	// A killed run leaves its ledger behind; undo what it recorded before making anything new.
	if actions, err := target.CleanupStale(LedgerDir, func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("cleaning up after an earlier run: %w", err)
	} else if len(actions) > 0 {
		logf("cleaned up after an earlier run that was killed: %s", strings.Join(actions, "; "))
	}
	// Trace instances of killed runs hold kernel buffers: free them too.
	if removed, err := trace.CleanStale(); err != nil {
		logf("warning: %v", err)
	} else if len(removed) > 0 {
		logf("cleaned up after an earlier run that was killed: %s", strings.Join(removed, "; "))
	}
	targetKind, _, err := ParseTarget(opt.Target)
	if err != nil {
		return nil, err
	}
	if flash, err := flashTarget(targetKind, cfg.Suite); err != nil {
		return nil, err
	} else if flash {
		return runFlash(ctx, opt, sel)
	}
	ses, out, err := openSession(opt, logf)
	if err != nil {
		return out, err
	}
	defer ses.close(&err)
	ledger, dir, work := ses.ledger, ses.dir, ses.work

	run := newRun(opt)
	out.Run = run
	save := func() error { return results.Save(dir, run) }

	// Which variants this machine runs, and why not.
	sys, err := fs.HostSystem()
	if err != nil {
		return out, err
	}
	type job struct {
		v plan.Variant
		k fs.Kind
	}
	var jobs []job
	kinds := map[string]bool{}
	for _, v := range cfg.Variants {
		k, ok := fs.Lookup(v.FS)
		if !ok {
			return out, fmt.Errorf("variant %s: unknown filesystem %q", v.Name, v.FS)
		}
		rv := results.Variant{Name: v.Name, FS: v.FS, MkfsArgs: v.MkfsArgs, MountOptions: v.MountOptions, ReadOnly: k.ReadOnly}
		av := sys.Check(k)
		rv.Kernel = av.Kernel
		if av.Runs {
			rv.Status = results.OK
			jobs = append(jobs, job{v, k})
			kinds[k.Name] = true
		} else {
			rv.Status, rv.Reason = results.Skipped, av.Reason
			if av.Kernel == "missing" {
				rv.Reason += "; fsbench run --target vm runs it in a guest kernel"
			}
			logf("skipping %s: %s", v.Name, av.Reason)
		}
		run.Variants = append(run.Variants, rv)
	}
	for name := range kinds {
		k, _ := fs.Lookup(name)
		if ver, err := fs.ToolVersion(ctx, fs.DefaultRunner, k); err == nil {
			run.Tools[k.Tool] = ver
		} else {
			run.Tools[k.Tool] = "unknown: " + err.Error()
		}
	}
	if err := save(); err != nil {
		return out, err
	}
	if len(jobs) == 0 {
		run.Status, run.Finished = results.RunComplete, time.Now()
		return out, save()
	}

	kind, profile, err := ParseTarget(opt.Target)
	if err != nil {
		return out, err
	}
	var devID *blockdev.Identity
	if kind == "device" {
		// A real device: every check before anything touches it; afterwards only the named
		// device is ever opened, so nothing outside it can be written.
		id, err := target.CheckDevice(profile, opt.Destroy)
		if err != nil {
			return out, err
		}
		logf("device %s: %s, %s, rotational=%s: everything on it will be destroyed", id.Path, deviceModel(id), plan.FormatSize(id.SizeBytes), id.Queue["rotational"])
		devID = &id
		cfg.Size = id.SizeBytes // the dataset scales to the real device
	}

	// The dataset, in RAM, as Bootlin copied it from a ramfs: the source must not be the
	// bottleneck, nor put I/O on any device.
	ds, err := stageDataset(ctx, cfg, work, ledger, &ses.cleanups, logf)
	if err != nil {
		return out, err
	}
	run.Dataset = ds.desc

	// The device: the user's, or a loop device over a sparse image file or the simulated card.
	var devPath, devName string
	backing := opt.Image
	var card *target.Simcard
	if kind == "device" {
		devPath, devName = devID.Path, devID.Name
		run.Device = devID
		run.Target = results.Target{Kind: "device", Device: devID.Path, SizeBytes: devID.SizeBytes}
	} else if kind == "simcard" {
		cardDir := filepath.Join(work, "simcard")
		if err := ledger.AddMountpoint(cardDir); err != nil {
			return out, err
		}
		scale := opt.TimeScale
		if scale == 0 {
			scale = 1
		}
		card, err = target.StartSimcard(ctx, target.SimcardOptions{
			Profile: profile, Size: cfg.Size, Dir: cardDir, Backing: filepath.Join(work, "simcard.data"), TimeScale: scale,
			Command: opt.Self,
		})
		if err != nil {
			return out, err
		}
		ses.add(func() error {
			if err := card.Stop(); err != nil {
				return fmt.Errorf("stopping the simulated card: %w", err)
			}
			return nil
		})
		backing = card.CardPath()
		run.Target = results.Target{Kind: "simcard", Profile: profile, TimeScale: scale}
		logf("simulated card %s (%s) served at %s, modelled waits × %g", profile, plan.FormatSize(cfg.Size), backing, scale)
	} else {
		if backing == "" {
			backing = filepath.Join(work, "fsbench.img")
		}
		if backing, err = filepath.Abs(backing); err != nil {
			return out, err
		}
		if err := target.CreateImage(backing, cfg.Size); err != nil {
			return out, err
		}
		img := backing
		if !opt.KeepImage {
			if err := ledger.AddFile(img); err != nil {
				return out, err
			}
			ses.add(func() error { return os.Remove(img) })
		}
		run.Target = results.Target{Kind: "image", Image: img}
	}
	if kind != "device" {
		loop, err := target.AttachLoop(backing, target.LoopOptions{DirectIO: opt.DirectIO})
		if err != nil {
			return out, err
		}
		if err := ledger.AddLoop(loop.Path, backing); err != nil {
			loop.Detach()
			return out, err
		}
		ses.add(loop.Detach)
		if opt.DirectIO && !loop.DirectIO {
			logf("warning: the kernel did not enable direct I/O on %s (the backing file's filesystem may not support O_DIRECT): reads may be answered by the host's page cache", loop.Path)
		}
		run.Target.SizeBytes, run.Target.Device, run.Target.LoopMethod, run.Target.DirectIO = cfg.Size, loop.Path, loop.Method, loop.DirectIO
		if id, err := blockdev.Identify("/sys", loop.Name); err == nil {
			run.Device = &id
		} else {
			logf("warning: reading the identity of %s: %v", loop.Name, err)
		}
		devPath, devName = loop.Path, loop.Name
	}

	if cfg.Scheduler != "" {
		restore, err := target.SetScheduler("/sys", devName, cfg.Scheduler)
		if err != nil {
			return out, err
		}
		ses.add(restore)
		run.Target.Scheduler = cfg.Scheduler
		logf("I/O scheduler of %s: %s", devName, cfg.Scheduler)
	}

	mnt := filepath.Join(work, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		return out, err
	}
	if err := ledger.AddMountpoint(mnt); err != nil {
		return out, err
	}
	if err := save(); err != nil {
		return out, err
	}

	env := &suite.Env{
		Device: devPath, DeviceName: devName, Sysfs: "/sys", Mountpoint: mnt, WorkDir: work,
		Source: ds.tree, Video: ds.video, Dataset: ds.stats, Copies: ds.desc.Copies,
		VideoCopies: ds.desc.VideoCopies, VideoBytes: ds.desc.VideoBytes,
		Timeout: cfg.Timeout.Duration, Selection: sel, Run: fs.DefaultRunner, System: sys, Log: logf,
	}
	// Card profiles replayed besides the built-ins; the first sets the summary's alignment unit.
	var extra []string
	if opt.Card != "" {
		extra = append(extra, opt.Card)
	}
	if kind == "simcard" {
		extra = append(extra, profile)
	}
	if err := setupTracing(env, run, cfg.Size, extra, opt.KeepTraces, dir); err != nil {
		logf("block-request traces not recorded: %v", err)
	}
	if card != nil {
		env.Card = card.Stats
		// The card's final state (its wear histogram) is recorded however the run ends.
		defer func() {
			if c, err := card.Stats(); err == nil {
				run.Card = &c
				results.Save(dir, run)
			}
		}()
	}
	reps := cfg.Repetitions
	maxReps := reps
	if opt.UntilStable > 0 {
		// A distribution-free 95 % interval of a median needs at least stats.NeedForCI samples.
		reps = max(reps, stats.NeedForCI(stats.DefaultConfidence))
		maxReps = max(opt.MaxRepetitions, reps)
		run.Methods["until_stable"] = fmt.Sprintf("each variant repeated until the 95 %% confidence interval of the median of every timed test (times and rates; module_load and byte figures excepted) is within ±%.3g %% of the median, from %d up to %d repetitions; see variants[].repetitions and .unstable", 100*opt.UntilStable, reps, maxReps)
	}
	first := 1
	if cfg.Warmup {
		first = 0
	}
	total := len(jobs) * (reps - first + 1)
	done := 0
	started := time.Now()
	emit := func(m results.Measurement) error {
		run.Measurements = append(run.Measurements, m)
		return save()
	}
	for _, j := range jobs {
		for n := first; ; n++ {
			if n > reps {
				if opt.UntilStable <= 0 {
					break
				}
				unstable := unstableTests(run, j.v.Name, opt.UntilStable)
				setStability(run, j.v.Name, n-1, unstable)
				if len(unstable) == 0 || n > maxReps {
					if len(unstable) > 0 {
						logf("%s: not stable within ±%.3g %% after %d repetitions: %s", j.v.Name, 100*opt.UntilStable, n-1, strings.Join(unstable, ", "))
					}
					break
				}
				total++ // one more repetition of this variant
			}
			if opt.Progress != nil {
				p := Progress{Variant: j.v.Name, Rep: n, Reps: reps, Done: done, Total: total}
				if done > 0 {
					p.ETA = time.Duration(float64(time.Since(started)) / float64(done) * float64(total-done))
				}
				env.OnTest = func(test string) { p.Test = test; opt.Progress(p) }
			}
			if err := suite.RunRepetition(ctx, env, j.v, j.k, n, n == 0, emit); err != nil {
				return out, stopped(ctx, run, save, j.v.Name, n, err)
			}
			done++
		}
	}
	run.Status, run.Finished = results.RunComplete, time.Now()
	run.Tool.PeakRSSBytes = measure.PeakRSS()
	return out, save()
}

// stopped is the error a run returns when a repetition could not go on: interrupted (the
// results say so and keep every completed cell), or an error outside any test.
func stopped(ctx context.Context, run *results.Run, save func() error, variant string, n int, err error) error {
	if ctx.Err() == nil {
		return fmt.Errorf("%s repetition %d: %w", variant, n, err)
	}
	run.Status, run.Finished = results.RunInterrupted, time.Now()
	run.Tool.PeakRSSBytes = measure.PeakRSS()
	if serr := save(); serr != nil {
		return serr
	}
	return ctx.Err()
}

// session is what every run sets up before anything else and always undoes: the ledger of
// what it creates (so that the next run or fsbench cleanup can undo a killed run's work), the
// cleanups, and the results directory with its work area.
type session struct {
	ledger    *target.Ledger
	cleanups  []func() error // undone newest first, always
	logf      func(string, ...any)
	dir, work string
}

// openSession opens the ledger and makes the results directory (opt.OutDir, or a timestamped
// one under the results directory) and its work area, which close removes. The Outcome is
// non-nil once the directory exists.
func openSession(opt Options, logf func(string, ...any)) (*session, *Outcome, error) {
	ledger, err := target.OpenLedger(LedgerDir)
	if err != nil {
		return nil, nil, err
	}
	s := &session{ledger: ledger, logf: logf, dir: opt.OutDir}
	fail := func(out *Outcome, err error) (*session, *Outcome, error) {
		s.close(&err)
		return nil, out, err
	}
	if s.dir == "" {
		s.dir = filepath.Join(opt.Config.ResultsDir, time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fail(nil, fmt.Errorf("creating the results directory: %w", err))
	}
	out := &Outcome{Dir: s.dir}
	s.work = filepath.Join(s.dir, ".work")
	if err := os.MkdirAll(s.work, 0o755); err != nil {
		return fail(out, err)
	}
	work := s.work
	s.add(func() error { return os.RemoveAll(work) })
	return s, out, nil
}

// add registers a cleanup.
func (s *session) add(f func() error) { s.cleanups = append(s.cleanups, f) }

// close runs the cleanups, newest first, and sets *err to the first failure if it is nil.
// The ledger goes only when everything it names was undone; otherwise it stays for `fsbench
// cleanup` or the next run.
func (s *session) close(err *error) {
	clean := true
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		if cerr := s.cleanups[i](); cerr != nil {
			clean = false
			s.logf("cleanup: %v", cerr)
			if *err == nil {
				*err = cerr
			}
		}
	}
	s.cleanups = nil
	if !clean {
		s.logf("some cleanup failed: %s is kept; run `fsbench cleanup` once the cause is fixed", s.ledger.Path())
		return
	}
	if cerr := s.ledger.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

// setupTracing turns on block-request capture when tracefs is usable, replaying every trace
// through each built-in card profile (and the simulated card's own profile).
func setupTracing(env *suite.Env, run *results.Run, size uint64, extra []string, keep bool, dir string) error {
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
		if n == "sd-typical" {
			tr.Align = p
		}
	}
	for i, e := range extra {
		p, err := CardProfile(e)
		if err != nil {
			run.Methods["trace"] = "not recorded: " + err.Error()
			return err
		}
		if i == 0 {
			tr.Align = p
		}
		if !slices.ContainsFunc(tr.Profiles, func(q flash.Profile) bool { return q.Name == p.Name }) {
			tr.Profiles = append(tr.Profiles, p)
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
	run.Methods["lifetime"] = "lifetime_years: blocks × endurance ÷ erases per run ÷ 365.25, for the test run once a day, on a card the size of the device under test (" + plan.FormatSize(size) + "; a larger card with the same daily writes lasts proportionally longer); erases per run is the larger of the erases the replay counted and the flash programmed in erase blocks (a used card erases before it programs); perfect wear levelling assumed, so real cards last less; retention and read disturb ignored"
	run.Methods["block_amplification"] = "extra.block_amplification: device bytes written ÷ bytes the test wrote through the filesystem (write, read_remove_write, video_write)"
	return nil
}

// CardProfile resolves a card profile given by name or file. Replays are recorded by profile
// name, so a file that reuses a built-in profile's name must be that profile unchanged.
func CardProfile(spec string) (flash.Profile, error) {
	p, err := flash.Lookup(spec)
	if err != nil {
		return p, fmt.Errorf("card profile %s: %w", spec, err)
	}
	if slices.Contains(flash.Builtins(), p.Name) && p.Name != spec {
		if b, err := flash.Lookup(p.Name); err == nil && !reflect.DeepEqual(b, p) {
			return p, fmt.Errorf("card profile %s is named %q like the built-in profile but differs from it: give it a name of its own (the name key in the file)", spec, p.Name)
		}
	}
	return p, nil
}

// deviceModel names a device for a person: its model or mmc name and vendor, as sysfs has them.
func deviceModel(id blockdev.Identity) string {
	var parts []string
	for _, k := range []string{"vendor", "model", "name", "manfid", "oemid", "date"} {
		if v := strings.TrimSpace(id.Device[k]); v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	if len(parts) == 0 {
		return "no model in sysfs"
	}
	return strings.Join(parts, ", ")
}

// unstableTests lists the timed tests (times and rates) of a variant whose median is not yet
// known within ±target (stats.Stable). Byte figures are left out (used space does not vary;
// mount_mem hovers around 0, where a relative interval means nothing), and so is module_load,
// measured once per boot at most.
func unstableTests(run *results.Run, variant string, target float64) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range run.Measurements {
		if m.Variant != variant || m.Unit == "" || m.Unit == "bytes" || m.Test == suite.ModuleLoad || seen[m.Test] {
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

// ParseTarget splits a --target value into its kind ("image", "simcard", "device" or
// "nandsim") and, for a simulated card, the profile (for a device, its path).
func ParseTarget(spec string) (kind, profile string, err error) {
	switch {
	case spec == "" || spec == "image":
		return "image", "", nil
	case strings.HasPrefix(spec, "simcard:") && len(spec) > len("simcard:"):
		return "simcard", strings.TrimPrefix(spec, "simcard:"), nil
	case spec == "simcard":
		return "simcard", "sd-typical", nil
	case strings.HasPrefix(spec, "device:") && len(spec) > len("device:"):
		return "device", strings.TrimPrefix(spec, "device:"), nil
	case spec == "nandsim":
		return "nandsim", "", nil
	}
	return "", "", fmt.Errorf("unknown target %q: use image (the default), simcard:PROFILE (e.g. simcard:sd-typical; fsbench simcard profiles lists them), device:/dev/X with --destroy /dev/X, vm, or nandsim (raw NAND, suite free-electrons)", spec)
}

func newRun(opt Options) *results.Run {
	cfgJSON, _ := json.Marshal(opt.Config)
	r := &results.Run{
		Schema:  results.Schema,
		Tool:    results.Tool{Name: "fsbench", Version: opt.Version, GoVersion: runtime.Version()},
		Status:  results.RunRunning,
		Started: time.Now(),
		Machine: machine(),
		Tools:   map[string]string{},
		Config:  cfgJSON,
		Methods: map[string]string{
			"mount_mem": measure.KernelMemoryMethod,
			"cpu":       "user_s and sys_s: getrusage of fsbench and of the programs it waited for (mkfs, modprobe) over the measured span; kernel threads (writeback, compression workers, the loop worker) are not included",
			"device":    "device: change of /sys/block/<dev>/stat over the measured span (sectors are 512 bytes)",
			"cold":      "before mount, read and video_read: sync and echo 3 > /proc/sys/vm/drop_caches; read and video_read also unmount and mount first",
			"freshness": "each repetition discards the whole device (BLKDISCARD) and makes a new filesystem",
			"copy":      "write, read_remove_write and video_write move every byte through read(2) and write(2) with a 128 KiB buffer (1 MiB for video): no copy_file_range, which on xfs and btrfs makes a reflink instead of writing",
		},
		Variants:     []results.Variant{},
		Measurements: []results.Measurement{},
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

// staged is the dataset in RAM.
type staged struct {
	tree, video string
	stats       dataset.Stats
	desc        results.Dataset
}

// Scaling of the generated data to the device: the 5 copies of the tree fill ~42 % of it and
// the 5 video copies (written after the tree is removed) ~62 %, leaving room for journals,
// metadata and the reserves of copy-on-write filesystems. A well-filled device is the harder
// and more realistic case for flash (less free space for the FTL and the filesystem's cleaner).
const (
	datasetShare = 12 // device size / datasetShare = dataset size
	videoShare   = 8  // device size / videoShare = video size
	copies       = 5
)

func stageDataset(ctx context.Context, cfg plan.Config, work string, ledger *target.Ledger, cleanups *[]func() error, logf func(string, ...any)) (*staged, error) {
	dsSize := cfg.DatasetSize
	if dsSize == 0 {
		dsSize = max(cfg.Size/datasetShare, 1<<20)
	}
	videoSize := cfg.VideoSize
	if videoSize == 0 {
		videoSize = max(cfg.Size/videoShare, 1<<20)
	}
	var userStats dataset.Stats
	if cfg.Dataset != "" {
		st, err := dataset.Describe(ctx, cfg.Dataset)
		if err != nil {
			return nil, fmt.Errorf("reading the dataset %s: %w", cfg.Dataset, err)
		}
		userStats = st
		dsSize = st.Bytes
		if uint64(copies)*st.Bytes > cfg.Size*6/10 {
			logf("warning: %d copies of %s (%s) fill more than 60 %% of the %s device: the write test may fail with ENOSPC; use a larger --size", copies, cfg.Dataset, plan.FormatSize(st.Bytes), plan.FormatSize(cfg.Size))
		}
	}
	// tmpfs accounting: file data rounds up to pages; directories and inodes cost a little.
	need := dsSize + dsSize/8 + videoSize + 32<<20
	mi, err := measure.ReadMeminfo()
	if err != nil {
		return nil, err
	}
	if avail := mi["MemAvailable"]; need > avail/2 {
		return nil, fmt.Errorf("the dataset and video need %s of RAM (tmpfs) but only %s is available: use a smaller --dataset-size/--video-size or --size", plan.FormatSize(need), plan.FormatSize(avail))
	}
	src := filepath.Join(work, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return nil, err
	}
	if err := ledger.AddMountpoint(src); err != nil {
		return nil, err
	}
	if err := fs.MountTmpfs(src, need); err != nil {
		return nil, err
	}
	*cleanups = append(*cleanups, func() error { return fs.UnmountTmpfs(src) })

	s := &staged{tree: filepath.Join(src, "rootfs"), video: filepath.Join(src, "video.bin")}
	start := time.Now()
	if cfg.Dataset != "" {
		if _, err := dataset.CopyTree(ctx, cfg.Dataset, s.tree, dataset.CopyOptions{}); err != nil {
			return nil, fmt.Errorf("copying the dataset into RAM: %w", err)
		}
		s.stats = userStats
		s.desc = results.Dataset{Kind: "directory", Path: cfg.Dataset}
	} else {
		if err := os.Mkdir(s.tree, 0o755); err != nil {
			return nil, err
		}
		st, err := dataset.Generate(ctx, s.tree, dataset.Spec{Seed: cfg.Seed, TargetBytes: dsSize})
		if err != nil {
			return nil, fmt.Errorf("generating the dataset: %w", err)
		}
		s.stats = st
		s.desc = results.Dataset{Kind: "generated", Seed: cfg.Seed}
	}
	if err := dataset.WriteVideo(ctx, s.video, videoSize, cfg.Seed); err != nil {
		return nil, fmt.Errorf("generating the video file: %w", err)
	}
	st := s.stats
	s.desc.Files, s.desc.Dirs, s.desc.Symlinks, s.desc.Bytes = st.Files, st.Dirs, st.Symlinks, st.Bytes
	s.desc.LargestFile, s.desc.MedianFile = st.LargestFile, st.MedianFile
	s.desc.Compressibility, s.desc.SampledBytes = st.Compressibility, st.SampledBytes
	s.desc.Copies, s.desc.VideoBytes, s.desc.VideoCopies = copies, videoSize, copies
	logf("dataset: %d files, %d dirs, %d symlinks, %s (compresses to %.0f %%), video %s; staged in RAM in %.1f s",
		st.Files, st.Dirs, st.Symlinks, plan.FormatSize(st.Bytes), 100*st.Compressibility, plan.FormatSize(videoSize), time.Since(start).Seconds())
	return s, nil
}
