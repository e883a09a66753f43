package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// FreeElectronsRules explains the raw-flash tables, for the report footer.
const FreeElectronsRules = `Raw flash tables: the layout of the Free Electrons flash filesystem benchmarks (ELCE 2010): ` +
	`init_time is loading and initialising the filesystem driver (for ubifs with the UBI attach), init_mem the memory that took, ` +
	`mount_time and mount_mem the same for the mount, used_space what df reports after the write, ` +
	`read_time, remove_time and write_time reading, removing and writing the compressible tree, video_write_time writing incompressible files. ` +
	`Each cell is the median over the repetitions after the warm-up; the two sum tables add the medians of their parts, ` +
	`and show a part's status when it has none. Memory figures are differences of the kernel's free memory and may be negative. ` +
	`Unlike the block matrix these tables carry no ratings: the study compared how each filesystem scales with the partition size.`

// HTMLOptions change what HTML writes.
type HTMLOptions struct {
	// JSONLink and CSVLink are the (relative) links to the raw files; default "results.json"
	// and "results.csv", right for a report written next to them.
	JSONLink, CSVLink string
	// Alpha is the significance level (0: stats.DefaultAlpha).
	Alpha float64
	// Card is the card profile flash wear is rated on (the --card flag); "" means the
	// simulated card's own profile for a simcard run, else DefaultCard (see CardFor).
	Card string
}

// SignificanceRules explains the significance figures, for the report footer.
const SignificanceRules = `Significance: two-sided Mann-Whitney U test, as benchstat (golang.org/x/perf) computes it: exact for small samples, ` +
	`"~" or "not significant" when p > 0.05. The U test needs no assumption about the distribution of timings, ` +
	`but it needs enough repetitions: with 3 per side the smallest possible p is 0.1, so nothing can be significant ` +
	`at 0.05; fsbench then says "need >= 4 repetitions per side" instead of guessing. Medians are the headline figures; ` +
	`the whiskers in the charts are the minimum and maximum.`

// HTML writes the report of one run as one self-contained page: inline CSS, no script, no
// external resource, readable on a phone (tables scroll sideways) and printable. The output
// depends only on r and opt.
func HTML(w io.Writer, r *results.Run, opt HTMLOptions) error {
	if opt.JSONLink == "" {
		opt.JSONLink = "results.json"
	}
	if opt.CSVLink == "" {
		opt.CSVLink = "results.csv"
	}
	if opt.Alpha <= 0 {
		opt.Alpha = stats.DefaultAlpha
	}
	page, err := buildPage(r, opt)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, page); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

type htmlPage struct {
	Title, Question, Setup string
	Verdicts               []htmlVerdict
	Head                   []htmlHead
	Rows                   []htmlRow
	Charts                 []htmlChart
	Skipped                []results.Variant
	Failed                 []results.Measurement
	// NoProblems is what the problems section says when Skipped and Failed are empty.
	NoProblems        string
	Raw               []htmlRaw
	JSONLink, CSVLink string
	Rules             []string
	Legend            []htmlCell
	Suites            []htmlSuite
	Aged              *htmlAged
	Flash             *htmlFlash
	// FE holds the raw-flash variants as the Free Electrons 2010 study's tables.
	FE *feSection
	// ShowSource adds the column saying where each variant ran (kernel, host or guest).
	ShowSource bool
	// Busy says how busy the machine was with other work (BusyText); Marks explains the
	// marks of the matrix's cells; GuestHint offers a guest run for the filesystems this kernel
	// lacks.
	Busy, Marks, GuestHint string
	// Server says when a simulated card's server could not keep up with its model (ServerNote).
	Server string
	// ShowLabel adds the column with the label of the run each variant came from, and Runs
	// lists those runs, when a merge labelled them (fsbench merge --label: one card per run).
	ShowLabel bool
	Runs      []mergedRun
}

// htmlVerdict is a verdict (worded by Verdict.Words, as in the terminal) with, on the first
// verdict of a suite's own, the suite's name and title.
type htmlVerdict struct {
	verdict.Verdict
	SuiteHead string
}

// htmlFlash is the "What the flash sees" section: what the block requests of the write tests
// were and what they did to the card models.
type htmlFlash struct {
	Card   string
	Tests  string // the write tests, as the paragraph names them
	Charts []htmlChart
	Cards  []string  // every profile the traces were replayed through, for the table
	Rows   []cardRow // per variant, one cell per entry of Cards
}

type htmlHead struct {
	Title, Long, Unit string
	Higher            bool
}

type htmlRow struct {
	Variant, Detail string
	Source          string // where it ran, when the run mixes kernels or ran in a guest
	Label           string // the label of its run, in a labelled merge
	Cells           []htmlCell
}

type htmlCell struct {
	Text, Rating, Title string
	Style               template.CSS
}

type htmlChart struct {
	ID, Title string
	SVG       template.HTML
}

type htmlRaw struct {
	Variant, Test, Rep, Status, Value, Unit, Wall, MBps, DevRead, DevWrite, Note string
}

// buildPage gathers what the page shows. The matrix, verdicts, charts and the other suites
// are made of the block variants; the raw-flash variants have the study's tables.
func buildPage(full *results.Run, opt HTMLOptions) (p htmlPage, err error) {
	p = htmlPage{JSONLink: opt.JSONLink, CSVLink: opt.CSVLink}
	r := blockRun(full)
	p.FE = freeElectrons(full)
	p.ShowSource = verdict.Sources(full) != nil
	lab := labels(full)
	p.ShowLabel, p.Runs = lab != nil, mergedRuns(full)
	ran := verdict.RanVariants(r)
	p.Title = "fsbench: which filesystem for " + deviceName(r) + "?"
	p.question(r, ran)
	p.Setup = setupLine(full)
	card := verdict.CardFor(r, opt.Card)
	p.verdicts(verdict.VerdictsFor(r, opt.Alpha, card, registered()))
	p.Busy = verdict.BusyText(r)
	p.Server = verdict.ServerNote(r)
	p.matrix(full, r, ran, card, opt.Alpha)
	if err := p.charts(r, opt.Alpha); err != nil {
		return p, err
	}
	if p.Flash, err = flashSection(r, card, opt.Alpha); err != nil {
		return p, err
	}

	p.Skipped = skippedOutside(full, p.FE)
	p.GuestHint = GuestHint(full)
	p.Failed = failedOutside(full, p.FE)
	p.NoProblems = "None: every variant ran and every cell completed."
	if p.FE != nil && len(p.FE.Notes) > 0 {
		p.NoProblems = "None outside the raw flash tables; their notes say what was skipped or failed there."
	}
	if p.Suites, err = htmlSuites(r); err != nil {
		return p, err
	}
	p.Aged = agedSection(r, opt.Alpha)
	p.Raw = rawRows(full)
	p.rules(full, r)
	return p, nil
}

// question is the page's question: the device, the variants compared and the raw-flash ones.
func (p *htmlPage) question(r *results.Run, ran []results.Variant) {
	names := make([]string, 0, len(ran))
	for _, v := range ran {
		names = append(names, v.Name)
	}
	p.Question = fmt.Sprintf("Which filesystem should go on %s?", deviceName(r))
	if len(ran) > 0 || p.FE == nil {
		p.Question += fmt.Sprintf(" %d variants compared: %s.", len(ran), strings.Join(names, ", "))
	}
	if p.FE != nil {
		p.Question += fmt.Sprintf(" Raw flash: %s, on partitions of %s.", strings.Join(p.FE.Columns, ", "), strings.Join(p.FE.Sizes, ", "))
	}
}

// verdicts lists the verdicts, each suite's first with the suite's heading.
func (p *htmlPage) verdicts(vs []verdict.Verdict) {
	suite := ""
	for _, v := range vs {
		hv := htmlVerdict{Verdict: v}
		if v.Suite != suite {
			suite = v.Suite
			s, _ := suites.Lookup(suite)
			hv.SuiteHead = suite + ": " + s.Title
		}
		p.Verdicts = append(p.Verdicts, hv)
	}
}

// matrix fills the matrix's heads and rows: the rated medians of the variants that ran, a
// Status where a cell has none, and the legend.
func (p *htmlPage) matrix(full, r *results.Run, ran []results.Variant, card string, alpha float64) {
	src, lab := verdict.Sources(full), labels(full)
	var cols []verdict.Metric
	for _, m := range verdict.MatrixFor(r, card, registered()) {
		if verdict.Present(r, m) && !(m.Key == verdict.MBoot.Key && !anyModuleLoad(r)) {
			cols = append(cols, m)
			p.Head = append(p.Head, htmlHead{Title: m.Label, Long: m.Title, Unit: m.Unit, Higher: m.HigherBetter()})
		}
	}
	tables := make([]verdict.Ranking, len(cols))
	for i, m := range cols {
		tables[i] = verdict.Evaluate(r, m, alpha)
	}
	for _, v := range ran {
		row := htmlRow{Variant: v.Name, Detail: variantDetail(v), Source: src[v.Name], Label: lab[v.Name]}
		for i, t := range tables {
			c, ok := t.Cells[v.Name]
			if !ok {
				row.Cells = append(row.Cells, htmlCell{Text: verdict.Status(r, v.Name, cols[i])})
				continue
			}
			cell := ratedCell(c, cols[i].Unit)
			if mk := marks(t, v); mk != "" {
				cell.Text += " " + mk
				cell.Title += "; " + marksLegend([]verdict.Ranking{t}, []results.Variant{v})
			}
			row.Cells = append(row.Cells, cell)
		}
		p.Rows = append(p.Rows, row)
	}
	p.Marks = marksLegend(tables, ran)
	if !anyModuleLoad(r) && len(ran) > 0 {
		p.Marks = strings.TrimPrefix(p.Marks+"; boot time (module load + mount) is the mount time here: every filesystem was built in or already loaded", "; ")
	}
	for rt := verdict.Best; rt <= verdict.Worst; rt++ {
		p.Legend = append(p.Legend, htmlCell{Text: rt.String(), Style: cellStyle(rt)})
	}
}

// charts draws a bar chart per charted figure that has data.
func (p *htmlPage) charts(r *results.Run, alpha float64) error {
	charted := verdict.ChartMetrics
	for _, s := range registered() {
		for _, m := range s.Matrix {
			if verdict.Present(r, m) {
				charted = append(slices.Clone(charted), m)
			}
		}
	}
	for _, m := range charted {
		c, ok, err := barChart(verdict.Evaluate(r, m, alpha))
		if err != nil {
			return err
		}
		if ok {
			p.Charts = append(p.Charts, c)
		}
	}
	return nil
}

// rules are the page's notes on how its figures were made and rated, for the sections it has.
func (p *htmlPage) rules(full, r *results.Run) {
	if len(p.Rows) > 0 {
		// The rules of the matrix and verdicts, which a run of raw-flash variants only lacks.
		p.Rules = []string{verdict.RatingRules, verdict.VerdictRules, SignificanceRules, verdict.WearRules, verdict.CardTimeRules,
			"Throughputs (MB/s) are the bytes the test moved through the filesystem over its wall time; read-write variants " +
				"store several copies of the dataset and read-only images one, so seconds would not compare but MB/s do. " +
				"Space is the used bytes (statfs) over the logical bytes stored."}
	}
	if p.FE != nil {
		p.Rules = append(p.Rules, FreeElectronsRules)
	}
	for _, s := range suites.All() {
		if s.Rules != nil {
			if rule := s.Rules(r); rule != "" {
				p.Rules = append(p.Rules, rule)
			}
		}
	}
	if verdict.Sources(full) != nil {
		p.Rules = append(p.Rules, "Where rows ran: "+verdict.GroupRule+".")
	}
	if s := r.Methods["lifetime"]; s != "" {
		p.Rules = append(p.Rules, "Lifetime, as the run computed it: "+s+".")
	}
}

// barChart draws t (variants best first) as a bar chart; ok is false when no variant has data.
func barChart(t verdict.Ranking) (htmlChart, bool, error) {
	if len(t.Order) == 0 {
		return htmlChart{}, false, nil
	}
	var bars []Bar
	for _, name := range t.Order {
		c := t.Cells[name]
		bars = append(bars, Bar{Label: name, Median: c.Summary.Median, Min: c.Summary.Min, Max: c.Summary.Max, N: c.Summary.N, Rating: c.Rating})
	}
	var svg bytes.Buffer
	if err := WriteBarChart(&svg, t.Metric.Title, t.Metric.Unit, t.Metric.HigherBetter(), bars); err != nil {
		return htmlChart{}, false, err
	}
	// The SVG is built by WriteBarChart, which escapes every piece of text it writes.
	return htmlChart{ID: "chart-" + t.Metric.Key, Title: t.Metric.Title, SVG: template.HTML(svg.String())}, true, nil
}

// flashSection builds the charts and the per-profile table of what the flash sees; nil when
// the run recorded no block-request trace.
func flashSection(r *results.Run, card string, alpha float64) (*htmlFlash, error) {
	if !verdict.Traced(r) {
		return nil, nil
	}
	// The card rated on comes first in the table: on a phone the others scroll out of view.
	f := &htmlFlash{Card: card, Tests: strings.Join(verdict.WriteTests, ", ")}
	cards := verdict.ReplayedCards(r)
	if slices.Contains(cards, card) {
		f.Cards = append(f.Cards, card)
	}
	for _, c := range cards {
		if c != card {
			f.Cards = append(f.Cards, c)
		}
	}
	for _, m := range []verdict.Metric{verdict.BlockAmpMetric(r), verdict.CardWAMetric(r, card)} {
		c, ok, err := barChart(verdict.Evaluate(r, m, alpha))
		if err != nil {
			return nil, err
		}
		if ok {
			f.Charts = append(f.Charts, c)
		}
	}
	if rows := writeSizes(r); len(rows) > 0 {
		const title = "request sizes of the write tests"
		var svg bytes.Buffer
		if err := WriteSizeChart(&svg, title, rows); err != nil {
			return nil, err
		}
		// WriteSizeChart escapes every piece of text it writes.
		f.Charts = append(f.Charts, htmlChart{ID: "chart-write-sizes", Title: title, SVG: template.HTML(svg.String())})
	}
	f.Rows = cardTable(r, f.Cards, alpha)
	return f, nil
}

func ratedCell(c verdict.Rated, unit string) htmlCell {
	title := fmt.Sprintf("median of %d; min %s, max %s", c.Summary.N, format(c.Summary.Min), format(c.Summary.Max))
	if c.Rating != 0 {
		title += "; " + figure.Ratio(c.Ratio) + " the best"
	}
	if c.TiedWith != "" {
		title += "; within noise of " + c.TiedWith
	}
	cell := htmlCell{Text: format(c.Summary.Median) + " " + unit, Rating: c.Rating.String(), Title: title}
	if c.Rating != 0 {
		cell.Style = cellStyle(c.Rating)
	}
	return cell
}

func cellStyle(rt verdict.Rating) template.CSS {
	// Built from fixed colour constants only.
	return template.CSS("background:" + ratingColors[rt] + ";color:" + ratingInk(rt))
}

func setupLine(r *results.Run) string {
	var parts []string
	parts = append(parts, "Device: "+TargetText(r))
	parts = append(parts, "kernel "+r.Machine.Kernel+" ("+r.Machine.Arch+")")
	d := r.Dataset
	ds := fmt.Sprintf("dataset: %s, %d files, %s", d.Kind, d.Files, bytesize.Format(d.Bytes))
	if d.Copies > 0 {
		ds += fmt.Sprintf(" × %d copies", d.Copies)
	}
	if d.Compressibility > 0 {
		ds += fmt.Sprintf(", compresses to %.0f %%", 100*d.Compressibility)
	}
	if d.VideoBytes > 0 {
		ds += fmt.Sprintf("; video %s × %d", bytesize.Format(d.VideoBytes), d.VideoCopies)
	}
	parts = append(parts, ds)
	parts = append(parts, fmt.Sprintf("%d repetitions", verdict.Repetitions(r)))
	if !r.Started.IsZero() {
		parts = append(parts, "started "+r.Started.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if r.Status != "" && r.Status != results.RunComplete {
		parts = append(parts, "run "+r.Status)
	}
	return strings.Join(parts, " · ")
}

// variantDetail is the small text under a variant's name: its filesystem and options. A
// variant named after its filesystem with no options gets none, since "ext4 / ext4" says the
// same thing twice.
func variantDetail(v results.Variant) string {
	if v.Name == v.FS && len(v.MkfsArgs) == 0 && v.MountOptions == "" && !v.ReadOnly {
		return ""
	}
	s := v.FS
	if len(v.MkfsArgs) > 0 {
		s += " " + strings.Join(v.MkfsArgs, " ")
	}
	if v.MountOptions != "" {
		s += ", -o " + v.MountOptions
	}
	if v.ReadOnly {
		s += " (read-only)"
	}
	return s
}

func rawRows(r *results.Run) []htmlRaw {
	ms := append([]results.Measurement(nil), r.Measurements...)
	order := map[string]int{}
	for i, v := range r.Variants {
		order[v.Name] = i
	}
	// Stable: the file's order within a variant is the suite's.
	sort.SliceStable(ms, func(i, j int) bool { return order[ms[i].Variant] < order[ms[j].Variant] })
	var out []htmlRaw
	for _, m := range ms {
		row := htmlRaw{Variant: m.Variant, Test: m.Test, Rep: strconv.Itoa(m.Rep), Status: m.Status, Unit: m.Unit, Note: m.Note}
		if m.Warmup {
			row.Rep += " (warm-up)"
		}
		if m.Error != "" {
			row.Note = m.Error
		}
		if m.Value != nil {
			// Sizes in binary units, other figures with three significant digits: never an
			// exponent (1.15557e+08 bytes was unreadable).
			switch v := *m.Value; {
			case m.Unit == "bytes" && v >= 0:
				row.Value, row.Unit = bytesize.Format(uint64(v)), ""
			case m.Unit == "bytes":
				row.Value, row.Unit = "-"+bytesize.Format(uint64(-v)), ""
			default:
				row.Value = format(v)
			}
		}
		if m.WallSeconds > 0 {
			row.Wall = strconv.FormatFloat(m.WallSeconds, 'f', 4, 64)
		}
		if m.MBps > 0 {
			row.MBps = format(m.MBps)
		}
		if m.Device != nil {
			row.DevRead, row.DevWrite = bytesize.Format(m.Device.ReadBytes), bytesize.Format(m.Device.WriteBytes)
		}
		out = append(out, row)
	}
	return out
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; }
body { font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #111; background: #fff; margin: 0 auto; max-width: 78rem; padding: 0.75rem 1rem 2rem; }
h1 { font-size: 1.5rem; margin: 0.5rem 0; }
h2 { font-size: 1.2rem; margin: 1.6rem 0 0.5rem; border-bottom: 1px solid #ccc; padding-bottom: 0.2rem; }
p.question { font-size: 1.05rem; margin: 0.2rem 0; }
p.setup { color: #444; font-size: 0.9rem; margin: 0.2rem 0 1rem; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.45rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num, th.num { text-align: right; white-space: nowrap; }
table.matrix th.num { white-space: normal; min-width: 4.5rem; }
td.rated { text-align: center; white-space: nowrap; }
td.rated small, td.variant small { display: block; font-size: 0.75rem; }
td.variant small { color: #555; }
td.variant { white-space: nowrap; }
table.verdict td:first-child { font-weight: bold; white-space: nowrap; }
.winner { font-weight: bold; font-size: 1.05rem; white-space: nowrap; }
.tie { font-style: italic; }
th.suite-head { text-align: left; padding-top: 0.8rem; }
.muted { color: #555; }
.busy { background: #fff4d6; border-left: 4px solid #c98a00; padding: 0.4rem 0.7rem; }
.legend span { display: inline-block; padding: 0.1rem 0.45rem; margin: 0.1rem; border-radius: 3px; font-size: 0.85rem; }
figure { margin: 1rem 0; max-width: 44rem; break-inside: avoid; page-break-inside: avoid; }
table.raw { font-size: 0.8rem; }
.fe-tables { display: flex; flex-wrap: wrap; gap: 0 1.5rem; align-items: flex-start; }
table.fe caption { text-align: left; font-weight: bold; padding: 0.6rem 0 0.25rem; }
footer { margin-top: 2rem; font-size: 0.88rem; color: #333; }
@media (max-width: 40rem) {
  body { font-size: 15px; padding: 0.5rem; }
  th, td { padding: 0.25rem 0.35rem; }
  /* The verdict becomes one card per priority instead of a table too wide to read. */
  table.verdict, table.verdict tbody, table.verdict tr, table.verdict td { display: block; }
  table.verdict tr:first-child { display: none; }
  table.verdict tr { border-bottom: 1px solid #ccc; padding: 0.3rem 0; }
  table.verdict td { border: none; padding: 0.1rem 0.3rem; }
  table.verdict td[data-label]::before { content: attr(data-label) ": "; color: #555; font-size: 0.85rem; }
}
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  .scroll { overflow: visible; }
  h2 { break-after: avoid; page-break-after: avoid; }
  table.raw { font-size: 7pt; }
  a { color: inherit; text-decoration: none; }
}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="question">{{.Question}}</p>
<p class="setup">{{.Setup}}</p>
{{if .Busy}}<p class="busy"><strong>Note:</strong> {{.Busy}}.</p>{{end}}{{if .Server}}<p class="busy"><strong>Note:</strong> {{.Server}}.</p>{{end}}
{{if .Runs}}<p class="setup">Merged from {{len .Runs}} runs, each with the rows it measured:</p>
<ul class="muted">
{{range .Runs}}<li><b>{{.Label}}</b>: {{.Dir}}, {{.Where}}: {{range $i, $v := .Variants}}{{if $i}}, {{end}}{{$v}}{{end}}</li>
{{end}}</ul>
{{end}}
{{if .Rows}}<h2 id="verdict">Verdict</h2>
<div class="scroll">
<table class="verdict">
<tr><th>If you care most about</th><th>verdict</th><th>margin</th><th>is the difference real?</th></tr>
{{range .Verdicts}}{{if .SuiteHead}}<tr><th colspan="4" class="suite-head">{{.SuiteHead}}</th></tr>
{{end}}<tr><td>{{.Priority}}</td>{{if .Winner}}<td data-label="verdict">{{if .Words.Clear}}<span class="winner">{{.Words.Head}}</span>{{else}}<span class="tie">{{.Words.Head}}</span>{{end}}<br><small class="muted">by {{.Basis}}</small></td><td data-label="margin">{{.Words.Margin}}{{if .Words.Note}}<br><small class="muted">{{.Words.Note}}</small>{{end}}{{if .Detail}}<br><small class="muted">{{.Detail}}</small>{{end}}</td><td data-label="real?">{{.Words.Significance}}</td>{{else}}<td colspan="3" class="muted">{{.Words.Head}}</td>{{end}}</tr>
{{end}}</table>
</div>

<h2 id="matrix">Observations</h2>
<p class="legend">Medians (↑ higher is better, ↓ lower is better); colour and word are the rating, from the ratio to the best median of each column (rules at the end):
{{range .Legend}}<span style="{{.Style}}">{{.Text}}</span>{{end}}{{if .Marks}}<br><small class="muted">{{.Marks}}</small>{{end}}</p>
<div class="scroll">
<table class="matrix">
<tr><th>variant</th>{{if .ShowLabel}}<th>run</th>{{end}}{{if .ShowSource}}<th>ran on</th>{{end}}{{range .Head}}<th class="num" title="{{.Long}}">{{.Title}}<br><small>{{.Unit}}{{if .Higher}} ↑{{else}} ↓{{end}}</small></th>{{end}}</tr>
{{range .Rows}}<tr><td class="variant">{{.Variant}}{{with .Detail}}<small>{{.}}</small>{{end}}</td>{{if $.ShowLabel}}<td class="variant">{{.Label}}</td>{{end}}{{if $.ShowSource}}<td class="variant">{{.Source}}</td>{{end}}{{range .Cells}}{{if .Rating}}<td class="rated" style="{{.Style}}" title="{{.Title}}">{{.Text}}<small>{{.Rating}}</small></td>{{else}}<td class="rated muted">{{.Text}}</td>{{end}}{{end}}</tr>
{{end}}</table>
</div>

{{end}}{{with .FE}}<h2 id="raw-flash">Raw flash, in the Free Electrons 2010 tables</h2>
<p class="muted">One table per test, as the study had them: rows are MTD partition sizes, columns filesystems. Medians of up to {{.Reps}} repetitions; times in seconds, memory and space in KiB (the study's KB); the sums add the two medians.</p>
<div class="fe-tables">
{{range .Tables}}<div class="scroll">
<table class="fe" id="fe-{{.ID}}">
<caption>{{.Title}} ({{.Unit}})</caption>
<tr><th>size</th>{{range .Columns}}<th class="num">{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.Size}}</th>{{range .Cells}}<td class="num{{if not .Num}} muted{{end}}">{{.Text}}{{if .Note}}<sup><a href="#fe-note-{{.Note}}">{{.Note}}</a></sup>{{end}}</td>{{end}}</tr>
{{end}}</table>
</div>
{{end}}</div>
{{if .Notes}}<ol class="notes">
{{range .Notes}}<li id="fe-note-{{.N}}">{{.Text}}</li>
{{end}}</ol>
{{end}}{{if .Sources}}<p>Where each filesystem ran:</p>
<ul>
{{range .Sources}}<li>{{.}}</li>
{{end}}</ul>
{{end}}
{{end}}{{range .Suites}}<h2 id="{{.ID}}">{{.Title}}</h2>
{{if .Caption}}<p class="muted">{{.Caption}}</p>
{{end}}<div class="scroll">
<table class="suite">
<tr>{{range .Columns}}<th{{if .Num}} class="num"{{end}}>{{.Text}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}</tr>
{{end}}</table>
</div>
{{if .Notes}}<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Charts}}<figure>{{.}}</figure>
{{end}}{{end}}{{with .Aged}}<h2 id="aged">Aged ({{.Spec}}) against fresh</h2>
<p class="muted">Each aged variant was aged before the measured tests of every repetition; medians over the repetitions.</p>
<div class="scroll">
<table class="suite">
{{range $i, $r := .Tables.Agings}}<tr>{{range $r}}{{if lt $i 2}}<th>{{.}}</th>{{else}}<td>{{.}}</td>{{end}}{{end}}</tr>
{{end}}</table>
</div>
{{if .Tables.Notes}}<ul>{{range .Tables.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if gt (len .Tables.Tests) 1}}<div class="scroll">
<table class="suite">
{{range $i, $r := .Tables.Tests}}<tr>{{range $r}}{{if eq $i 0}}<th>{{.}}</th>{{else}}<td>{{.}}</td>{{end}}{{end}}</tr>
{{end}}</table>
</div>
<p class="muted">{{.Legend}}</p>{{end}}
{{if .Verdicts}}<p>Ranking, fresh against aged:</p>
<ul>{{range .Verdicts}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{end}}{{if .Charts}}<h2 id="charts">Charts</h2>
<p class="muted">One chart per test, best first: the bar is the median, the whisker the minimum and maximum.</p>
{{range .Charts}}<figure id="{{.ID}}">
{{.SVG}}</figure>
{{end}}
{{end}}{{with .Flash}}<h2 id="flash">What the flash sees</h2>
<p class="muted">The block requests of the write tests ({{.Tests}}), traced at the device and replayed through the card models. Block amplification: device bytes per byte written through the filesystem. Write amplification inside the card: flash bytes programmed per byte the device received, on {{.Card}}.</p>
{{range .Charts}}<figure id="{{.ID}}">
{{.SVG}}</figure>
{{end}}{{if .Rows}}<div class="scroll">
<table class="cards">
<tr><th rowspan="2">variant</th>{{range .Cards}}<th colspan="3">{{.}}</th>{{end}}</tr>
<tr>{{range .Cards}}<th class="num" title="write amplification inside the card: flash bytes programmed per byte the device received">card WA ↓</th><th class="num" title="flash bytes programmed per byte written through the filesystem">wear ↓</th><th class="num" title="years, with the write tests once a day">years ↑</th>{{end}}</tr>
{{range .Rows}}<tr><td class="variant">{{.Variant}}</td>{{range .Cells}}<td class="num">{{.WA}}</td><td class="num">{{.Wear}}</td><td class="num">{{.Life}}</td>{{end}}</tr>
{{end}}</table>
</div>
<p class="muted">Medians over the repetitions; card WA and wear in bytes per byte, lifetime in years with the three write tests once a day (rules at the end).</p>
{{end}}{{end}}<h2 id="problems">Skipped variants and failed cells</h2>
{{if or .Skipped .Failed}}{{if .Skipped}}<ul>
{{range .Skipped}}<li><b>{{.Name}}</b> skipped: {{.Reason}}</li>
{{end}}{{if .GuestHint}}<li>{{.GuestHint}}</li>
{{end}}</ul>{{end}}
{{if .Failed}}<ul>
{{range .Failed}}<li><b>{{.Variant}}</b> repetition {{.Rep}}, <b>{{.Test}}</b> failed: {{.Error}}</li>
{{end}}</ul>{{end}}{{else}}<p>{{.NoProblems}}</p>{{end}}

<h2 id="raw">All measurements</h2>
<p>The same figures as files: <a href="{{.JSONLink}}">{{.JSONLink}}</a> (everything, with the machine, device and methods) and <a href="{{.CSVLink}}">{{.CSVLink}}</a> (for spreadsheets).</p>
<div class="scroll">
<table class="raw">
<tr><th>variant</th><th>test</th><th>rep</th><th>status</th><th class="num">value</th><th>unit</th><th class="num">wall s</th><th class="num">MB/s</th><th class="num">device read</th><th class="num">device written</th><th>note</th></tr>
{{range .Raw}}<tr><td>{{.Variant}}</td><td>{{.Test}}</td><td>{{.Rep}}</td><td>{{.Status}}</td><td class="num">{{.Value}}</td><td>{{.Unit}}</td><td class="num">{{.Wall}}</td><td class="num">{{.MBps}}</td><td class="num">{{.DevRead}}</td><td class="num">{{.DevWrite}}</td><td>{{.Note}}</td></tr>
{{end}}</table>
</div>

<footer>
<h2 id="rules">How ratings and verdicts are made</h2>
{{range .Rules}}<p>{{.}}</p>
{{end}}<p class="muted">Written by fsbench from {{.JSONLink}}.</p>
</footer>
</body>
</html>
`))
