// Package cli is fsbench's command line: one file per subcommand, each command built by a
// constructor, each doing its work through a plain function of the domain packages. It is the
// only package that knows about flags.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	_ "github.com/fsbench/fsbench/internal/suites/all"  // every suite registers itself
	_ "github.com/fsbench/fsbench/internal/targets/all" // every kind of --target registers itself
)

// Exit codes, documented in the README.
const (
	ExitOK    = 0 // done; failed cells, if any, are listed in the summary and results
	ExitError = 1 // the run could not be carried out
	ExitUsage = 2 // bad flags or configuration
	// ExitRegression (3, in compare.go): compare --fail-on-regression found a significant slowdown.
	// 4, 5, 6 (capacity.ExitCounterfeit, ExitDamaged, ExitNotRestored): probe --capacity's
	// verdicts, also a device run's when its capacity check refuses the card
	// (docs/card-identity.md).
	// ExitInterrupted (130) is a run ended by SIGINT after cleaning up, completed cells kept;
	// other signals give 128 + their number (129 SIGHUP, 141 SIGPIPE, 143 SIGTERM).
	ExitInterrupted = 130
)

// UsageError marks errors the user fixes by changing the command line or the config file.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error { return UsageError{fmt.Errorf(format, args...)} }

// IO is where a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	// ErrIsTerminal enables the live progress line (and is false under CI or a pipe).
	ErrIsTerminal bool
}

// logf writes a line to Err: the log a command hands the domain packages.
func (stdio IO) logf(format string, args ...any) { fmt.Fprintf(stdio.Err, format+"\n", args...) }

// Version is set by the linker (-X) in release builds.
var Version = "dev"

// NewRoot builds the fsbench command tree.
func NewRoot(stdio IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "fsbench",
		Short: "Choose a filesystem for flash storage by measuring it",
		Long: `fsbench makes each filesystem variant of a matrix on a block device (by default a loop
device over a sparse image file), runs named test suites on it, and reports time, CPU, memory
and the bytes and requests that reach the device.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{err} })
	root.AddCommand(newRunCmd(stdio), newListCmd(stdio), newCleanupCmd(stdio), newSimcardCmd(stdio), newReportCmd(stdio), newCompareCmd(stdio), newProbeCmd(stdio), newAdviseCmd(stdio), newExportCmd(stdio), newMergeCmd(stdio),
		newFetchCmd(stdio), newFactsCmd(stdio), newPackCmd(stdio), newBoardCmd(stdio), newPurgeRunCmd(stdio), newPowercutAgentCmd(stdio))
	return root
}

// Main runs the command line and returns the process exit code.
func Main(ctx context.Context, args []string, stdio IO) int {
	ctx, stdio, stop := watchPipes(ctx, stdio)
	defer stop()
	defer startHeapProfile(ctx, stdio.Err)()
	root := NewRoot(stdio)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stdio.Err, "fsbench:", err)
	var ue UsageError
	var ec interface{ ExitCode() int } // errors that carry their own exit code (compare's regressions)
	switch {
	// cobra reports an unknown subcommand only as text.
	case errors.As(err, &ue), strings.HasPrefix(err.Error(), "unknown command"):
		return ExitUsage
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return exitCodeOf(ctx)
	case errors.As(err, &ec):
		return ec.ExitCode()
	default:
		return ExitError
	}
}
