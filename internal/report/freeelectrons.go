package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/verdict"
)

// feTest is one table of the Free Electrons 2010 flash-filesystem study: one test, or the sum
// of two whose medians are added as the study did (init_time + mount_time is what a boot
// waits for). Tables are titled with the study's names, which are the tests'.
type feTest struct {
	id, title string
	tests     []string
	bytes     bool // memory or space: shown in KiB (the study's KB); else seconds
}

// feOne is the table of one test.
func feOne(test string) feTest {
	return feTest{id: test, title: test, tests: []string{test}, bytes: catalog.Get(test).Unit == catalog.Bytes}
}

// feSum is the table of the sum of two tests recorded in the same unit.
func feSum(id, a, b string) feTest {
	return feTest{id: id, title: a + " + " + b, tests: []string{a, b}, bytes: catalog.Get(a).Unit == catalog.Bytes}
}

// feTests are the study's tables in its order.
var feTests = []feTest{
	feOne(catalog.InitTime),
	feOne(catalog.InitMem),
	feOne(catalog.MountTime),
	feOne(catalog.MountMem),
	feSum("init_mount_time", catalog.InitTime, catalog.MountTime),
	feSum("init_mount_mem", catalog.InitMem, catalog.MountMem),
	feOne(catalog.UsedSpace),
	feOne(catalog.ReadTime),
	feOne(catalog.RemoveTime),
	feOne(catalog.WriteTime),
	feOne(catalog.VideoWriteTime),
}

// isFlash reports whether v ran on a raw-flash (MTD) partition: the variants of the
// free-electrons suite, reported in the study's tables rather than in the block matrix.
func isFlash(v results.Variant) bool { return v.PartitionBytes > 0 }

// blockRun is r without its raw-flash variants and their measurements: the run the block
// matrix, verdicts, charts and other suites are made of. Raw-flash tests share names with
// block tests (used_space, mount_mem) but not their meaning, and would otherwise fill the
// matrix with empty rows. r itself when it has no raw-flash variant.
func blockRun(r *results.Run) *results.Run {
	if !slices.ContainsFunc(r.Variants, isFlash) {
		return r
	}
	b := *r
	b.Variants, b.Measurements = nil, nil
	keep := map[string]bool{}
	for _, v := range r.Variants {
		if !isFlash(v) {
			b.Variants = append(b.Variants, v)
			keep[v.Name] = true
		}
	}
	for _, m := range r.Measurements {
		if keep[m.Variant] {
			b.Measurements = append(b.Measurements, m)
		}
	}
	return &b
}

// feSection is the raw-flash part of a report: the study's tables.
type feSection struct {
	Columns []string // filesystems (configured variants), in the run's order
	Sizes   []string // partition sizes, smallest first
	Tables  []feTable
	Notes   []feNote
	// Sources says where each column ran, when the run mixes kernels or ran in a guest.
	Sources []string
	Reps    int
	// footnoted are the measurements the notes stand for (variant + "\x00" + test), which
	// the list of failed cells leaves out.
	footnoted map[string]bool
	noteNum   map[string]int // a footnote's number by its text
}

type feTable struct {
	ID, Title, Unit string
	Columns         []string
	Rows            []feRow
}

type feRow struct {
	Size  string
	Cells []feCell
}

// feCell is a median, or why there is none ("skipped", "failed", "n/a", "not run", "-"),
// with the number of its footnote (0: none).
type feCell struct {
	Text string
	Num  bool
	Note int
}

type feNote struct {
	N    int
	Text string
}

// feValue is one test's median for one variant, or the status that stands for it.
type feValue struct {
	v    float64
	ok   bool
	text string // status when !ok
	note string // footnote text, "" for none
	key  string // the measurement a failure note stands for
}

// feStatusRank orders the statuses a sum table shows when a part has no median: the most
// telling wins.
var feStatusRank = map[string]int{"skipped": 5, "failed": 4, "not run": 3, "n/a": 2, "-": 1}

// feColumn is the column of a raw-flash variant: its configured variant (Base), with the
// "@kernel" suffix a merge gave the second run of the same variant, so that both show.
func feColumn(v results.Variant) string {
	col := v.Base
	if col == "" {
		col = v.Name
	}
	if i := strings.LastIndex(v.Name, "@"); i >= 0 && !strings.Contains(col, "@") {
		col += v.Name[i:]
	}
	return col
}

// freeElectrons builds the study's tables from the raw-flash variants of r; nil when r has
// none or none of them recorded a test of the study.
func freeElectrons(r *results.Run) *feSection {
	g := newFEGrid(r)
	if g == nil {
		return nil
	}
	s := &feSection{Columns: g.cols, Reps: verdict.Repetitions(g.run), footnoted: map[string]bool{}, noteNum: map[string]int{}}
	for _, n := range g.sizes {
		s.Sizes = append(s.Sizes, bytesize.Format(n))
	}
	for _, ft := range feTests {
		if !slices.ContainsFunc(g.run.Measurements, func(m results.Measurement) bool { return slices.Contains(ft.tests, m.Test) }) {
			continue
		}
		s.Tables = append(s.Tables, s.table(g, ft))
	}
	if len(s.Tables) == 0 {
		return nil
	}
	if src := verdict.Sources(r); src != nil {
		s.addSources(g, src)
	}
	return s
}

// feCellKey places a variant in the study's grid: its column and its partition size.
type feCellKey struct {
	col  string
	size uint64
}

// feGrid is the raw-flash part of a run laid out as the study's tables: a column per
// filesystem, a row per partition size.
type feGrid struct {
	at    map[feCellKey]results.Variant
	cols  []string
	sizes []uint64     // smallest first
	run   *results.Run // the raw-flash variants and their measurements only
}

// newFEGrid lays out the raw-flash variants of r; nil when there are none.
func newFEGrid(r *results.Run) *feGrid {
	g := &feGrid{at: map[feCellKey]results.Variant{}, run: &results.Run{}}
	for _, v := range r.Variants {
		if !isFlash(v) {
			continue
		}
		g.run.Variants = append(g.run.Variants, v)
		col := feColumn(v)
		if _, taken := g.at[feCellKey{col, v.PartitionBytes}]; taken {
			// Two variants of one filesystem and size that the rules above do not tell
			// apart: each keeps a column of its own rather than one hiding the other.
			col = v.Name
		}
		g.at[feCellKey{col, v.PartitionBytes}] = v
		if !slices.Contains(g.cols, col) {
			g.cols = append(g.cols, col)
		}
		if !slices.Contains(g.sizes, v.PartitionBytes) {
			g.sizes = append(g.sizes, v.PartitionBytes)
		}
	}
	if len(g.cols) == 0 {
		return nil
	}
	slices.Sort(g.sizes)
	names := map[string]bool{}
	for _, v := range g.run.Variants {
		names[v.Name] = true
	}
	for _, m := range r.Measurements {
		if names[m.Variant] {
			g.run.Measurements = append(g.run.Measurements, m)
		}
	}
	return g
}

// note numbers a footnote, the same number for the same text; 0 for no text.
func (s *feSection) note(text string) int {
	if text == "" {
		return 0
	}
	if n, ok := s.noteNum[text]; ok {
		return n
	}
	s.Notes = append(s.Notes, feNote{N: len(s.Notes) + 1, Text: text})
	s.noteNum[text] = len(s.Notes)
	return len(s.Notes)
}

// table is the study's table of test ft: a cell per column and size, "-" where no variant
// ran, a status with its footnote where the figure is missing.
func (s *feSection) table(g *feGrid, ft feTest) feTable {
	t := feTable{ID: ft.id, Title: ft.title, Unit: "s", Columns: g.cols}
	if ft.bytes {
		t.Unit = "KiB"
	}
	for i, n := range g.sizes {
		row := feRow{Size: s.Sizes[i]}
		for _, col := range g.cols {
			v, ok := g.at[feCellKey{col, n}]
			if !ok {
				row.Cells = append(row.Cells, feCell{Text: "-"})
				continue
			}
			val := feCombine(g.run, v, ft.tests)
			if !val.ok {
				if val.key != "" {
					s.footnoted[val.key] = true
				}
				row.Cells = append(row.Cells, feCell{Text: val.text, Note: s.note(val.note)})
				continue
			}
			row.Cells = append(row.Cells, feCell{Text: feFormat(val.v, ft.bytes), Num: true})
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// addSources says where each column ran (src: by variant name): one place for the column,
// or each size's.
func (s *feSection) addSources(g *feGrid, src map[string]string) {
	for _, col := range g.cols {
		var parts, labels []string
		for _, n := range g.sizes {
			// A skipped cell ran nowhere: its footnote says why.
			if v, ok := g.at[feCellKey{col, n}]; ok && v.Status != results.Skipped {
				parts = append(parts, bytesize.Format(n)+": "+src[v.Name])
				if !slices.Contains(labels, src[v.Name]) {
					labels = append(labels, src[v.Name])
				}
			}
		}
		if len(labels) == 0 {
			continue
		}
		if len(labels) == 1 {
			s.Sources = append(s.Sources, col+" — "+labels[0])
		} else {
			s.Sources = append(s.Sources, col+" — "+strings.Join(parts, ", "))
		}
	}
}

// feCombine is the median of one test of v, or the sum of the medians of several (only when
// every part has one; otherwise the most telling status of the parts).
func feCombine(r *results.Run, v results.Variant, tests []string) feValue {
	var sum feValue
	sum.ok = true
	for _, t := range tests {
		x := feMedian(r, v, t)
		if !x.ok {
			if !sum.ok && feStatusRank[x.text] <= feStatusRank[sum.text] {
				continue
			}
			sum = x
			continue
		}
		if sum.ok {
			sum.v += x.v
		}
	}
	return sum
}

// feMedian is the median of the non-warm-up repetitions of one test of v, or why there is
// none.
func feMedian(r *results.Run, v results.Variant, test string) feValue {
	if v.Status == results.Skipped {
		return feValue{text: "skipped", note: feColumn(v) + " skipped: " + v.Reason}
	}
	if med, ok := verdict.Median(r.Values(v.Name, test)); ok {
		return feValue{v: med, ok: true}
	}
	var failed *results.Measurement
	var notRun, na bool
	for _, m := range r.Cell(v.Name, test) {
		switch m.Status {
		case results.Failed:
			// A failure of a counted repetition says more than one of the warm-up.
			if failed == nil || (failed.Warmup && !m.Warmup) {
				failed = &m
			}
		case results.NotRun:
			notRun = true
		case results.NA:
			na = true
		}
	}
	switch {
	case failed != nil:
		return feValue{text: "failed", note: fmt.Sprintf("%s %s failed: %s", v.Name, test, failed.Error), key: v.Name + "\x00" + test}
	case notRun:
		return feValue{text: "not run"}
	case na:
		return feValue{text: "n/a"}
	}
	return feValue{text: "-"}
}

// feFormat shows seconds with three significant digits, and bytes in KiB as whole numbers,
// as the study's tables did (memory deltas may be negative).
func feFormat(v float64, bytes bool) string {
	if bytes {
		k := math.Round(v / 1024)
		if k == 0 {
			k = 0 // no "-0"
		}
		return strconv.FormatFloat(k, 'f', 0, 64)
	}
	// Three significant digits for any magnitude: a mount on nandsim takes milliseconds.
	return figure.Format(v)
}

// writeFreeElectrons writes the study's tables to the terminal, then their footnotes and
// where each column ran.
func writeFreeElectrons(w io.Writer, s *feSection) {
	fmt.Fprintf(w, "\nraw flash, as the Free Electrons 2010 study tabulated it: medians of up to %d repetitions;\n", s.Reps)
	fmt.Fprintln(w, "rows are MTD partition sizes, columns filesystems; times in s, memory and space in KiB; sums add the medians.")
	for _, t := range s.Tables {
		fmt.Fprintf(w, "\n%s (%s)\n", t.Title, t.Unit)
		rows := [][]string{append([]string{"size"}, t.Columns...)}
		for _, r := range t.Rows {
			row := []string{r.Size}
			for _, c := range r.Cells {
				text := c.Text
				if c.Note > 0 {
					text += " [" + strconv.Itoa(c.Note) + "]"
				}
				row = append(row, text)
			}
			rows = append(rows, row)
		}
		writeTable(w, rows, func(_, _ int, s string) string { return s })
	}
	if len(s.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range s.Notes {
			fmt.Fprintf(w, "[%d] %s\n", n.N, n.Text)
		}
	}
	if len(s.Sources) > 0 {
		fmt.Fprintln(w, "\nran on:")
		for _, src := range s.Sources {
			fmt.Fprintln(w, "  "+src)
		}
	}
}

// skippedOutside are the skipped variants that the raw-flash tables do not already footnote.
func skippedOutside(r *results.Run, fe *feSection) []results.Variant {
	var out []results.Variant
	for _, v := range r.Variants {
		if v.Status == results.Skipped && (fe == nil || !isFlash(v)) {
			out = append(out, v)
		}
	}
	return out
}

// failedOutside are the failed measurements that the raw-flash tables do not already
// footnote.
func failedOutside(r *results.Run, fe *feSection) []results.Measurement {
	var out []results.Measurement
	for _, m := range failedCells(r) {
		if fe == nil || !fe.footnoted[m.Variant+"\x00"+m.Test] {
			out = append(out, m)
		}
	}
	return out
}
