package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/advise"
	"github.com/fsbench/fsbench/internal/probe"
)

func newAdviseCmd(stdio IO) *cobra.Command {
	var f probeFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "advise [flags] probe.json|PROBE_DIR|DEVICE",
		Short: "Partition, mkfs, mount and scheduler settings for a flash device, from its probe",
		Long: `advise reads a probe.json (or a directory holding one), or probes DEVICE first (read-only
unless --write --destroy DEVICE), and prints settings derived from the measured geometry:
partition start and size aligned to the allocation unit, mkfs options for ext4 (stride,
stripe-width), f2fs (segments per section), nilfs2 (blocks per segment) and btrfs, mount
options, discard and the I/O scheduler. Each item names the measurement it comes from and
gives commands to paste.`,
		Example: `  fsbench advise fsbench-probe/20260101-120000
  fsbench advise /dev/mmcblk0
  fsbench advise ssh://root@board/dev/mmcblk0`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("advise takes one argument: probe.json, a probe directory or a device (got %d)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			src := args[0]
			var r *probe.Result
			var st os.FileInfo
			var err error
			if !strings.HasPrefix(src, "ssh://") {
				if st, err = os.Stat(src); err != nil {
					return UsageError{fmt.Errorf("advise: %w", err)}
				}
			}
			switch {
			case st == nil:
				r, _, err = remoteProbe(cmd, stdio, src, f)
			case st.IsDir():
				r, err = probe.Load(filepath.Join(src, probe.JSONFile))
			case st.Mode().IsRegular() && filepath.Ext(src) == ".json":
				r, err = probe.Load(src)
			default:
				var dir string
				r, dir, err = runProbe(cmd, stdio, src, f)
				if err == nil {
					_, err = probe.WriteFiles(dir, r)
				}
			}
			if err != nil {
				return err
			}
			g := advise.FromProbe(r)
			items := advise.Advise(g)
			if asJSON {
				enc := json.NewEncoder(stdio.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Geometry advise.Geometry `json:"geometry"`
					Items    []advise.Item   `json:"items"`
				}{g, items})
			}
			return advise.Write(stdio.Out, g, items)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print the advice as JSON")
	f.register(fl, probeHelp{
		write:   "when probing a device: also run the write tests (DESTROYS ALL DATA; needs --destroy)",
		destroy: "the device again, to confirm --write",
		out:     "when probing a device: directory for probe.json (default ./fsbench-probe/<time>)",
		sweep:   "when probing: ",
	})
	f.board.register(fl, nil)
	return cmd
}
