package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
)

func newMergeCmd(stdio IO) *cobra.Command {
	var out string
	var force bool
	var labelFlags []string
	cmd := &cobra.Command{
		Use:   "merge -o DIR [--label RUN=NAME]... RUN_DIR RUN_DIR...",
		Short: "Merge runs into one results directory: host and guest, or several cards side by side",
		Long: `merge combines the results of two or more runs into DIR (results.json, results.csv and
report.html) so that they are compared in one report. Two typical uses: the host's kernel lacks
some filesystems (its run skipped them) and a run in a QEMU guest (--target vm) measured them;
or the same variants ran on several cards (one run per card) and the cards are to be compared.

--label RUN=NAME names a run, usually after the card it ran on: RUN is one of the runs as given
on the command line (a results directory or its results.json), NAME what the report shows for
its rows (NAME cannot contain "="). Give one --label per run to be named; a run without one is
named by its kernel. A
label is tied to its run by name rather than by position, so that leaving a run unlabelled or
reordering the runs can never put one card's name on another card's rows.

A variant skipped in one run and measured in another appears once, measured. A variant measured
in several runs keeps the first run's name and figures; each later one is renamed NAME@LABEL,
or NAME@KERNEL (the kernel release that ran it) when its run has no label, with #2, #3 ...
added if that name is taken too (three unlabelled runs on one kernel), so that any number of
runs merges. Every variant records the run it came from (directory, label, kernel, host or
guest), and the report says where each row ran. Run-wide information (configuration, dataset,
target, machine) is the first run's; the status is complete only if every run is.

Figures taken on different kernels, or in a guest under TCG emulation, measure the kernel and
the emulation as much as the filesystem: compare rows from the same source first.`,
		Example: `  fsbench merge -o fsbench-results/merged fsbench-results/host fsbench-results/guest
  fsbench merge -o merged --force a/results.json b c
  fsbench merge -o cards --label r/card1=sandisk-64G --label r/card2=sandisk-16G --label r/card3=micro-16G r/card1 r/card2 r/card3`,
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
			labels, err := runLabels(labelFlags, args)
			if err != nil {
				return err
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
			warnCards(stdio, runs, args)
			merged, err := results.MergeLabeled(runs, dirs, labels)
			if err != nil {
				return err
			}
			for i := 1; i < len(runs); i++ {
				for _, w := range results.CalibrationMismatches(runs[0], runs[i], args[0], args[i]) {
					fmt.Fprintf(stdio.Err, "fsbench merge: warning: %s; the merged results record %s's calibration, and the variants of %s were rated on the other model\n", w, args[0], args[i])
				}
			}
			// Claimed only now, so that a merge that fails leaves no empty directory behind: a new
			// or empty directory, or with --force one an earlier fsbench run or merge made (its
			// marker says so); never a directory of the user's.
			if err := session.Claim(out, force); err != nil {
				var ee *session.ExistsError
				if errors.As(err, &ee) {
					return UsageError{err}
				}
				return fmt.Errorf("the output directory: %w (choose another -o DIR)", err)
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
	cmd.Flags().StringVarP(&out, "out", "o", "", "directory to write the merged results.json, results.csv and report.html to: a new or empty one (created if missing)")
	cmd.Flags().BoolVar(&force, "force", false, "write into a results directory an earlier fsbench run or merge made, replacing its results (never into one of the user's)")
	cmd.Flags().StringArrayVar(&labelFlags, "label", nil, "RUN=NAME: show the rows of RUN (one of the runs, as given) as NAME, e.g. the card it ran on; once per run")
	return cmd
}

// runLabels turns the --label RUN=NAME flags into one label per run argument ("" for a run
// given none). RUN is matched as a results directory, so that "a", "a/" and "a/results.json"
// name the same run; a run given twice gets the label of both. Anything that would leave a
// label unused or ambiguous is refused rather than guessed: a wrong card name on a row is
// worse than none.
func runLabels(flags, args []string) ([]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	labels := make([]string, len(args))
	for _, f := range flags {
		// The last "=": a directory may contain one, a label may not.
		i := strings.LastIndex(f, "=")
		if i <= 0 {
			return nil, usagef("--label %q: write RUN=NAME, RUN being one of the runs given, e.g. --label %s=sandisk-16G", f, args[0])
		}
		run, name := f[:i], strings.TrimSpace(f[i+1:])
		if name == "" {
			return nil, usagef("--label %q gives no name: write RUN=NAME, e.g. --label %s=sandisk-16G", f, run)
		}
		found := false
		for j, a := range args {
			if resultsDir(a) != resultsDir(run) {
				continue
			}
			if labels[j] != "" && labels[j] != name {
				return nil, usagef("run %s is labelled twice, %q and %q: give it one --label", a, labels[j], name)
			}
			labels[j], found = name, true
		}
		if !found {
			return nil, usagef("--label %q: %s is none of the runs given (%s); RUN must name one of them", f, run, strings.Join(args, ", "))
		}
	}
	return labels, nil
}

// resultsDir is the results directory an argument names: itself, or the directory of a
// results.json file. It is recorded in each merged variant's source as given, cleaned.
func resultsDir(arg string) string {
	if fi, err := os.Stat(arg); err == nil && !fi.IsDir() {
		return filepath.Dir(filepath.Clean(arg))
	}
	return filepath.Clean(arg)
}
