package cli

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/simcard"
)

func newSimcardCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "simcard",
		Short: "Serve a simulated SD card or eMMC (a flash translation layer model) as a file",
		Long: `simcard models a card's flash translation layer (pages, erase blocks, allocation units,
open AUs, the page-mapped FAT area, latencies, wear) and serves it through FUSE as a file that
dd, fio, flashbench or a loop device can use, with flash-level counters.`,
	}
	cmd.AddCommand(newSimcardServeCmd(stdio), newSimcardProfilesCmd(stdio))
	return cmd
}

func newSimcardServeCmd(stdio IO) *cobra.Command {
	var (
		profile, size, backing, statsOut string
		scale, endurance                 float64
		wearSeed                         uint64
		unmountTimeout                   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve [flags] DIR",
		Short: "Mount DIR with the files card (the simulated card) and stats (its counters, JSON)",
		Long: `serve mounts a FUSE filesystem on DIR (an existing empty directory) holding two files:
DIR/card, the card, and DIR/stats, its counters as JSON (read it at any time). Reads and writes
of DIR/card wait for the time the model says the card would take (scaled by --time-scale).
Attach a loop device with direct I/O to put a filesystem on it:

  fsbench simcard serve --profile sd-typical --size 2G /mnt/sim &
  losetup --direct-io=on -f --show /mnt/sim/card

SIGINT/SIGTERM unmounts (waiting while a loop device is still attached) and prints the final
counters (or writes them to --stats-out).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := flash.Lookup(profile)
			if err != nil {
				return UsageError{err}
			}
			n, err := bytesize.Parse(size)
			if err != nil {
				return UsageError{fmt.Errorf("--size: %w", err)}
			}
			if scale < 0 {
				return usagef("--time-scale %g: must be 0 (no waiting) or more", scale)
			}
			if !(endurance > 0) || endurance > 1e6 {
				return usagef("--endurance-scale %g: must be a positive number (1: the profile's endurance; 0.01: a card that wears out a hundred times sooner)", endurance)
			}
			st, err := simcard.Serve(cmd.Context(), simcard.Config{
				Profile: p, Size: n, Dir: args[0], Backing: backing, TimeScale: scale,
				EnduranceScale: endurance, WearSeed: wearSeed,
				UnmountTimeout: unmountTimeout, Log: stdio.Err,
			})
			if werr := writeSimcardStats(stdio, statsOut, st); werr != nil && err == nil {
				err = werr
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&profile, "profile", "sd-typical", "built-in profile ("+joinNames(flash.Builtins())+") or a profile TOML file")
	f.StringVar(&size, "size", "2G", "card size (a multiple of the profile's AU size)")
	f.Float64Var(&scale, "time-scale", 1, "multiply modelled waits by this (0.01: 100× faster; 0: no waiting); recorded in the stats")
	f.Float64Var(&endurance, "endurance-scale", 1, "multiply every block's endurance by this (0.01: the card wears out after a hundredth of the writes); DIR/wear reads its bad blocks and health")
	f.Uint64Var(&wearSeed, "wear-seed", 0, "seed of the blocks' endurances (each card of a batch its own)")
	f.StringVar(&backing, "backing", "", "sparse file holding the card's data (default: in a temporary directory deleted at exit)")
	f.StringVar(&statsOut, "stats-out", "-", "where to write the final counters at exit (- for stdout)")
	f.DurationVar(&unmountTimeout, "unmount-timeout", 30*time.Second, "how long to wait at exit for a busy mount (a loop device still attached)")
	return cmd
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

func writeSimcardStats(stdio IO, path string, st simcard.Stats) error {
	if st.Profile == "" {
		return nil // never served
	}
	if path == "-" || path == "" {
		return simcard.WriteStats(stdio.Out, st)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write stats: %w", err)
	}
	if err := simcard.WriteStats(f, st); err != nil {
		f.Close()
		return fmt.Errorf("write stats to %s: %w", path, err)
	}
	return f.Close()
}

func newSimcardProfilesCmd(stdio IO) *cobra.Command {
	var show string
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the built-in card profiles with the figures the model gives them",
		Long: `profiles lists the built-in card profiles and, for each, the figures the model produces
(sequential 512 KiB write/read on a 1 GiB card, random 4 KiB read/write IOPS). --show NAME
prints a profile's TOML, with every parameter documented, to copy and edit.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if show != "" {
				b, err := flash.BuiltinSource(show)
				if err != nil {
					return UsageError{err}
				}
				_, err = stdio.Out.Write(b)
				return err
			}
			w := tabwriter.NewWriter(stdio.Out, 2, 8, 2, ' ', 0)
			fmt.Fprintln(w, "PROFILE\tSEQ WRITE MB/s\tSEQ READ MB/s\tRAND READ IOPS\tRAND WRITE IOPS\tDESCRIPTION")
			for _, name := range flash.Builtins() {
				p, err := flash.Lookup(name)
				if err != nil {
					return err
				}
				m, err := flash.NewModel(p, 1<<30)
				if err != nil {
					return err
				}
				fg := flash.Measure(m, 1)
				fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%.0f\t%.0f\t%s\n", name, fg.SeqWriteMBps, fg.SeqReadMBps, fg.RandReadIOPS, fg.RandWriteIOPS, p.Description)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "\ncounterfeit cards, for fsbench probe --capacity (timing of the profile named in base; --show NAME): %s\n", strings.Join(flash.Counterfeits(), ", "))
			return nil
		},
	}
	cmd.Flags().StringVar(&show, "show", "", "print this built-in profile's TOML")
	return cmd
}
