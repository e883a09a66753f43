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
	var bonnie, lava, kcidb, squad bool
	var format, lavaFormat, out, squadMeta string
	cmd := &cobra.Command{
		Use:   "export --bonnie-csv|--lava|--kcidb|--squad RESULTS_DIR|results.json",
		Short: "Write a run's figures in another tool's format (bonnie++ CSV, LAVA test results, KernelCI KCIDB, SQUAD metrics)",
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
test-definitions instead (send-to-lava.sh reads them).

export --kcidb writes a KernelCI KCIDB report (I/O schema v5): the run as one checkout and build
(the kernel it ran on, which fsbench neither checks out nor builds), and one test per cell,
fsbench.VARIANT.TEST, status DONE with its median as the test's number and unit (ERROR: every
repetition failed; SKIP: not run), each secondary figure a test below it
(fsbench.ext4.powercut.cuts_per_hour). kcidb-submit sends it.

export --squad writes SQUAD metrics, the "metrics" file of SQUAD's submission API
(POST /api/submit/GROUP/PROJECT/BUILD/ENVIRONMENT): one metric per cell (suite fsbench-VARIANT, named
after the test: fsbench-ext4/mount), its repetitions as its measurements, with its unit; --squad-metadata FILE writes the
"metadata" file beside it (the run's id as job_id).`,
		Example: `  fsbench export --bonnie-csv fsbench-results/20260101-120000 | bon_csv2html > bonnie.html
  fsbench export --bonnie-csv --format 1.97 results.json -o bonnie.csv
  fsbench export --lava fsbench-results/board | sh
  fsbench export --kcidb fsbench-results/board -o kcidb.json
  fsbench export --squad fsbench-results/board -o metrics.json --squad-metadata metadata.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("export takes one argument, a results directory or results.json (got %d)", len(args))
			}
			n := 0
			for _, b := range []bool{bonnie, lava, kcidb, squad} {
				if b {
					n++
				}
			}
			if n != 1 {
				return usagef("say what to export, one of: --bonnie-csv, --lava, --kcidb, --squad")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			r, err := results.Load(args[0])
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := writeExport(&buf, r, args[0], exportFormat{bonnie, lava, kcidb, squad, format, lavaFormat, squadMeta}); err != nil {
				return err
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
	cmd.Flags().BoolVar(&kcidb, "kcidb", false, "write a KernelCI KCIDB report (I/O schema v5): one test per variant and test, its median as the test's number")
	cmd.Flags().BoolVar(&squad, "squad", false, "write SQUAD metrics (the metrics file of SQUAD's submission API): one per variant and test")
	cmd.Flags().StringVar(&squadMeta, "squad-metadata", "", "with --squad: also write the submission's metadata file here")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of standard output")
	return cmd
}

// exportFormat is what export was asked to write.
type exportFormat struct {
	bonnie, lava, kcidb, squad bool
	format, lavaFormat         string
	squadMeta                  string
}

// writeExport writes r (read from src) in the format asked for to buf; the SQUAD metadata, when
// asked for, goes to its own file.
func writeExport(buf *bytes.Buffer, r *results.Run, src string, f exportFormat) error {
	switch {
	case f.kcidb:
		_, err := export.KCIDB(buf, r)
		return err
	case f.squad:
		if _, err := export.SQUADMetrics(buf, r); err != nil {
			return err
		}
		if f.squadMeta == "" {
			return nil
		}
		var md bytes.Buffer
		if err := export.SQUADMetadata(&md, r); err != nil {
			return err
		}
		if err := os.WriteFile(f.squadMeta, md.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f.squadMeta, err)
		}
		return nil
	case f.lava:
		if _, err := export.LAVA(buf, r, f.lavaFormat); err != nil {
			return usagef("%v", err)
		}
		return nil
	}
	n, err := export.BonnieCSV(buf, r, f.format)
	if err != nil {
		return usagef("%v", err)
	}
	if n == 0 {
		return fmt.Errorf("%s has no %s suite results: run fsbench with --suite %s", src, bonniesuite.Name, bonniesuite.Name)
	}
	return nil
}
