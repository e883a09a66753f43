package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/target"
	"github.com/fsbench/fsbench/internal/trace"
)

func newCleanupCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "cleanup",
		Short: "Undo what a killed fsbench run left behind (its mounts, loop devices, image files)",
		Long: `Every run records what it creates in ` + target.DefaultLedgerDir + `. A run that was killed (kill -9,
power loss of the host is different: loop devices and mounts vanish with it) leaves that record;
cleanup unmounts, detaches and deletes exactly what such records name, and nothing else, and
removes the block-trace instances (kernel buffers) of fsbench processes that are gone.
fsbench run does this by itself before it starts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return errors.New("fsbench cleanup needs root (it unmounts and detaches loop devices); run it with sudo")
			}
			// Each action is both logged and returned: print the returned list only.
			actions, err := target.CleanupStale(target.DefaultLedgerDir, func(string, ...any) {})
			removed, terr := trace.CleanStale()
			actions = append(actions, removed...)
			err = errors.Join(err, terr)
			for _, a := range actions {
				fmt.Fprintln(stdio.Out, a)
			}
			if err == nil && len(actions) == 0 {
				fmt.Fprintln(stdio.Out, "nothing to clean up")
			}
			return err
		},
	}
}
