package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/remote"
)

// The commands a host runs on a board over SSH. They are hidden: people run them through
// --target ssh://..., fsbench fetch and fsbench cleanup --target ssh://....

// newFactsCmd prints what this machine can run, for the host to plan a run here.
func newFactsCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use: "facts", Hidden: true, Args: cobra.NoArgs,
		Short: "Print what this machine is and which filesystems it can run, as JSON (for a host planning a run here)",
		RunE: func(*cobra.Command, []string) error {
			f, err := remote.LocalBoardFacts(Version)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(stdio.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(f)
		},
	}
}

// newPackCmd writes a results directory as a tar stream, for the host to fetch it without scp.
func newPackCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use: "pack DIR", Hidden: true, Args: cobra.ExactArgs(1),
		Short: "Write the files of a results directory to standard output as a tar stream",
		RunE: func(_ *cobra.Command, args []string) error {
			return remote.Pack(stdio.Out, args[0])
		},
	}
}
