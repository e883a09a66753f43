package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
)

func newMergeCmd(stdio IO) *cobra.Command {
	var out string
	var force bool
	cmd := &cobra.Command{
		Use:   "merge -o DIR RUN_DIR RUN_DIR...",
		Short: "Merge runs into one results directory, e.g. a host run and the guest run that filled its gaps",
		Long: `merge combines the results of several runs into DIR (results.json, results.csv and report.html)
so that they are compared in one report. The typical use: the host's kernel lacks some
filesystems (its run skipped them), and a run in a QEMU guest (--target vm) measured them.

A variant skipped in one run and measured in another appears once, measured. A variant measured
in two runs keeps the first run's name and figures; the later one is renamed NAME@KERNEL after
the kernel release that ran it. Every variant records the run it came from (directory, kernel,
host or guest), and the report says where each row ran. Run-wide information (configuration,
dataset, target, machine) is the first run's; the status is complete only if every run is.

Figures taken on different kernels, or in a guest under TCG emulation, measure the kernel and
the emulation as much as the filesystem: compare rows from the same source first.`,
		Example: `  fsbench merge -o fsbench-results/merged fsbench-results/host fsbench-results/guest
  fsbench merge -o merged --force a/results.json b c`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("merge takes at least two results directories or results.json files (got %d)", len(args))
			}
			if out == "" {
				return usagef("say where to write the merged results: -o DIR")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			jsonPath := filepath.Join(out, "results.json")
			if _, err := os.Stat(jsonPath); err == nil && !force {
				return usagef("%s already exists: choose another -o DIR, or pass --force to replace it", jsonPath)
			} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("checking the output directory: %w", err)
			}
			runs := make([]*results.Run, len(args))
			dirs := make([]string, len(args))
			for i, a := range args {
				r, err := results.Load(a)
				if err != nil {
					return fmt.Errorf("run %d (%s): %w", i+1, a, err)
				}
				runs[i], dirs[i] = r, resultsDir(a)
			}
			merged, err := results.Merge(runs, dirs)
			if err != nil {
				return err
			}
			// Created only now, so that a merge that fails leaves no empty directory behind.
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("creating the output directory: %w (choose another -o DIR)", err)
			}
			if err := results.Save(out, merged); err != nil {
				return err
			}
			page, err := writeReport(out, "", "")
			if err != nil {
				return err
			}
			if err := report.SummaryWith(stdio.Out, merged, report.SummaryOptions{Color: colorOut(stdio)}); err != nil {
				return err
			}
			fmt.Fprintln(stdio.Out)
			fmt.Fprintln(stdio.Out, jsonPath)
			fmt.Fprintln(stdio.Out, page)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "directory to write the merged results.json, results.csv and report.html to (created if missing)")
	cmd.Flags().BoolVar(&force, "force", false, "replace a results.json already in the output directory")
	return cmd
}

// resultsDir is the results directory an argument names: itself, or the directory of a
// results.json file. It is recorded in each merged variant's source as given, cleaned.
func resultsDir(arg string) string {
	if fi, err := os.Stat(arg); err == nil && !fi.IsDir() {
		return filepath.Dir(filepath.Clean(arg))
	}
	return filepath.Clean(arg)
}
