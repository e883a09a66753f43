package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/probe"
	"github.com/fsbench/fsbench/internal/targets/boards"
	"github.com/fsbench/fsbench/internal/targets/device"
)

type probeFlags struct {
	write            bool
	destroy, out     string
	maxBlock, maxAln string
	quiet            bool
	positions, tries int
	board            boardFlags
	capacity         capacityFlags
	class            classFlags
	sustained        sustainedFlags
}

// probeHelp is the help of the probe flags in one command: what --write, --destroy and --out
// do there, and the prefix of the read sweep's flags (advise uses them only when it probes).
type probeHelp struct{ write, destroy, out, sweep string }

// register adds the flags probe and advise (which probes a device first) share.
func (f *probeFlags) register(fl *pflag.FlagSet, h probeHelp) {
	fl.BoolVar(&f.write, "write", false, h.write)
	fl.StringVar(&f.destroy, "destroy", "", h.destroy)
	fl.StringVarP(&f.out, "out", "o", "", h.out)
	fl.StringVar(&f.maxBlock, "max-block", "64M", h.sweep+"largest block of the read sweep")
	fl.StringVar(&f.maxAln, "max-align", "64M", h.sweep+"largest alignment of the alignment test")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines on stderr")
}

// probeLong is probe's help.
const probeLong = `probe times I/O on DEVICE (a block device, a partition or an image file) the way flashbench
does and estimates the card's geometry, each estimate with its evidence and a confidence:

  - a read sweep: O_DIRECT reads at block sizes 512 B ... 64 MiB;
  - the alignment test (flashbench -a): reads just before, across and after boundaries of each
    power-of-two alignment; the alignments where crossing costs extra reveal the page and the
    allocation unit (AU);
  - with --write (DESTROYS THE DATA, needs --destroy DEVICE naming the same device): a write
    sweep (page size), the open-AU test (how many AUs the card writes in turn before slowing
    down) and the FAT-area test (are the first AUs faster for small random writes?).

It writes probe.json (schema fsbench.probe/v1), probe.txt and SVG charts into --out and prints
the summary. Without --write it only reads. fsbench advise turns probe.json into settings.

With --capacity it checks instead that the card holds what it announces (counterfeit cards
drop, wrap or cache what lies beyond their real flash). It writes a few blocks of its own and,
on a card the host cannot reset (every real card in a reader or slot), a volume past any write
cache of up to --max-cache (default 1 GiB, at most half the card): on a genuine card 1 GiB
written (each block written back with what it held), 1 GiB read, an undo log of 1 GiB on this
host, about 2-4 minutes at 10-20 MB/s. It says what it will cost before it writes and shows
its progress. Every block is saved in the undo log and synced before it is overwritten, and
its own blocks are put back; after a crash or a kill, the next probe or fsbench cleanup does.
With --destroy DEVICE (the same device) nothing is saved or put back and no undo log is kept.
It prints the verdict, the usable size and what was written where and what came back, and
exits 0 (genuine), 4 (counterfeit), 5 (damaged) or 6 (the card could not be restored: run
fsbench cleanup). See docs/card-identity.md.

With --class (DESTROYS the first 256 MiB, needs --destroy DEVICE) it measures the SD application
class instead: the area written first, its sequential write, random 4 KiB writes and reads in
it at queue depth 1 and 32, the host's queue and cache state from sysfs, and A1/A2 verdicts
with those conditions. See docs/probe.md.

With --sustained (DESTROYS THE DATA, needs --destroy) it writes the whole card, or --bytes of
it, in 1 MiB direct writes and finds the burst rate, the size of the cache the card writes
into (an SLC cache), the rate once it is full, and after --idle how much of it came back; it
writes sustained.json, sustained.txt and sustained.svg (rate against position). See
docs/probe.md.`

func newProbeCmd(stdio IO) *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:   "probe [flags] DEVICE",
		Short: "Measure a flash device's geometry: page, allocation unit, open AUs, FAT area",
		Long:  probeLong,
		Example: `  fsbench probe /dev/mmcblk0
  fsbench probe --write --destroy /dev/sdb /dev/sdb -o card-probe
  fsbench probe --capacity /dev/sdb
  fsbench probe --sustained --destroy /dev/sdb /dev/sdb --bytes 8G -o card-sustained
  fsbench probe --class --destroy /dev/sdb /dev/sdb`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("probe takes one device (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.capacity.enabled {
				return runCapacity(cmd, stdio, args[0], f)
			}
			if f.class.enabled {
				return runClass(cmd, stdio, args[0], f)
			}
			if f.sustained.enabled {
				return runSustained(cmd, stdio, args[0], f)
			}
			if strings.HasPrefix(args[0], "ssh://") {
				r, dir, err := remoteProbe(cmd, stdio, args[0], f)
				if err != nil {
					return err
				}
				if err := probe.WriteSummary(stdio.Out, r); err != nil {
					return err
				}
				fmt.Fprintf(stdio.Out, "\n%s\n", dir)
				return nil
			}
			r, dir, err := runProbe(cmd, stdio, args[0], f)
			if err != nil {
				return err
			}
			paths, err := probe.WriteFiles(dir, r)
			if err != nil {
				return err
			}
			if err := probe.WriteSummary(stdio.Out, r); err != nil {
				return err
			}
			fmt.Fprintln(stdio.Out)
			for _, p := range paths {
				fmt.Fprintln(stdio.Out, p)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	f.register(fl, probeHelp{
		write:   "also run the write tests: DESTROYS ALL DATA on the device (needs --destroy)",
		destroy: "the device again, to confirm that --write or --sustained may destroy it (with --capacity: keep no undo log, put nothing back)",
		out:     "directory for probe.json and the charts (default ./fsbench-probe/<time>)",
	})
	fl.IntVar(&f.positions, "align-positions", 0, "boundaries read per alignment (default 64; more resolve smaller steps)")
	fl.IntVar(&f.tries, "align-tries", 0, "reads per boundary, the fastest kept (default 6)")
	f.board.register(fl, nil)
	f.capacity.register(fl)
	f.class.register(fl)
	f.sustained.register(fl)
	return cmd
}

// remoteProbe probes a device of a board (ssh://host/dev/X): fsbench probe runs there, and its
// files come back into the local output directory.
func remoteProbe(cmd *cobra.Command, stdio IO, arg string, f probeFlags) (*probe.Result, string, error) {
	spec, err := plan.ParseTarget(arg)
	if err != nil || spec.Inner == nil || spec.Inner.Kind != plan.TargetDevice {
		return nil, "", usagef("probe %s: give the board's device, as ssh://[user@]host[:port]/dev/X", arg)
	}
	if f.destroy != "" && !f.write {
		return nil, "", usagef("--destroy without --write: the probe only reads unless --write is given")
	}
	if f.write && f.destroy != spec.Inner.Device {
		return nil, "", usagef("--write overwrites %s on %s: confirm with --destroy %s", spec.Inner.Device, spec.Host, spec.Inner.Device)
	}
	dir := f.out
	if dir == "" {
		dir = filepath.Join("fsbench-probe", time.Now().Format("20060102-150405"))
	}
	args := []string{spec.Inner.Device, "--max-block", f.maxBlock, "--max-align", f.maxAln}
	if f.write {
		args = append(args, "--write", "--destroy", f.destroy)
	}
	if f.positions > 0 {
		args = append(args, "--align-positions", strconv.Itoa(f.positions))
	}
	if f.tries > 0 {
		args = append(args, "--align-tries", strconv.Itoa(f.tries))
	}
	logf := stdio.logf
	if f.quiet {
		logf = func(string, ...any) {}
	}
	b, err := boards.NewBoard(spec, f.board.options(logf))
	if err != nil {
		return nil, "", UsageError{err}
	}
	if err := b.Probe(cmd.Context(), args, dir); err != nil {
		return nil, "", err
	}
	r, err := probe.Load(filepath.Join(dir, probe.JSONFile))
	return r, dir, err
}

// runProbe checks the device (for --write), probes it and returns the result and the output
// directory.
func runProbe(cmd *cobra.Command, stdio IO, dev string, f probeFlags) (*probe.Result, string, error) {
	maxBlock, err := bytesize.Parse(f.maxBlock)
	if err != nil {
		return nil, "", usagef("--max-block: %v", err)
	}
	maxAlign, err := bytesize.Parse(f.maxAln)
	if err != nil {
		return nil, "", usagef("--max-align: %v", err)
	}
	if f.destroy != "" && !f.write {
		return nil, "", usagef("--destroy without --write: the probe only reads unless --write is given")
	}
	if f.write {
		if err := checkWritable(dev, f.destroy); err != nil {
			return nil, "", err
		}
	}
	dir := f.out
	if dir == "" {
		dir = filepath.Join("fsbench-probe", time.Now().Format("20060102-150405"))
	}
	r := &probe.Result{}
	if err := probe.Identify(cmd.Context(), r, dev, "/sys", ""); err != nil {
		return nil, "", err
	}
	d, closeDev, err := probe.OpenDevice(dev, f.write)
	if err != nil {
		return nil, "", err
	}
	defer closeDev()
	logf := stdio.logf
	if f.quiet {
		logf = nil
	}
	var sentinel *measure.Sentinel
	if r.Identity != nil {
		sentinel = measure.NewSentinel(r.Identity.Name)
	}
	got, err := probe.Run(cmd.Context(), d, probe.Options{Write: f.write, MaxReadBlock: maxBlock, MaxAlign: maxAlign,
		AlignPositions: f.positions, AlignTries: f.tries, Log: logf, Sentinel: sentinel})
	if got != nil {
		got.Device, got.Kind, got.Identity, got.PartitionStart, got.USB, got.EMMC = r.Device, r.Kind, r.Identity, r.PartitionStart, r.USB, r.EMMC
		got.Warnings = append(r.Warnings, got.Warnings...)
	}
	if err != nil {
		return nil, "", fmt.Errorf("probe %s: %w", dev, err)
	}
	return got, dir, nil
}

// checkWritable applies the --destroy rules: a block device must pass device.CheckDevice;
// an image file must be named twice too.
func checkWritable(dev, destroy string) error {
	st, err := os.Stat(dev)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if st.Mode().IsRegular() {
		a, _ := filepath.EvalSymlinks(dev)
		b, _ := filepath.EvalSymlinks(destroy)
		if destroy == "" || a != b {
			return usagef("--write overwrites %s: confirm with --destroy %s", dev, dev)
		}
		return nil
	}
	if _, err := device.CheckDevice(dev, destroy); err != nil {
		return UsageError{err}
	}
	return nil
}
