package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/runner"
	"github.com/fsbench/fsbench/internal/target"
	"github.com/fsbench/fsbench/internal/vm"
)

// guestCard is the emulated SD card as the guest kernel names it.
const guestCard = "/dev/mmcblk0"

// Flags that describe the host's side of a run and are not passed to the guest, which always
// runs on its emulated SD card and writes into the shared results directory.
var hostOnlyFlags = map[string]bool{
	"target": true, "destroy": true, "out": true, "results": true, "image": true,
	"keep-image": true, "no-direct-io": true, "time-scale": true, "size": true, "kernel": true,
}

// File-valued flags: the guest sees only the results directory, so the files are copied there.
var fileFlags = map[string]bool{"config": true, "tuned": true, "card": true}

// runVM carries out `fsbench run --target vm`: the same fsbench binary runs the suite inside a
// guest kernel (QEMU) on an emulated SD card backed by an image file, and its results land in
// the host's results directory.
func runVM(ctx context.Context, cmd *cobra.Command, cfg plan.Config, f runFlags, stdio IO) error {
	if os.Geteuid() != 0 {
		return errors.New("fsbench run --target vm needs root (it reads /boot/vmlinuz-* and builds the guest from the host's tools); run it with sudo")
	}
	if cfg.Dataset != "" {
		return usagef("--dataset is not available with --target vm yet: the guest sees only the results directory; copy your tree there and run fsbench in the guest yourself, or use the generated dataset")
	}
	dir := f.out
	if dir == "" {
		dir = filepath.Join(cfg.ResultsDir, time.Now().Format("20060102-150405"))
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	inputs := filepath.Join(dir, ".vm")
	if err := os.MkdirAll(inputs, 0o755); err != nil {
		return fmt.Errorf("creating the results directory: %w", err)
	}
	defer os.RemoveAll(inputs)
	profile, err := vmCardProfile(f.target)
	if err != nil {
		return UsageError{err}
	}
	flash := cfg.Suite == plan.FlashSuite
	if flash && profile != "" {
		return usagef("--target %s: the free-electrons suite runs on the guest's simulated NAND, not on its SD card; use --target vm", f.target)
	}
	guestTarget := "device:" + guestCard
	if flash {
		guestTarget = "nandsim"
	}
	args, err := guestArgs(cmd.Flags(), guestTarget, dir, inputs)
	if err != nil {
		return UsageError{err}
	}
	// The raw-flash suite does not use the SD card, but the guest always has one: a small one.
	cardSize := cfg.Size
	if flash {
		cardSize = 64 << 20
	}
	img := filepath.Join(inputs, "card.img")
	var card *guestSimcard
	if profile != "" {
		if err := vm.CheckCardSize(cardSize); err != nil {
			return UsageError{fmt.Errorf("--size: %w", err)}
		}
		if card, err = startGuestCard(ctx, profile, cardSize, inputs, f.timeScale); err != nil {
			return err
		}
		defer card.stop(stdio)
		img = card.sc.CardPath()
	} else if err := vm.CreateImage(img, cardSize); err != nil {
		return UsageError{fmt.Errorf("--size: %w", err)}
	}
	what := fmt.Sprintf("a %s SD card", plan.FormatSize(cardSize))
	switch {
	case flash:
		what = "nandsim (simulated raw NAND)"
	case card != nil:
		what = fmt.Sprintf("a %s SD card backed by the simulated card %s (modelled waits × %g)", plan.FormatSize(cardSize), profile, f.timeScale)
	}
	fmt.Fprintf(stdio.Err, "fsbench: booting a guest kernel under QEMU with %s; the guest runs: fsbench %v\n", what, args)
	res, runErr := vm.Run(ctx, vm.Options{Kernel: f.kernel, Image: img, Args: args, OutDir: dir, Console: stdio.Err,
		Timeout: vmTimeout(cfg), MemoryMiB: vmMemoryMiB(cfg)})
	r, lerr := results.Load(dir)
	if lerr != nil {
		if runErr != nil {
			return fmt.Errorf("the guest run failed (console: %s): %w", res.ConsoleLog, runErr)
		}
		return lerr
	}
	if runErr != nil && r.Status == results.RunRunning {
		// The guest was killed (timeout, Ctrl-C) or crashed mid-run: its completed cells are
		// kept, and the run says why it stopped instead of looking still in progress.
		r.Status, r.Error, r.Finished = results.RunFailed, runErr.Error(), time.Now()
		if ctx.Err() != nil {
			r.Status = results.RunInterrupted
		}
	}
	if card != nil {
		// The card saw every request of the guest's run: its final state (and wear histogram)
		// is the run's. Per-test flash figures come from the guest's traces, replayed.
		if c, err := card.sc.Stats(); err == nil {
			r.Card = &c
		} else {
			fmt.Fprintf(stdio.Err, "fsbench: reading the simulated card's counters: %v\n", err)
		}
		r.Target.Profile, r.Target.TimeScale = profile, f.timeScale
		r.Target.Kind = "simcard (guest /dev/mmcblk0)"
		if r.Methods == nil {
			r.Methods = map[string]string{}
		}
		r.Methods["vm_simcard"] = vmSimcardMethod
	}
	// Tag the results with how the guest ran; its kernel is already in machine.kernel.
	r.Guest = &results.Guest{Kernel: res.Kernel, KernelRelease: res.KernelRelease, Accel: res.Accel, AccelNote: res.AccelNote,
		QEMU: res.QEMUVersion, BootSeconds: res.BootSeconds, ConsoleLog: relLink(filepath.Join(dir, "results.json"), res.ConsoleLog)}
	if err := results.Save(dir, r); err != nil {
		return err
	}
	fmt.Fprintln(stdio.Out)
	report.SummaryWith(stdio.Out, r, report.SummaryOptions{Color: colorOut(stdio)})
	fmt.Fprintf(stdio.Out, "\nresults: %s (results.json, results.csv; guest kernel %s, %s, console.log)\n", dir, res.KernelRelease, res.Accel)
	if path, err := writeReport(dir, "", ""); err == nil {
		fmt.Fprintf(stdio.Out, "report:  %s\n", path)
	}
	return runErr
}

// guestArgs is the fsbench command line the guest runs: the suite on its SD card, results into
// the shared directory dir, with the flags the user gave except those about the host's side;
// files the flags name are copied into inputs (under dir, so the guest sees them).
func guestArgs(flags *pflag.FlagSet, guestTarget, dir, inputs string) ([]string, error) {
	args := []string{"run", "--target", guestTarget, "-o", dir}
	if guestTarget == "device:"+guestCard {
		args = append(args, "--destroy", guestCard)
	}
	var ferr error
	flags.Visit(func(fl *pflag.Flag) {
		switch {
		case hostOnlyFlags[fl.Name]:
		case fileFlags[fl.Name] && !(fl.Name == "card" && !isPath(fl.Value.String())):
			p, err := copyInput(fl.Value.String(), inputs)
			if err != nil && ferr == nil {
				ferr = fmt.Errorf("--%s: %w", fl.Name, err)
			}
			args = append(args, "--"+fl.Name+"="+p)
		default:
			args = append(args, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	return args, ferr
}

// vmTimeout bounds the whole guest run: every test's timeout for every repetition would be far
// too long, so the guest gets the per-test timeout times a generous number of tests.
func vmTimeout(cfg plan.Config) time.Duration {
	if cfg.Suite == plan.FlashSuite {
		// One fresh chip per size, variant and repetition, each with a handful of tests.
		cells := len(nandSizes(cfg)) * len(cfg.Variants) * (cfg.Repetitions + 1)
		return cfg.Timeout.Duration * time.Duration(4+cells)
	}
	return cfg.Timeout.Duration * time.Duration(4+2*cfg.Repetitions)
}

func nandSizes(cfg plan.Config) []uint64 {
	if len(cfg.NANDSizes) > 0 {
		return cfg.NANDSizes
	}
	return plan.DefaultNANDSizes
}

// vmMemoryMiB is the guest's RAM: the default for the block suites (their data is staged in
// RAM at size/12 + size/8); for raw NAND, nandsim keeps the written chip in RAM besides the
// data and the image built from it, about 4 times the largest partition.
func vmMemoryMiB(cfg plan.Config) uint64 {
	if cfg.Suite != plan.FlashSuite {
		return 0
	}
	var largest uint64
	for _, s := range nandSizes(cfg) {
		largest = max(largest, s)
	}
	return 768 + 5*largest>>20
}

func isPath(s string) bool {
	return filepath.IsAbs(s) || filepath.Base(s) != s || filepath.Ext(s) == ".toml" || filepath.Ext(s) == ".json"
}

// copyInput copies a file (or, for a probe directory, its probe.json) into dir and returns the
// copy's path, which the guest sees at the same place.
func copyInput(src, dir string) (string, error) {
	if fi, err := os.Stat(src); err == nil && fi.IsDir() {
		src = filepath.Join(src, "probe.json")
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(src))
	return dst, os.WriteFile(dst, b, 0o644)
}

// vmCardProfile parses --target vm, vm:simcard or vm:simcard:PROFILE and returns the profile
// of the simulated card behind the guest's SD card ("" for a plain image file).
func vmCardProfile(spec string) (string, error) {
	rest, ok := strings.CutPrefix(spec, "vm")
	switch {
	case !ok:
		return "", fmt.Errorf("--target %s is not a vm target", spec)
	case rest == "":
		return "", nil
	case rest == ":simcard":
		return "sd-typical", nil
	case strings.HasPrefix(rest, ":simcard:") && len(rest) > len(":simcard:"):
		return strings.TrimPrefix(rest, ":simcard:"), nil
	}
	return "", fmt.Errorf("unknown target %q: use vm, or vm:simcard:PROFILE for the guest's SD card on a simulated card (fsbench simcard profiles lists them)", spec)
}

// vmSimcardMethod says how the simulated card behind QEMU's SD card sees the guest's I/O.
// Measured with QEMU 7.2: every request reaches the card file as 512-byte reads and writes
// (620,200 writes of 512 bytes for one f2fs run on 128 MiB), and an erase (the guest's
// discard) arrives as writes of the erased range, never as a discard. The card's counters thus
// show QEMU's SD model, not the guest's request sizes.
const vmSimcardMethod = "card: the simulated card's counters over the whole guest run. QEMU's SD card model (7.2) moves 512 bytes per request and carries out an erase (the guest's discard) by writing the range, so the card sees 512-byte writes and no discards: its write amplification and wear are those of that traffic. The per-test trace replays (from the guest's own block requests) show what a real card would get"

// guestSimcard is the simulated card serving the guest's SD card image, recorded in the cleanup
// ledger so that a killed run's FUSE mount is undone by the next run or fsbench cleanup.
type guestSimcard struct {
	sc     *target.Simcard
	ledger *target.Ledger
}

func startGuestCard(ctx context.Context, profile string, size uint64, dir string, scale float64) (*guestSimcard, error) {
	if scale <= 0 {
		return nil, usagef("--time-scale must be > 0 (1 = real time), got %g", scale)
	}
	if _, err := runner.CardProfile(profile); err != nil {
		return nil, UsageError{fmt.Errorf("--target vm:simcard:%s: %w", profile, err)}
	}
	ledger, err := target.OpenLedger(runner.LedgerDir)
	if err != nil {
		return nil, err
	}
	cardDir := filepath.Join(dir, "simcard")
	if err := ledger.AddMountpoint(cardDir); err != nil {
		ledger.Close()
		return nil, err
	}
	sc, err := target.StartSimcard(ctx, target.SimcardOptions{Profile: profile, Size: size, Dir: cardDir,
		Backing: filepath.Join(dir, "simcard.data"), TimeScale: scale})
	if err != nil {
		ledger.Close()
		return nil, err
	}
	return &guestSimcard{sc: sc, ledger: ledger}, nil
}

// stop stops the card server after QEMU has exited (it holds the card file until then); the
// ledger goes only when the card is gone.
func (c *guestSimcard) stop(stdio IO) {
	if err := c.sc.Stop(); err != nil {
		fmt.Fprintf(stdio.Err, "fsbench: stopping the simulated card: %v (fsbench cleanup undoes what is left)\n", err)
		return
	}
	c.ledger.Close()
}
