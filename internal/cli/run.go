package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/advise"
	"github.com/fsbench/fsbench/internal/aging"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/presets"
	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/runner"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/targets/boards"
)

type runFlags struct {
	// opt is the run's options: the flags of the request's own settings (where, into which
	// directory, the boards' SSH and labgrid settings, ...) are read straight into it.
	opt runner.Options
	// over are the configuration and target flags as typed: plan.Resolve reads them into
	// opt.Request.
	over plan.Overrides
	// targets are --target's values (several: a farm of boards).
	targets []string
	// request is a run request another fsbench wrote (--request).
	request string
	board   boardFlags
	// stopOnEOF and stdinSilence are a board's watchdog (--stop-on-stdin-eof,
	// --stop-on-stdin-silence).
	stopOnEOF    bool
	stdinSilence time.Duration
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
	fl.StringVarP(&f.over.ConfigFile, "config", "c", "", "TOML file defining variants, tests, sizes (see docs/configuration.md)")
	fl.StringVar(&f.over.Preset, "preset", "", "a ready-made matrix shipped with fsbench: "+strings.Join(presets.Names(), ", ")+" (fsbench list shows them)")
	fl.StringVar(&f.over.Size, "size", "", "image size, e.g. 512M, 1G (default 1G)")
	fl.IntVarP(&f.over.Repetitions, "repetitions", "n", 0, "repetitions per variant (default 5)")
	fl.BoolVar(&f.over.Warmup, "warmup", false, "run one extra first repetition and discard it")
	fl.StringVar(&f.over.Variants, "variants", "", `comma-separated variant names to run (default: all); a name holding a comma is written with it escaped (ext4/noatime\,dirsync) or in double quotes`)
	fl.StringVar(&f.over.Tests, "tests", "", "comma-separated tests to record (default: the whole suite)")
	fl.IntVar(&f.over.Cuts, "cuts", 0, "suite powercut: power cuts per variant and repetition (default 50)")
	fl.StringVar(&f.over.Workload, "workload", "", "suite endurance: the day of writes repeated until the card fails: bootlin (the default run's write tests), logging or update")
	fl.StringVar(&f.over.Fault, "fault", "", "suite powercut: add a fault to the card's power-loss model: merge-loss (a cut during an AU merge damages that AU)")
	fl.StringVar(&f.over.Suite, "suite", "", "test suite (default bootlin)")
	fl.StringVar(&f.over.Scheduler, "scheduler", "", "I/O scheduler to set on the device for the run (none, mq-deadline, bfq, kyber: those the kernel offers); restored afterwards")
	fl.StringVar(&f.over.Dataset, "dataset", "", "use this directory tree as the dataset (your real rootfs is the best test)")
	fl.StringVar(&f.over.DatasetSize, "dataset-size", "", "size of the generated dataset (default: size/12)")
	fl.StringVar(&f.over.VideoSize, "video-size", "", "size of the incompressible video file (default: size/8)")
	fl.Uint64Var(&f.over.Seed, "seed", 0, "seed of the generated dataset (default 1)")
	fl.StringVar(&f.over.Timeout, "timeout", "", "time limit of each test, e.g. 10m (default 10m)")
	fl.StringVar(&f.over.ResultsDir, "results", "", "directory under which a timestamped results directory is made (default ./fsbench-results)")
	fl.StringVarP(&f.opt.Out, "out", "o", "", "exact results directory (default <results>/<timestamp>)")
	fl.StringVar(&f.opt.Image, "image", "", "image file to create (default: inside the results directory, deleted after the run)")
	fl.BoolVar(&f.opt.KeepImage, "keep-image", false, "keep the image file after the run")
	fl.BoolVar(&f.opt.NoDirectIO, "no-direct-io", false, "attach the loop device without direct I/O (host page cache in the path)")
	fl.StringVar(&f.over.UntilStable, "until-stable", "", "repeat each variant until the median of every timed test is known within ±this (e.g. 3%), from 6 repetitions")
	fl.Lookup("until-stable").NoOptDefVal = "3%"
	fl.IntVar(&f.over.MaxRepetitions, "max-repetitions", 15, "with --until-stable: the most repetitions per variant")
	fl.StringVar(&f.over.Card, "card", "", "card profile to rate flash wear on: a built-in name or your own profile file (e.g. from fsbench simcard profiles --show); default: the simulated card's, else sd-typical")
	fl.BoolVar(&f.over.KeepTraces, "keep-traces", false, "write each test's block-request trace to <results>/traces/ (a summary is always in results.json)")
	fl.StringVar(&f.opt.Destroy, "destroy", "", "with --target device:/dev/X: name the same device again, to confirm that everything on it is destroyed")
	fl.BoolVar(&f.opt.NoCapacityCheck, "no-capacity-check", false, "do not check, before a device or board run, that the card holds what it announces (results.json records the skip)")
	fl.StringVar(&f.over.Tuned, "tuned", "", "add the variants fsbench advise derives from this probe.json (or probe directory), to measure whether the advice pays")
	fl.StringArrayVar(&f.targets, "target", nil, "where the device comes from: "+strings.Join(plan.TargetUsages(), ", ")+"; several boards (labgrid:a,labgrid:b, or --target repeated) run side by side and are merged into one report")
	fl.StringVar(&f.opt.Kernel, "kernel", "", "with --target vm: the guest kernel image (default: the newest /boot/vmlinuz-* with its modules)")
	fl.StringVar(&f.over.NANDSizes, "nand-sizes", "", "suite free-electrons: the NAND partition sizes, each its own variant (default 8M,32M,128M,252M, the 2010 study's)")
	fl.BoolVar(&f.over.NANDNoDelays, "nand-no-delays", false, "suite free-electrons: no simulated chip timings (nandsim do_delays=0): only the kernel's and CPU's work is timed")
	fl.Float64Var(&f.opt.TimeScale, "time-scale", 1, "simcard target: multiply the card's modelled waits by this (e.g. 0.1 for a quick run; recorded in the results)")
	fl.Float64Var(&f.opt.EnduranceScale, "endurance-scale", 1, "simcard target: multiply the endurance of every block of the card by this (e.g. 0.005: the card wears out 200 times sooner, for --suite endurance; recorded in the results)")
	fl.StringVar(&f.over.CardState, "card-state", plan.CardFresh, "the card's state at each repetition's mkfs: fresh (the whole device discarded) or used (every block written once and nothing discarded: mkfs is told not to discard; a card in use, whose FTL holds every block as data)")
	fl.StringVar(&f.over.Order, "order", "", "order of repetitions: interleaved (the default: repetition 1 of every variant in a shuffled order, then 2, ...) or grouped (every repetition of a variant, then the next)")
	fl.BoolVar(&f.opt.Force, "force", false, "reuse a results directory (-o) that holds an earlier run: its results are replaced; nothing else in it is deleted")
	fl.StringVar(&f.request, "request", "", "carry out a run request written by another fsbench (what a QEMU guest or a board runs)")
	fl.BoolVar(&f.stopOnEOF, "stop-on-stdin-eof", false, "stop the run in order when standard input ends (a board's run, when the host's SSH connection goes away)")
	_ = fl.MarkHidden("request")
	fl.DurationVar(&f.stdinSilence, "stop-on-stdin-silence", 0, "with --stop-on-stdin-eof: stop the run in order when nothing has come on standard input for this long (the host feeds it)")
	_ = fl.MarkHidden("stop-on-stdin-eof")
	_ = fl.MarkHidden("stop-on-stdin-silence")
	fl.DurationVar(&f.opt.LinkTimeout, "link-timeout", boards.DefaultLinkTimeout, "for a board (ssh://..., labgrid:...): how long the board's run goes on without hearing from this host before it stops in order and cleans up (this host writes to it every quarter of that)")
	fl.BoolVar(&f.opt.PowerCycle, "power-cycle", false, "for a labgrid place: power-cycle its board (labgrid-client power cycle) before each variant and wait for its SSH server: every variant starts from a cold board")
	fl.StringVar(&f.over.Age, "age", "", "also run every variant aged: before each repetition's tests, age the filesystem by a seeded churn: [PROFILE:]FULLNESS%[:CHURNx] (profiles: "+strings.Join(aging.Profiles, ", ")+"; e.g. 80% or updates:80%:1x) or a preset ("+strings.Join(aging.PresetNames(), ", ")+"); see docs/aging.md")
	fl.DurationVar(&f.opt.BootTimeout, "boot-timeout", 0, "with --power-cycle or --suite powercut on a board: how long the board's SSH server may take to answer after its power comes on (default 5m)")
	fl.StringVar(&f.opt.PowerOff, "power-off", "", "for an ssh:// board with --suite powercut: the command (run here with sh -c) that switches the board's power off: a USB relay, a PDU, a lab script")
	fl.StringVar(&f.opt.PowerOn, "power-on", "", "for an ssh:// board with --suite powercut: the command (run here with sh -c) that switches the board's power on")
	f.board.register(fl, &f.opt.Request)
	return cmd
}

func planOptions() plan.Options {
	return plan.Options{KnownFS: fs.Names(), KnownTests: suites.TestNames(), KnownSuites: suites.Names(),
		CheckMkfs: fs.CheckMkfs, CheckMount: fs.CheckMount}
}

// resolvers are what plan.Resolve needs from the packages above plan.
var resolvers = plan.Resolvers{
	Preset: presets.Load,
	Tuned:  advise.TunedFromFile,
	CheckTests: func(s plan.Suites, tests []string) error {
		_, err := suite.Select(s, tests)
		return err
	},
}

// resolveRequest reads run's flags into the run's options: the request's own settings are
// already in f.opt (the flags were read into it); plan.Resolve adds the configuration and the
// target from the flags as typed. What it did that a person should know (variants --tuned
// added) goes to notes, when set.
func resolveRequest(cmd *cobra.Command, f runFlags, target string, notes func(string, ...any)) (runner.Options, error) {
	opt := f.opt
	over := f.over
	over.Target, over.Given, over.Note = target, cmd.Flags().Changed, notes
	if err := plan.Resolve(&opt.Request, over, planOptions(), resolvers); err != nil {
		var ie *plan.InputError
		if errors.As(err, &ie) {
			return opt, UsageError{err}
		}
		return opt, err
	}
	opt.SSHOptions = f.board.sshArgs()
	return opt, nil
}

func runRun(ctx context.Context, cmd *cobra.Command, f runFlags, stdio IO) error {
	ui := newProgressUI(stdio)
	defer ui.finish()
	targets := splitTargets(f.targets)
	if len(targets) > 1 && f.request == "" {
		return runFarm(ctx, cmd, f, targets, stdio, ui)
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
	if f.request == "" {
		target := ""
		if ts := splitTargets(f.targets); len(ts) == 1 {
			target = ts[0]
		}
		return resolveRequest(cmd, f, target, notes)
	}
	req, err := plan.LoadRequest(f.request, planOptions())
	if err != nil {
		return runner.Options{}, UsageError{err}
	}
	var opt runner.Options
	opt.Request = req
	return opt, nil
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
