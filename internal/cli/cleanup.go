package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/board"
	"github.com/fsbench/fsbench/internal/capacity"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets/boards"
	"github.com/fsbench/fsbench/internal/trace"
)

// cleanupFlags are cleanup's flags.
type cleanupFlags struct {
	board boardTarget // --target: a board to clean instead of this machine
	purge bool
}

func (f *cleanupFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.board.target, "target", "", "clean a board instead: ssh://[user@]host[:port] or labgrid:PLACE")
	fl.BoolVar(&f.purge, "purge", false, "with --target: also remove the runs the board keeps")
	f.board.flags.register(fl, nil)
}

func newCleanupCmd(stdio IO) *cobra.Command {
	var f cleanupFlags
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Undo what a killed fsbench run left behind (its mounts, loop devices, files, processes, labgrid places)",
		Long: `Every run records what it creates in ` + session.DefaultLedgerDir + `. A run that was killed (kill -9,
power loss of the host is different: loop devices and mounts vanish with it) leaves that record;
cleanup unmounts, detaches, stops and deletes exactly what such records name, and nothing else,
releases the labgrid places such a run acquired (unless they were acquired again since), and
removes the block-trace instances (kernel buffers) of fsbench processes that are gone. A card
whose capacity check (fsbench probe --capacity) was killed gets its overwritten blocks back
from the undo log in ` + capacity.DefaultUndoDir + ` (only if it is the same card, unchanged since).
It also ends the emulated boards fsbench board up started (exactly their QEMU processes).
fsbench run does this by itself before it starts.

With --target ssh://[user@]host[:port] (or labgrid:PLACE, acquired for the time of the
command) it cleans a board instead (as root there), and lists the runs the board keeps with
partial results (--purge removes them).`,
		Example: `  fsbench cleanup
  fsbench cleanup --target ssh://root@board --purge`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.board.target != "" {
				return cleanupBoard(cmd.Context(), stdio, f)
			}
			return cleanupHere(cmd.Context(), stdio)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// cleanupHere undoes what killed runs left on this machine and prints each action.
func cleanupHere(ctx context.Context, stdio IO) error {
	if os.Geteuid() != 0 {
		return errors.New("fsbench cleanup needs root (it unmounts and detaches loop devices); run it with sudo")
	}
	// Each action is both logged and returned: print the returned list only.
	actions, err := session.CleanupStale(session.DefaultLedgerDir, func(string, ...any) {})
	removed, terr := trace.CleanStale()
	actions = append(actions, removed...)
	boards, berr := downBoards(board.DefaultStateDir)
	actions = append(actions, boards...)
	// Cards a killed capacity check overwrote blocks of: put back from its undo log.
	restored, uerr := capacity.RestorePending(ctx, capacity.DefaultUndoDir, nil)
	actions = append(actions, restored...)
	err = errors.Join(err, terr, berr, uerr)
	for _, a := range actions {
		fmt.Fprintln(stdio.Out, a)
	}
	if err == nil && len(actions) == 0 {
		fmt.Fprintln(stdio.Out, "nothing to clean up")
	}
	return err
}

// cleanupBoard cleans the board --target names and prints what it did and the runs it keeps.
func cleanupBoard(ctx context.Context, stdio IO, f cleanupFlags) (err error) {
	b, release, err := f.board.open(ctx, stdio)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release()) }()
	lines, err := b.Cleanup(ctx, f.purge)
	for _, l := range lines {
		if l != "" {
			fmt.Fprintln(stdio.Out, l)
		}
	}
	return err
}

// fetchFlags are fetch's flags.
type fetchFlags struct {
	out   string
	force bool
	board boardFlags
}

func (f *fetchFlags) register(fl *pflag.FlagSet) {
	fl.StringVarP(&f.out, "out", "o", "", "results directory to write")
	fl.BoolVar(&f.force, "force", false, "reuse a results directory an earlier run made")
	f.board.register(fl, nil)
}

func newFetchCmd(stdio IO) *cobra.Command {
	var f fetchFlags
	cmd := &cobra.Command{
		Use:   "fetch ssh://[user@]host[:port]|labgrid:PLACE [RUN] -o DIR",
		Short: "Copy the results a board kept (an interrupted run's completed cells) into a results directory",
		Long: `A run on a board whose connection dropped, or that was interrupted, keeps its results on the
board. fetch copies them (the newest run, or RUN as fsbench cleanup --target lists them) into DIR
and writes the report there.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("fetch takes a board (ssh://... or labgrid:PLACE) and optionally a run name (got %d arguments)", len(args))
			}
			if f.out == "" {
				return usagef("say where to put the results: -o DIR")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			run := ""
			if len(args) == 2 {
				run = args[1]
			}
			return fetch(cmd.Context(), stdio, boardTarget{target: args[0], flags: f.board}, run, f)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// fetch copies run (the newest when "") from board into f.out and writes its report there.
func fetch(ctx context.Context, stdio IO, board boardTarget, run string, f fetchFlags) (err error) {
	b, release, err := board.open(ctx, stdio)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release()) }()
	if err := session.Claim(f.out, f.force); err != nil {
		return err
	}
	r, err := b.Fetch(ctx, run, f.out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdio.Out, "results: %s (%s, status %s)\n", f.out, r.Remote.RunDir, r.Status)
	if path, err := writeReport(f.out, "", ""); err == nil {
		fmt.Fprintf(stdio.Out, "report:  %s\n", path)
	}
	return nil
}

// boardTarget is a board named on the command line (ssh://... or labgrid:PLACE), with the
// flags that reach it: what fetch and cleanup --target work on.
type boardTarget struct {
	target string
	flags  boardFlags
}

// open reaches the board: an ssh:// one, or a labgrid place acquired until release is called.
// A target that names no board is the user's mistake.
func (b boardTarget) open(ctx context.Context, stdio IO) (*boards.Board, func() error, error) {
	spec, err := plan.ParseTarget(b.target)
	if err != nil {
		return nil, nil, UsageError{err}
	}
	board, release, err := boards.OpenBoard(ctx, spec, b.flags.options(stdio.logf))
	if err != nil && spec.Kind != plan.TargetLabgrid {
		return nil, release, UsageError{err}
	}
	return board, release, err
}

// downBoards ends the emulated boards recorded in stateDir and says what it did.
func downBoards(stateDir string) ([]string, error) {
	var out []string
	list, err := board.Status(stateDir)
	if err != nil {
		return nil, err
	}
	for _, s := range list {
		alive := s.Alive()
		if _, err := board.Down(s.File()); err != nil {
			return out, err
		}
		if alive {
			out = append(out, fmt.Sprintf("ended the emulated %s board (QEMU pid %d, port %d)", s.Arch, s.PID, s.Port))
		} else {
			out = append(out, fmt.Sprintf("removed the record of the emulated %s board (QEMU pid %d had ended)", s.Arch, s.PID))
		}
	}
	return out, nil
}
