package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/advise"
	"github.com/fsbench/fsbench/internal/aging"
	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/presets"
	"github.com/fsbench/fsbench/internal/probe"
	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/runner"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/targets/boards"
)

type runFlags struct {
	config, preset, size, variants, tests, suite, scheduler, dataset, datasetSize, videoSize string
	timeout, results, out, image, target, destroy, tuned, card, kernel, untilStable          string
	targets                                                                                  []string
	nandSizes, request, order, cardState                                                     string
	nandNoDelays, force, stopOnEOF, powerCycle, noCapacityCheck                              bool
	board                                                                                    boardFlags
	notes                                                                                    func(string, ...any)
	timeScale                                                                                float64
	repetitions, maxReps                                                                     int
	cuts                                                                                     int
	fault                                                                                    string
	seed                                                                                     uint64
	warmup, keepImage, noDirectIO, keepTraces                                                bool
	age                                                                                      string
	// stdinSilence is a board's watchdog (--stop-on-stdin-silence), linkTimeout the host's
	// (--link-timeout) for the boards it runs on.
	stdinSilence, linkTimeout time.Duration
}

func newRunCmd(stdio IO) *cobra.Command {
	return newRunCmdWith(stdio, runRun)
}

// newRunCmdWith builds the run command around do, so that tests can check flag handling
// without running anything.
func newRunCmdWith(stdio IO, do func(context.Context, *cobra.Command, runFlags, IO) error) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Make each filesystem variant and run the test suite on it",
		Long: `Without arguments, run creates a sparse 1 GiB image file, attaches it as a loop device with
direct I/O and runs the bootlin suite over every default variant this machine supports:
ext4, ext4-nojournal, ext2, ext3, xfs, btrfs, f2fs, nilfs2, vfat, squashfs-lzo, erofs-lz4hc.`,
		Example: `  fsbench run
  fsbench run --size 512M -n 5 --warmup
  fsbench run -c matrix.toml --variants ext4,xfs --tests mkfs,mount,write,read`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return do(cmd.Context(), cmd, f, stdio)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "TOML file defining variants, tests, sizes (see docs/configuration.md)")
	fl.StringVar(&f.preset, "preset", "", "a ready-made matrix shipped with fsbench: "+strings.Join(presets.Names(), ", ")+" (fsbench list shows them)")
	fl.StringVar(&f.size, "size", "", "image size, e.g. 512M, 1G (default 1G)")
	fl.IntVarP(&f.repetitions, "repetitions", "n", 0, "repetitions per variant (default 5)")
	fl.BoolVar(&f.warmup, "warmup", false, "run one extra first repetition and discard it")
	fl.StringVar(&f.variants, "variants", "", `comma-separated variant names to run (default: all); a name holding a comma is written with it escaped (ext4/noatime\,dirsync) or in double quotes`)
	fl.StringVar(&f.tests, "tests", "", "comma-separated tests to record (default: the whole suite)")
	fl.IntVar(&f.cuts, "cuts", 0, "suite powercut: power cuts per variant and repetition (default 50)")
	fl.StringVar(&f.fault, "fault", "", "suite powercut: add a fault to the card's power-loss model: merge-loss (a cut during an AU merge damages that AU)")
	fl.StringVar(&f.suite, "suite", "", "test suite (default bootlin)")
	fl.StringVar(&f.scheduler, "scheduler", "", "I/O scheduler to set on the device for the run (none, mq-deadline, bfq, kyber: those the kernel offers); restored afterwards")
	fl.StringVar(&f.dataset, "dataset", "", "use this directory tree as the dataset (your real rootfs is the best test)")
	fl.StringVar(&f.datasetSize, "dataset-size", "", "size of the generated dataset (default: size/12)")
	fl.StringVar(&f.videoSize, "video-size", "", "size of the incompressible video file (default: size/8)")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of the generated dataset (default 1)")
	fl.StringVar(&f.timeout, "timeout", "", "time limit of each test, e.g. 10m (default 10m)")
	fl.StringVar(&f.results, "results", "", "directory under which a timestamped results directory is made (default ./fsbench-results)")
	fl.StringVarP(&f.out, "out", "o", "", "exact results directory (default <results>/<timestamp>)")
	fl.StringVar(&f.image, "image", "", "image file to create (default: inside the results directory, deleted after the run)")
	fl.BoolVar(&f.keepImage, "keep-image", false, "keep the image file after the run")
	fl.BoolVar(&f.noDirectIO, "no-direct-io", false, "attach the loop device without direct I/O (host page cache in the path)")
	fl.StringVar(&f.untilStable, "until-stable", "", "repeat each variant until the median of every timed test is known within ±this (e.g. 3%), from 6 repetitions")
	fl.Lookup("until-stable").NoOptDefVal = "3%"
	fl.IntVar(&f.maxReps, "max-repetitions", 15, "with --until-stable: the most repetitions per variant")
	fl.StringVar(&f.card, "card", "", "card profile to rate flash wear on: a built-in name or your own profile file (e.g. from fsbench simcard profiles --show); default: the simulated card's, else sd-typical")
	fl.BoolVar(&f.keepTraces, "keep-traces", false, "write each test's block-request trace to <results>/traces/ (a summary is always in results.json)")
	fl.StringVar(&f.destroy, "destroy", "", "with --target device:/dev/X: name the same device again, to confirm that everything on it is destroyed")
	fl.BoolVar(&f.noCapacityCheck, "no-capacity-check", false, "do not check, before a device or board run, that the card holds what it announces (results.json records the skip)")
	fl.StringVar(&f.tuned, "tuned", "", "add the variants fsbench advise derives from this probe.json (or probe directory), to measure whether the advice pays")
	fl.StringArrayVar(&f.targets, "target", nil, "where the device comes from: image (the default), simcard:PROFILE (a simulated card; see fsbench simcard profiles), device:/dev/X (with --destroy), vm (a guest kernel under QEMU, for filesystems this kernel lacks; vm:simcard:PROFILE puts its SD card on a simulated card), nandsim (a simulated raw NAND chip, suite free-electrons), ssh://[user@]host[:port][/dev/X] (a board), or labgrid:PLACE[/dev/X] (a board of a labgrid farm); several boards (labgrid:a,labgrid:b, or --target repeated) run side by side and are merged into one report")
	fl.StringVar(&f.kernel, "kernel", "", "with --target vm: the guest kernel image (default: the newest /boot/vmlinuz-* with its modules)")
	fl.StringVar(&f.nandSizes, "nand-sizes", "", "suite free-electrons: the NAND partition sizes, each its own variant (default 8M,32M,128M,252M, the 2010 study's)")
	fl.BoolVar(&f.nandNoDelays, "nand-no-delays", false, "suite free-electrons: no simulated chip timings (nandsim do_delays=0): only the kernel's and CPU's work is timed")
	fl.Float64Var(&f.timeScale, "time-scale", 1, "simcard target: multiply the card's modelled waits by this (e.g. 0.1 for a quick run; recorded in the results)")
	fl.StringVar(&f.cardState, "card-state", plan.CardFresh, "the card's state at each repetition's mkfs: fresh (the whole device discarded) or used (every block written once and nothing discarded: mkfs is told not to discard; a card in use, whose FTL holds every block as data)")
	fl.StringVar(&f.order, "order", "", "order of repetitions: interleaved (the default: repetition 1 of every variant in a shuffled order, then 2, ...) or grouped (every repetition of a variant, then the next)")
	fl.BoolVar(&f.force, "force", false, "reuse a results directory (-o) that holds an earlier run: its results are replaced; nothing else in it is deleted")
	fl.StringVar(&f.request, "request", "", "carry out a run request written by another fsbench (what a QEMU guest or a board runs)")
	fl.BoolVar(&f.stopOnEOF, "stop-on-stdin-eof", false, "stop the run in order when standard input ends (a board's run, when the host's SSH connection goes away)")
	_ = fl.MarkHidden("request")
	fl.DurationVar(&f.stdinSilence, "stop-on-stdin-silence", 0, "with --stop-on-stdin-eof: stop the run in order when nothing has come on standard input for this long (the host feeds it)")
	_ = fl.MarkHidden("stop-on-stdin-eof")
	_ = fl.MarkHidden("stop-on-stdin-silence")
	fl.DurationVar(&f.linkTimeout, "link-timeout", boards.DefaultLinkTimeout, "for a board (ssh://..., labgrid:...): how long the board's run goes on without hearing from this host before it stops in order and cleans up (this host writes to it every quarter of that)")
	fl.BoolVar(&f.powerCycle, "power-cycle", false, "for a labgrid place: power-cycle its board (labgrid-client power cycle) before each variant and wait for its SSH server: every variant starts from a cold board")
	fl.StringVar(&f.age, "age", "", "also run every variant aged: before each repetition's tests, age the filesystem by a seeded churn: [PROFILE:]FULLNESS%[:CHURNx] (profiles: "+strings.Join(aging.Profiles, ", ")+"; e.g. 80% or updates:80%:1x) or a preset ("+strings.Join(aging.PresetNames(), ", ")+"); see docs/aging.md")
	f.board.register(fl)
	return cmd
}

func planOptions() plan.Options {
	return plan.Options{KnownFS: fs.Names(), KnownTests: suite.TestNames(), KnownSuites: suite.SuiteNames(),
		CheckMkfs: fs.CheckMkfs, CheckMount: fs.CheckMount}
}

// resolveConfig applies defaults, the config file, then the flags that were given. What it did
// that a person should know (variants --tuned added) goes to f.notes, when set. The rules of
// what a config may hold live in plan (Validate, SetFault, ApplySuiteDefaults, SelectVariants);
// this reads the flags into it.
func resolveConfig(cmd *cobra.Command, f runFlags) (plan.Config, error) {
	note := func(format string, args ...any) {
		if f.notes != nil {
			f.notes(format, args...)
		}
	}
	opt := planOptions()
	cfg, err := baseConfig(f, opt)
	if err != nil {
		return cfg, err
	}
	fl := cmd.Flags()
	if err := applySizeFlags(&cfg, fl, f); err != nil {
		return cfg, err
	}
	if err := applyRunFlags(&cfg, fl, f); err != nil {
		return cfg, err
	}
	tuned, err := addTunedVariants(&cfg, f.tuned, note)
	if err != nil {
		return cfg, err
	}
	if fl.Changed("variants") {
		if err := selectVariants(&cfg, f.variants, tuned, note); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Validate(opt); err != nil {
		return cfg, UsageError{err}
	}
	// The tests must belong to the chosen suites (Validate knows only all test names).
	if _, err := suite.Select(cfg.Suite, cfg.Tests); err != nil {
		return cfg, UsageError{err}
	}
	return cfg, nil
}

// baseConfig is what the flags start from: the config file (-c), a preset, or the defaults.
func baseConfig(f runFlags, opt plan.Options) (plan.Config, error) {
	cfg := plan.Default()
	switch {
	case f.config != "" && f.preset != "":
		return cfg, usagef("use -c or --preset, not both (copy the preset to a file to change it: fsbench list --preset NAME)")
	case f.config != "":
		var err error
		if cfg, err = plan.Load(f.config, opt); err != nil {
			return cfg, UsageError{err}
		}
	case f.preset != "":
		name, data, err := presets.Load(f.preset)
		if err != nil {
			return cfg, UsageError{err}
		}
		if cfg, err = plan.Parse(name, data, opt); err != nil {
			return cfg, fmt.Errorf("preset %s: %w", f.preset, err) // a bug in fsbench, not the user's
		}
	}
	return cfg, nil
}

// applySizeFlags reads the image and dataset size flags that were given (--size,
// --dataset-size, --video-size) in plan's size grammar.
func applySizeFlags(cfg *plan.Config, fl *pflag.FlagSet, f runFlags) error {
	size := func(name, val string, dst *uint64) error {
		if !fl.Changed(name) {
			return nil
		}
		n, err := bytesize.Parse(val)
		if err != nil {
			return usagef("--%s: %v", name, err)
		}
		*dst = n
		return nil
	}
	if err := size("size", f.size, &cfg.Size); err != nil {
		return err
	}
	if err := size("dataset-size", f.datasetSize, &cfg.DatasetSize); err != nil {
		return err
	}
	if err := size("video-size", f.videoSize, &cfg.VideoSize); err != nil {
		return err
	}
	return nil
}

// applyRunFlags reads the other flags that were given over the config: repetitions, suite,
// power cuts, NAND sizes, tests, dataset, seed, timeout and results directory.
func applyRunFlags(cfg *plan.Config, fl *pflag.FlagSet, f runFlags) error {
	if fl.Changed("repetitions") {
		cfg.Repetitions = f.repetitions
	}
	if fl.Changed("warmup") {
		cfg.Warmup = f.warmup
	}
	if fl.Changed("suite") {
		cfg.Suite = plan.ParseSuites(f.suite)
	}
	if fl.Changed("cuts") {
		if f.cuts < 1 {
			return usagef("--cuts must be at least 1, not %d", f.cuts)
		}
		cfg.Params.PowerCut.Cuts = f.cuts
	}
	if err := cfg.SetFault(f.fault); err != nil {
		return usagef("--fault %v", err)
	}
	cfg.ApplySuiteDefaults()
	if fl.Changed("nand-sizes") {
		sizes, err := plan.ParseSizeList(splitList(f.nandSizes))
		if err != nil {
			return usagef("--nand-sizes: %v", err)
		}
		if len(sizes) == 0 {
			return usagef("--nand-sizes is empty: give sizes like 8M,32M, or leave the flag out for the study's 8M,32M,128M,252M")
		}
		cfg.NANDSizes = sizes
	}
	if fl.Changed("scheduler") {
		cfg.Scheduler = f.scheduler
	}
	if fl.Changed("tests") {
		cfg.Tests = splitList(f.tests)
	}
	if fl.Changed("dataset") {
		abs, err := filepath.Abs(f.dataset)
		if err != nil {
			return err
		}
		cfg.Dataset = abs
	}
	if fl.Changed("seed") {
		cfg.Seed = f.seed
	}
	if fl.Changed("timeout") {
		d, err := time.ParseDuration(f.timeout)
		if err != nil {
			return usagef("--timeout: %v (use a duration like 90s or 10m)", err)
		}
		cfg.Timeout = plan.Duration{Duration: d}
	}
	if fl.Changed("results") {
		cfg.ResultsDir = f.results
	}
	return nil
}

// addTunedVariants adds the variants advise derives from the probe result at path (--tuned;
// "" adds none) and returns their names.
func addTunedVariants(cfg *plan.Config, path string, note func(string, ...any)) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	pr, err := probe.Load(path)
	if err != nil {
		return nil, usagef("--tuned: %v (make one with fsbench probe DEVICE)", err)
	}
	g := advise.FromProbe(pr)
	var tuned []string
	for _, v := range advise.TunedVariants(g) {
		cfg.Variants = append(cfg.Variants, v)
		tuned = append(tuned, v.Name)
	}
	note("--tuned added %s (from %s)", strings.Join(tuned, ", "), path)
	// The tuned variants are only as good as the geometry: a run that says "tuned is no
	// better" from a wrong AU would discredit advice that was never measured.
	for _, c := range g.Cautions {
		note("--tuned: %s", c)
	}
	return tuned, nil
}

// selectVariants keeps the variants --variants names, and says which --tuned variants that
// leaves out (a person who gave both most likely meant to run them).
func selectVariants(cfg *plan.Config, list string, tuned []string, note func(string, ...any)) error {
	want, err := variantList(list, cfg.Variants)
	if err != nil {
		return UsageError{fmt.Errorf("--variants: %w", err)}
	}
	var dropped []string
	for _, n := range tuned {
		if !slices.Contains(want, n) {
			dropped = append(dropped, n)
		}
	}
	if len(dropped) > 0 {
		note("--variants leaves out the --tuned variants %s: name them in --variants to run them", strings.Join(dropped, ", "))
	}
	cfg.SelectVariants(want)
	return nil
}

// variantList reads --variants: names separated by commas. A name that holds a comma (the
// mount-options preset's "ext4/noatime,dirsync") is written with the comma escaped
// ("ext4/noatime\\,dirsync") or the name in double quotes; a value that is exactly one known name
// selects it as it is.
func variantList(s string, known []plan.Variant) ([]string, error) {
	names := make([]string, len(known))
	for i, v := range known {
		names[i] = v.Name
	}
	if slices.Contains(names, s) {
		return []string{s}, nil
	}
	var out []string
	var cur strings.Builder
	quoted := false
	flush := func() {
		if n := strings.TrimSpace(cur.String()); n != "" {
			out = append(out, n)
		}
		cur.Reset()
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			flush()
		default:
			cur.WriteByte(c)
		}
	}
	if quoted {
		return nil, errors.New("unterminated double quote")
	}
	flush()
	for _, n := range out {
		if !slices.Contains(names, n) {
			hint := ""
			if slices.ContainsFunc(names, func(x string) bool { return strings.Contains(x, ",") }) {
				hint = "; a name with a comma is written with the comma escaped (\\,) or in double quotes"
			}
			return nil, fmt.Errorf("no variant %q (known: %s)%s", n, strings.Join(names, ", "), hint)
		}
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func runRun(ctx context.Context, cmd *cobra.Command, f runFlags, stdio IO) error {
	ui := newProgressUI(stdio)
	defer ui.finish()
	targets := splitTargets(f.targets)
	if len(targets) > 1 && f.request == "" {
		return runFarm(ctx, cmd, f, targets, stdio, ui)
	}
	if len(targets) == 1 {
		f.target = targets[0]
	}
	opt, err := runOptions(cmd, f, ui.logf)
	if err != nil {
		return err
	}
	if f.stopOnEOF {
		ctx = stopOnEOF(ctx, stdio.In, f.stdinSilence)
	}
	opt.Version, opt.Log, opt.Progress, opt.Console = Version, ui.logf, ui.progress, stdio.Err
	card, err := cardName(opt.Config.Card)
	if err != nil {
		return err
	}
	out, err := runner.Run(ctx, opt)
	ui.finish()
	if f.request != "" {
		// Another fsbench asked for this run: it prints the summary and writes the report.
		return err
	}
	return finishRun(ctx, out, err, card, stdio)
}

// finishRun prints the summary of a finished run (or farm), writes its report and says where
// both are.
func finishRun(ctx context.Context, out *runner.Outcome, err error, card string, stdio IO) error {
	var se *runner.SaveError
	if out != nil && out.Run != nil && len(out.Run.Measurements) > 0 {
		fmt.Fprintln(stdio.Out)
		report.SummaryWith(stdio.Out, out.Run, report.SummaryOptions{Color: colorOut(stdio), Card: card})
	}
	if out != nil && !errors.As(err, &se) {
		fmt.Fprintf(stdio.Out, "\nresults: %s (results.json, results.csv)\n", out.Dir)
		measured := out.Run != nil && len(out.Run.Measurements) > 0
		// The report reads the saved results back: the run in memory can go first, so that
		// fsbench does not hold two copies of it at the end of the run.
		out.Run = nil
		if measured {
			// A report that cannot be written does not fail the run: the results are saved.
			if path, rerr := writeReport(out.Dir, "", card); rerr != nil {
				fmt.Fprintf(stdio.Err, "fsbench: writing the report: %v (fsbench report %s retries)\n", rerr, out.Dir)
			} else {
				fmt.Fprintf(stdio.Out, "report:  %s\n", path)
			}
		}
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		fmt.Fprintln(stdio.Err, "fsbench:", interruptedMessage(ctx))
	}
	return err
}

// runOptions turns the flags (or a run request another fsbench wrote) into the runner's
// options, refusing bad values before anything runs.
func runOptions(cmd *cobra.Command, f runFlags, notes func(string, ...any)) (runner.Options, error) {
	if f.request != "" {
		req, err := plan.LoadRequest(f.request, planOptions())
		if err != nil {
			return runner.Options{}, UsageError{err}
		}
		return runner.Options{Config: req.Config, Target: req.Target, Destroy: req.Destroy, OutDir: req.Out, Force: req.Force,
			WorkRoot: req.Work, TimeScale: req.TimeScale, DirectIO: true, NoCapacityCheck: req.NoCapacityCheck}, nil
	}
	f.notes = notes
	cfg, err := resolveConfig(cmd, f)
	if err != nil {
		return runner.Options{}, err
	}
	spec, err := plan.ParseTarget(f.target)
	if err != nil {
		return runner.Options{}, UsageError{fmt.Errorf("--target: %w", err)}
	}
	if f.untilStable != "" {
		v := strings.TrimSuffix(f.untilStable, "%")
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return runner.Options{}, usagef("--until-stable: want a percentage like 3%%, got %q", f.untilStable)
		}
		if strings.HasSuffix(f.untilStable, "%") || x >= 1 {
			x /= 100
		}
		cfg.UntilStable, cfg.MaxRepetitions = x, f.maxReps
	}
	if !(f.timeScale > 0) || math.IsInf(f.timeScale, 0) {
		return runner.Options{}, usagef("--time-scale must be a positive number (1 = real time, 0.1 ten times faster), not %g", f.timeScale)
	}
	cfg.KeepTraces, cfg.Card, cfg.NANDNoDelays = f.keepTraces, f.card, f.nandNoDelays
	if f.age != "" {
		if _, err := aging.Parse(f.age); err != nil {
			return runner.Options{}, UsageError{err}
		}
		cfg.Age = f.age
	}
	if !slices.Contains(plan.CardStates, f.cardState) {
		return runner.Options{}, usagef("--card-state %q: use fresh or used", f.cardState)
	}
	if f.cardState == plan.CardUsed { // fresh is the default: results files leave it out
		cfg.CardState = f.cardState
	}
	if cmd.Flags().Changed("order") {
		cfg.Order = f.order
	}
	return runner.Options{Config: cfg, Target: spec, Destroy: f.destroy, OutDir: f.out, Force: f.force, Image: f.image,
		KeepImage: f.keepImage, DirectIO: !f.noDirectIO, TimeScale: f.timeScale, Kernel: f.kernel,
		SSHOptions: f.board.sshArgs(), RemoteBinary: f.board.remoteBinary, RemoteDir: f.board.remoteDir,
		LabgridCoordinator: f.board.labgridCoordinator, PowerCycle: f.powerCycle, NoCapacityCheck: f.noCapacityCheck,
		LinkTimeout: f.linkTimeout}, nil
}

// progressUI shows a live status line on a terminal and plain log lines otherwise.
type progressUI struct {
	mu     sync.Mutex
	stdio  IO
	status string
}

func newProgressUI(stdio IO) *progressUI { return &progressUI{stdio: stdio} }

func (u *progressUI) logf(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	if u.stdio.ErrIsTerminal {
		fmt.Fprintf(u.stdio.Err, "\r\033[K%s\n%s", line, u.status)
		return
	}
	fmt.Fprintf(u.stdio.Err, "%s fsbench: %s\n", time.Now().Format("15:04:05"), line)
}

func (u *progressUI) progress(p runner.Progress) {
	if !u.stdio.ErrIsTerminal {
		return // the per-test log lines already say where the run is
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	rep := fmt.Sprintf("rep %d/%d", p.Rep, p.Reps)
	if p.Rep == 0 {
		rep = "warm-up"
	}
	eta := "ETA unknown"
	if p.ETA > 0 {
		eta = "ETA " + p.ETA.Round(time.Second).String()
	}
	u.status = fmt.Sprintf("[%d/%d] %s %s: %s… %s", p.Done+1, p.Total, p.Variant, rep, p.Test, eta)
	fmt.Fprintf(u.stdio.Err, "\r\033[K%s", u.status)
}

func (u *progressUI) finish() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.stdio.ErrIsTerminal && u.status != "" {
		fmt.Fprint(u.stdio.Err, "\r\033[K")
		u.status = ""
	}
}
