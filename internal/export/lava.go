// Package export writes a run's figures in other tools' formats: LAVA test results
// (lava-test-case commands, result.txt lines), bonnie++'s CSV, KernelCI's KCIDB reports and
// SQUAD's metrics. Results' own files
// (results.json, results.csv) are internal/results'; what a person reads is internal/report's.
package export

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// LAVA formats: the lava-test-case commands a Lava-Test Test Definition 1.0 runs, or the
// result.txt lines of Linaro's test-definitions (send-to-lava.sh reads them).
const (
	LAVACommands  = "commands"
	LAVAResultTxt = "result.txt"
)

// lavaName keeps a test case name to the characters LAVA accepts: letters, digits, '-', '_'
// and '.'; anything else (a variant's "/" or ",") becomes '_'.
var lavaUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func lavaName(parts ...string) string {
	return lavaUnsafe.ReplaceAllString(strings.Join(parts, "_"), "_")
}

// LAVA writes one result per cell of the run (variant × test): pass with the median and its
// unit when at least one repetition succeeded, fail when every one failed (a failed cell is a
// fail result, never an error of the test definition), skip for a variant this machine could
// not run. It returns how many results it wrote.
func LAVA(w io.Writer, r *results.Run, format string) (int, error) {
	line := func(name, result string, value float64, unit string) string {
		switch format {
		case LAVAResultTxt:
			if result == "pass" {
				return fmt.Sprintf("%s %s %s %s", name, result, strconv.FormatFloat(value, 'g', 6, 64), lavaUnit(unit))
			}
			return name + " " + result
		default:
			if result == "pass" {
				return fmt.Sprintf("lava-test-case %s --result pass --measurement %s --units %s", name, strconv.FormatFloat(value, 'g', 6, 64), lavaUnit(unit))
			}
			return fmt.Sprintf("lava-test-case %s --result %s", name, result)
		}
	}
	if format != LAVACommands && format != LAVAResultTxt {
		return 0, fmt.Errorf("LAVA format %q: use %s or %s", format, LAVACommands, LAVAResultTxt)
	}
	summary := map[[2]string]results.CellSummary{}
	for _, c := range r.Summarize() {
		summary[[2]string{c.Variant, c.Test}] = c
	}
	n := 0
	var b strings.Builder
	for _, v := range r.Variants {
		if v.Status == results.Skipped {
			fmt.Fprintln(&b, line(lavaName("fsbench", v.Name), "skip", 0, ""))
			n++
			continue
		}
		seen := map[string]bool{}
		for _, m := range r.Measurements {
			if m.Variant != v.Name || seen[m.Test] {
				continue
			}
			seen[m.Test] = true
			name := lavaName("fsbench", v.Name, m.Test)
			if c, ok := summary[[2]string{v.Name, m.Test}]; ok {
				fmt.Fprintln(&b, line(name, "pass", c.Median, c.Unit))
				n++
				continue
			}
			result := "skip" // not run, or does not apply (n/a)
			for _, x := range r.Cell(v.Name, m.Test) {
				if x.Status == results.Failed {
					result = "fail"
				}
			}
			fmt.Fprintln(&b, line(name, result, 0, ""))
			n++
		}
	}
	_, err := io.WriteString(w, b.String())
	return n, err
}

// lavaUnit spells a unit as one word, as lava-test-case --units takes it.
func lavaUnit(u string) string {
	switch u {
	case catalog.Seconds:
		return "seconds"
	case catalog.Bytes:
		return "bytes"
	case "":
		return "none"
	}
	return strings.ReplaceAll(u, "/", "_per_")
}
