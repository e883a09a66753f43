package cli

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/export"
	"github.com/fsbench/fsbench/internal/results"
	bonniesuite "github.com/fsbench/fsbench/internal/suites/bonnie"
)

func newExportCmd(stdio IO) *cobra.Command {
	var bonnie, lava bool
	var format, lavaFormat, out string
	cmd := &cobra.Command{
		Use:   "export --bonnie-csv|--lava RESULTS_DIR|results.json",
		Short: "Write a run's figures in another tool's format (bonnie++ CSV, LAVA test results)",
		Long: `export --bonnie-csv writes one bonnie++ CSV line per variant and repetition of the bonnie
suite, so that bon_csv2html, bon_csv2txt and scripts written for bonnie++ read fsbench's
results. --format 1.98 (the default) is what bonnie++ 2.00 writes and what Debian's
bon_csv2html and bon_csv2txt accept; 1.97 is the older layout without the seek count fields.
The machine-name field holds the variant name.

export --lava writes one LAVA test result per cell (variant × test), named fsbench_VARIANT_TEST
(a character LAVA does not take in a name, such as "/" or ",", becomes "_"): a lava-test-case
command with the median as its measurement, fail for a cell whose every repetition failed, skip
for a cell not run, and one skipped fsbench_VARIANT for a variant this machine could not run. A
Lava-Test Test Definition runs them (see contrib/lava/fsbench.yaml); --lava-format result.txt writes the result.txt lines of Linaro's
test-definitions instead (send-to-lava.sh reads them).`,
		Example: `  fsbench export --bonnie-csv fsbench-results/20260101-120000 | bon_csv2html > bonnie.html
  fsbench export --bonnie-csv --format 1.97 results.json -o bonnie.csv
  fsbench export --lava fsbench-results/board | sh`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("export takes one argument, a results directory or results.json (got %d)", len(args))
			}
			if bonnie == lava {
				return usagef("say what to export: --bonnie-csv or --lava")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			r, err := results.Load(args[0])
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if lava {
				if _, err := export.LAVA(&buf, r, lavaFormat); err != nil {
					return usagef("%v", err)
				}
			} else {
				n, err := export.BonnieCSV(&buf, r, format)
				if err != nil {
					return usagef("%v", err)
				}
				if n == 0 {
					return fmt.Errorf("%s has no %s suite results: run fsbench with --suite %s", args[0], bonniesuite.Name, bonniesuite.Name)
				}
			}
			if out == "" {
				_, err = stdio.Out.Write(buf.Bytes())
				return err
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return fmt.Errorf("writing %s: %w", out, err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&bonnie, "bonnie-csv", false, "write bonnie++ CSV lines of the bonnie suite")
	cmd.Flags().StringVar(&format, "format", export.BonnieCSV198, "bonnie++ CSV format version: 1.98 (bonnie++ 2.00) or 1.97")
	cmd.Flags().BoolVar(&lava, "lava", false, "write LAVA test results: one per variant and test")
	cmd.Flags().StringVar(&lavaFormat, "lava-format", export.LAVACommands, "LAVA results as lava-test-case commands (commands) or Linaro test-definitions' result.txt lines (result.txt)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of standard output")
	return cmd
}
