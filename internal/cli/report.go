package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
)

func newReportCmd(stdio IO) *cobra.Command {
	var out, card string
	var summary bool
	cmd := &cobra.Command{
		Use:   "report RESULTS_DIR|results.json",
		Short: "Write the HTML report of a run: verdict, rated matrix, charts, every measurement",
		Long: `report writes report.html next to results.json (or to -o FILE) and prints its path. The page is
one self-contained file (no script, nothing fetched from the network) that reads on a phone and
prints on paper. It opens with the verdict for each priority (boot time, read-mostly rootfs,
write-heavy data, space, flash wear; each other suite's tests): the variant the data tells apart
from every other, or "no clear winner" and the variants within noise. Then the matrix of medians
rated from excellent to worst, one chart per test, what was skipped or failed, and every raw
measurement. The rating and verdict rules are at the end of the page.`,
		Example: `  fsbench report fsbench-results/20260101-120000
  fsbench report results.json -o /tmp/card.html`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("report takes one argument, a results directory or results.json (got %d)", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			card, err := cardName(card)
			if err != nil {
				return err
			}
			path, err := writeReport(args[0], out, card)
			if err != nil {
				return err
			}
			if summary {
				r, err := results.Load(args[0])
				if err != nil {
					return err
				}
				report.SummaryWith(stdio.Out, r, report.SummaryOptions{Color: colorOut(stdio), Card: card})
				fmt.Fprintln(stdio.Out)
			}
			fmt.Fprintln(stdio.Out, path)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the report to this file (default: report.html next to results.json)")
	cmd.Flags().BoolVar(&summary, "summary", false, "also print the terminal summary table")
	cmd.Flags().StringVar(&card, "card", "", "rate flash wear on this card profile (one the run replayed; default: the simulated card's, else sd-typical)")
	return cmd
}

// writeReport writes the HTML report of the results at src (a results directory or
// results.json) to out, by default report.html beside results.json, and returns the path
// written. The links to results.json and results.csv are relative to the report's directory.
func writeReport(src, out, card string) (string, error) {
	r, err := results.Load(src)
	if err != nil {
		return "", err
	}
	jsonPath := src
	if fi, err := os.Stat(src); err == nil && fi.IsDir() {
		jsonPath = filepath.Join(src, "results.json")
	}
	if out == "" {
		out = filepath.Join(filepath.Dir(jsonPath), "report.html")
	}
	opt := report.HTMLOptions{
		Card:     card,
		JSONLink: relLink(out, jsonPath),
		CSVLink:  relLink(out, filepath.Join(filepath.Dir(jsonPath), "results.csv")),
	}
	var buf bytes.Buffer
	if err := report.HTML(&buf, r, opt); err != nil {
		return "", err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("writing the report: %w (choose another file with -o)", err)
	}
	return out, nil
}

// cardName turns a --card value into the profile name the results use: a profile file is
// read for its name; a built-in name is taken as it is.
func cardName(card string) (string, error) {
	if card == "" || (!strings.ContainsRune(card, '/') && !strings.HasSuffix(card, ".toml")) {
		return card, nil
	}
	p, err := flash.CardProfile(card)
	if err != nil {
		return "", UsageError{fmt.Errorf("--card: %w", err)}
	}
	return p.Name, nil
}

// relLink is target relative to the directory of page, with forward slashes, for an href.
func relLink(page, target string) string {
	pa, err1 := filepath.Abs(filepath.Dir(page))
	ta, err2 := filepath.Abs(target)
	if err1 == nil && err2 == nil {
		if rel, err := filepath.Rel(pa, ta); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(target)
}

// colorOut reports whether the summary may use colour: stdout is a terminal and NO_COLOR is
// unset (terminal also checks NO_COLOR and TERM=dumb).
func colorOut(stdio IO) bool {
	f, ok := stdio.Out.(*os.File)
	return ok && terminal(f)
}
