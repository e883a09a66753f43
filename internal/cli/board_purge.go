package cli

import (
	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/session"
)

// newPurgeRunCmd removes a run directory a host left on this board, if it carries fsbench's
// marks: what `fsbench cleanup --target ssh://... --purge` runs there for each kept run.
func newPurgeRunCmd(IO) *cobra.Command {
	return &cobra.Command{
		Use: "purge-run DIR", Hidden: true, Args: cobra.ExactArgs(1),
		Short: "Remove a run directory a host left on this board, if it carries fsbench's marks",
		RunE: func(_ *cobra.Command, args []string) error {
			return session.PurgeRun(args[0])
		},
	}
}
