// Package report draws results for people: the terminal summary (variants × concerns, medians
// with units and a rating per cell), the self-contained HTML page with its verdict, matrix,
// charts and the suites' tables, the SVG charts, and the comparison of two runs. It decides
// nothing: ratings, verdicts and comparisons are internal/verdict's, computed from the data
// by the rules in verdict.RatingRules and verdict.VerdictRules, never per filesystem; other
// tools' formats are internal/export's.
package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/verdict"
)

// SummaryOptions change how Summary writes.
type SummaryOptions struct {
	// Color adds ANSI colours by rating. The caller decides: only when writing to a terminal
	// and NO_COLOR is unset.
	Color bool
	// Card is the card profile flash wear is rated on (the --card flag); "" means the
	// simulated card's own profile for a simcard run, else DefaultCard (see CardFor).
	Card string
}

// Summary writes the terminal table without colour: SummaryWith(w, r, SummaryOptions{}).
func Summary(w io.Writer, r *results.Run) error {
	return SummaryWith(w, r, SummaryOptions{})
}

// ansi colours by rating: green for the top, yellow in the middle, red at the bottom.
var ansi = map[verdict.Rating]string{
	verdict.Best: "\033[1;32m", verdict.VeryGood: "\033[32m", verdict.Good: "\033[36m", verdict.Fair: "\033[33m",
	verdict.Average: "\033[33m", verdict.Bad: "\033[31m", verdict.Worst: "\033[1;31m",
}

// SummaryWith writes the table of medians with a rating letter per cell (A excellent to G
// worst, see RatingRules), the verdict per priority, then skipped variants and failed
// cells.
//
// Raw-flash variants (suite free-electrons) are shown as the 2010 study's tables instead,
// one per test with a row per partition size; a run of only those has no matrix. When the
// variants ran on different kernels (a merged run) or in a guest, the matrix has a kernel
// column and the tables say where each filesystem ran. A merge whose runs were labelled
// (fsbench merge --label) lists its runs before the matrix and has a run column.
func SummaryWith(w io.Writer, full *results.Run, opt SummaryOptions) error {
	r := blockRun(full)
	fe := freeElectrons(full)
	card := verdict.CardFor(r, opt.Card)
	var cols []verdict.Ranking
	for _, m := range verdict.MatrixFor(r, card, registered()) {
		if verdict.Present(r, m) && !(m.Key == verdict.MBoot.Key && !anyModuleLoad(r)) {
			cols = append(cols, verdict.Evaluate(r, m, stats.DefaultAlpha))
		}
	}
	if r.Target.Kind != "" {
		fmt.Fprintf(w, "measured on %s\n\n", TargetText(full))
	}
	writeMergedRuns(w, full)
	ran := verdict.RanVariants(r)
	if len(ran) > 0 && len(cols) > 0 {
		writeMatrix(w, full, r, cols, ran, opt.Color)
		writeMatrixNotes(w, r, cols, ran, card)
	}
	if len(ran) > 0 {
		// Also without a matrix: a run of a suite whose figures are its own tables (the
		// endurance suite's cards) still has its verdict ("btrfs kept the card alive 2.2×
		// longer than ext4"), which the terminal must say as the page does.
		writeVerdicts(w, verdict.VerdictsFor(r, stats.DefaultAlpha, card, registered()))
	}
	if fe != nil {
		writeFreeElectrons(w, fe)
	}
	writeSuiteTables(w, r)
	WriteAged(w, r)
	writeSkippedAndFailed(w, full, fe)
	return nil
}

// writeMatrix writes the table of medians of the block variants r of full that ran, a column
// per figure, with the run's label and where each variant ran when those differ; color paints
// each cell by its rating.
func writeMatrix(w io.Writer, full, r *results.Run, cols []verdict.Ranking, ran []results.Variant, color bool) {
	src := verdict.Sources(full)
	lab := labels(full)
	rows := [][]string{{"variant"}, {""}}
	if lab != nil {
		// The label of the run (the card) the row came from, beside the kernel.
		rows = [][]string{{"variant", "run"}, {"", ""}}
	}
	if src != nil {
		head := "kernel"
		if verdict.OnBoards(r) {
			head = "board, card, kernel" // a farm's rows: see ranOn
		}
		rows[0], rows[1] = append(rows[0], head), append(rows[1], "")
	}
	first := len(rows[0]) // the index of the first figure column
	for _, c := range cols {
		rows[0] = append(rows[0], c.Metric.Short)
		rows[1] = append(rows[1], c.Metric.Unit)
	}
	colour := map[[2]int]verdict.Rating{}
	for _, v := range ran {
		row := []string{v.Name}
		if lab != nil {
			row = append(row, lab[v.Name])
		}
		if src != nil {
			row = append(row, src[v.Name])
		}
		for i, c := range cols {
			cell, ok := c.Cells[v.Name]
			if !ok {
				row = append(row, verdict.Status(r, v.Name, c.Metric))
				continue
			}
			row = append(row, format(cell.Summary.Median)+" "+cell.Rating.Letter()+marks(c, v))
			colour[[2]int{len(rows), i + first}] = cell.Rating
		}
		rows = append(rows, row)
	}
	writeTableLeft(w, rows, first, func(row, col int, s string) string {
		if rt, ok := colour[[2]int{row, col}]; ok && color {
			return ansi[rt] + s + "\033[0m"
		}
		return s
	})
}

// writeMatrixNotes writes the legend of the matrix and the notes that say how to read its
// figures (busy host, server, kernel groups, the card the wear is rated on).
func writeMatrixNotes(w io.Writer, r *results.Run, cols []verdict.Ranking, ran []results.Variant, card string) {
	fmt.Fprintf(w, "\nmedians of up to %d repetitions (min and max: \"summary\" in results.json); higher is better for MB/s, lower for the rest.\n", verdict.Repetitions(r))
	fmt.Fprintln(w, "rating: A excellent, B very good, C good, D fair, E average, F bad, G worst (ratio to the best median; ties within noise share a rating).")
	fmt.Fprintln(w, "n/a (ro): read-only filesystem.")
	if !anyModuleLoad(r) {
		fmt.Fprintln(w, "boot time (module load + mount) is the mount time here: every filesystem was built in or already loaded.")
	}
	if legend := marksLegend(cols, ran); legend != "" {
		fmt.Fprintln(w, legend)
	}
	if busy := verdict.BusyText(r); busy != "" {
		fmt.Fprintln(w, "\nNOTE: "+busy+".")
	}
	if srv := verdict.ServerNote(r); srv != "" {
		fmt.Fprintln(w, "\nNOTE: "+srv+".")
	}
	for _, c := range cols {
		if c.Group != nil {
			fmt.Fprintln(w, "kernel: "+verdict.GroupRule+".")
			break
		}
	}
	for _, c := range cols {
		switch c.Metric.Key {
		case "flash_wear":
			fmt.Fprintf(w, "wear: flash bytes programmed on %s per byte written through the filesystem (write tests; traces replayed through the card model).\n", card)
		case "card_time":
			fmt.Fprintf(w, "card: seconds the %s model was busy with the write tests' requests, computed from the requests alone: a busy host cannot change it.\n", card)
		}
	}
}

// writeSkippedAndFailed lists the variants that did not run and the cells that failed,
// outside the free-electrons section fe, which footnotes its own.
func writeSkippedAndFailed(w io.Writer, full *results.Run, fe *feSection) {
	var skipped []string
	for _, v := range skippedOutside(full, fe) {
		skipped = append(skipped, fmt.Sprintf("  %s: %s", v.Name, v.Reason))
	}
	if len(skipped) > 0 {
		fmt.Fprintln(w, "\nskipped variants:")
		fmt.Fprintln(w, strings.Join(skipped, "\n"))
		if hint := GuestHint(full); hint != "" {
			fmt.Fprintln(w, "  "+hint)
		}
	}
	if failed := failedOutside(full, fe); len(failed) > 0 {
		fmt.Fprintln(w, "\nfailed cells:")
		for _, m := range failed {
			fmt.Fprintf(w, "  %s rep %d %s: %s\n", m.Variant, m.Rep, m.Test, m.Error)
		}
	}
}

// guestSlowdown is how many times longer a run takes in the QEMU guest under TCG than on this
// kind of host: measured here with the same small matrix (ext4 and ext2, 256 MiB, 2 repetitions),
// 702 s in the guest against 75 s on the host.
const guestSlowdown = 9

// GuestHint offers, when variants were skipped because this kernel lacks their filesystem,
// to run the whole matrix in a guest kernel, so that every filesystem is in one verdict, with the
// time that will take; "" otherwise.
func GuestHint(r *results.Run) string {
	var lack []string
	for _, v := range r.Variants {
		if v.Status == results.Skipped && strings.Contains(v.Reason, "--target vm") {
			lack = append(lack, v.Name)
		}
	}
	if len(lack) == 0 || r.Guest != nil {
		return ""
	}
	hint := fmt.Sprintf("to compare %s with the others in one verdict, run the whole matrix in a guest kernel that has them all: fsbench run --target vm (same flags)", strings.Join(lack, ", "))
	if !r.Started.IsZero() && r.Finished.After(r.Started) {
		d := r.Finished.Sub(r.Started)
		hint += fmt.Sprintf("; under TCG emulation it takes about %d times this run's %s (about %s), and its times describe the emulator, so compare its rows with each other, not with this run's",
			guestSlowdown, d.Round(time.Minute), (time.Duration(guestSlowdown) * d).Round(time.Minute))
	}
	return hint
}

// anyModuleLoad reports whether some repetition timed a module load: otherwise boot time is
// the mount time, and a column of its own would repeat it.
func anyModuleLoad(r *results.Run) bool {
	for _, m := range r.Measurements {
		if m.Test == catalog.ModuleLoad && m.Status == results.OK && m.Value != nil && *m.Value > 0 {
			return true
		}
	}
	return false
}

// marks are what a cell's figure carries besides its rating: ~ when some of its repetitions
// were measured while the machine was busy, ? when --until-stable gave up on it.
func marks(t verdict.Ranking, v results.Variant) string {
	s := ""
	if t.Busy[v.Name] > 0 {
		s += "~"
	}
	for _, test := range t.Metric.Tests {
		if slices.Contains(v.Unstable, test) {
			s += "?"
			break
		}
	}
	return s
}

// marksLegend explains the marks the table uses, or "".
func marksLegend(cols []verdict.Ranking, ran []results.Variant) string {
	var busy, unstable bool
	for _, c := range cols {
		for _, v := range ran {
			m := marks(c, v)
			busy = busy || strings.Contains(m, "~")
			unstable = unstable || strings.Contains(m, "?")
		}
	}
	var parts []string
	if busy {
		parts = append(parts, "~: some repetitions were measured while the machine was busy with other work (see the note)")
	}
	if unstable {
		parts = append(parts, "?: --until-stable stopped before the median was known within its target")
	}
	return strings.Join(parts, "; ")
}

// writeVerdicts prints the verdicts, the matrix's first, then each suite's under its name
// (Verdict.Line words them, as the HTML page does).
func writeVerdicts(w io.Writer, vs []verdict.Verdict) {
	width := 0
	for _, v := range vs {
		width = max(width, len(v.Priority)+1)
	}
	suite := "-"
	for _, v := range vs {
		if v.Suite != suite {
			suite = v.Suite
			switch {
			case suite == "":
				fmt.Fprintln(w, "\nverdict:")
			default:
				fmt.Fprintf(w, "\nverdict, %s suite:\n", suite)
			}
		}
		fmt.Fprintf(w, "  %-*s %s\n", width, v.Priority+":", v.Line())
	}
}

func failedCells(r *results.Run) []results.Measurement {
	var out []results.Measurement
	for _, m := range r.Measurements {
		if m.Status == results.Failed {
			out = append(out, m)
		}
	}
	return out
}

// format is figure.Format under the short name the report's many tables use.
func format(v float64) string { return figure.Format(v) }

// writeTable aligns rows: the first column left, the others right. paint may wrap a cell's
// padded text (colour codes must not count in the width).
func writeTable(w io.Writer, rows [][]string, paint func(row, col int, s string) string) {
	writeTableLeft(w, rows, 1, paint)
}

// writeTableLeft is writeTable with the first left columns aligned left: names and other
// text, where the figures that follow align right.
func writeTableLeft(w io.Writer, rows [][]string, left int, paint func(row, col int, s string) string) {
	widths := map[int]int{}
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], cellWidth(c))
		}
	}
	for ri, row := range rows {
		var b strings.Builder
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			if i < left {
				b.WriteString(c + strings.Repeat(" ", widths[i]-cellWidth(c)))
				continue
			}
			b.WriteString(strings.Repeat(" ", widths[i]-cellWidth(c)) + paint(ri, i, c))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// cellWidth is the columns a cell takes on a terminal: its runes, not its bytes ("×" and "±"
// are two bytes in UTF-8 and one column; counting bytes put a header one column off its
// figures). A rune is one column for every character fsbench prints: none is a wide (East
// Asian) character or a combining mark, and fmt's %-*s pads by runes too.
func cellWidth(s string) int { return utf8.RuneCountInString(s) }
