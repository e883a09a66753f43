package cli

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// warnCards warns, on stderr, about runs made on another card than the first: their figures
// compare the cards as much as the filesystems.
func warnCards(stdio IO, runs []*results.Run, names []string) {
	for _, w := range results.CardMismatches(runs, names) {
		fmt.Fprintln(stdio.Err, "warning:", w)
	}
}

// ExitRegression is the exit code of fsbench compare --fail-on-regression when B is
// significantly worse than A somewhere (slower, less throughput, more space or memory).
const ExitRegression = 3

// RegressionError is returned by compare --fail-on-regression when it finds a regression.
// ExitCode gives the process exit code that Main must return for it (ExitRegression).
type RegressionError struct{ N int }

func (e RegressionError) Error() string {
	return fmt.Sprintf("%d significant regression(s) found (listed above)", e.N)
}

// ExitCode is ExitRegression.
func (RegressionError) ExitCode() int { return ExitRegression }

// compareFlags are compare's flags.
type compareFlags struct {
	html             string
	failOnRegression bool
	alpha            float64
}

func (f *compareFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.html, "html", "", "also write the comparison as an HTML page to this file")
	fl.BoolVar(&f.failOnRegression, "fail-on-regression", false, "exit with code 3 when B is significantly worse than A anywhere")
	fl.Float64Var(&f.alpha, "alpha", 0.05, "significance level of the U test")
}

func newCompareCmd(stdio IO) *cobra.Command {
	var f compareFlags
	cmd := &cobra.Command{
		Use:   "compare A B",
		Short: "Compare two runs figure by figure, with significance (like benchstat)",
		Long: `compare prints, for every test and variant present in both runs, the median of A and of B with
their 95 % confidence intervals, the change in %, or "~" when the difference is not significant
(two-sided Mann-Whitney U test, p > 0.05), with p and the number of repetitions. With 3
repetitions per side nothing can be significant (the smallest possible p is 0.1): compare says
so; run with -n 4 or more. A confidence interval shown as "± ∞" (fewer than 6 repetitions) has
a footnote saying so, in the terminal and on the --html page alike.

A variant whose name is in both runs but whose filesystem, mkfs arguments or mount options
differ is listed first ("ext4: mkfs -O ^has_journal in A, none in B — not the same variant")
and its rows are marked: they compare two configurations, not one before and after a change.
A and B are results directories or results.json files.`,
		Example: `  fsbench compare fsbench-results/before fsbench-results/after
  fsbench compare a/results.json b/results.json --html compare.html --fail-on-regression`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("compare takes two arguments, A and B (results directories or results.json files), got %d", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error { return compare(stdio, args[0], args[1], f) },
	}
	f.register(cmd.Flags())
	return cmd
}

// compare prints the comparison of the runs at pathA and pathB, and writes its page with --html.
func compare(stdio IO, pathA, pathB string, f compareFlags) error {
	if f.alpha <= 0 || f.alpha >= 1 {
		return usagef("--alpha %g: use a level between 0 and 1, e.g. 0.05", f.alpha)
	}
	a, err := results.Load(pathA)
	if err != nil {
		return fmt.Errorf("A: %w", err)
	}
	b, err := results.Load(pathB)
	if err != nil {
		return fmt.Errorf("B: %w", err)
	}
	warnCards(stdio, []*results.Run{a, b}, []string{pathA, pathB})
	c := verdict.CompareRuns(a, b, pathA, pathB, f.alpha, suites.Verdicts())
	if err := report.CompareText(stdio.Out, c); err != nil {
		return err
	}
	if f.html != "" {
		var buf bytes.Buffer
		if err := report.CompareHTML(&buf, c); err != nil {
			return err
		}
		if err := os.WriteFile(f.html, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing the comparison page: %w", err)
		}
		fmt.Fprintln(stdio.Out, f.html)
	}
	if n := len(c.Regressions()); f.failOnRegression && n > 0 {
		return RegressionError{N: n}
	}
	return nil
}
