package cli

import (
	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/targets/boards"
)

// newPowercutAgentCmd is the board's side of a live power-cut campaign: one step (make the
// filesystem, run the workload streaming its promises, check after the cut), its job as a JSON
// line on standard input. Hidden: the host runs it over SSH (--suite powercut on a board).
func newPowercutAgentCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use: "powercut-agent", Hidden: true, Args: cobra.NoArgs,
		Short: "Carry out one step of a live power cut on this board (for the host's --suite powercut)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return boards.RunAgent(cmd.Context(), stdio.In, stdio.Out)
		},
	}
}
