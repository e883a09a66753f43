package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
	"github.com/fsbench/fsbench/internal/verdict"
)

// agedRun is a run with --age: ext4 wins read fresh and loses it aged (3.1x slower), xfs wins
// write both ways.
func agedRun() *results.Run {
	r := &results.Run{Target: results.Target{Kind: "image"}}
	for _, fs := range []string{"ext4", "xfs"} {
		r.Variants = append(r.Variants, results.Variant{Name: fs, FS: fs, Status: results.OK},
			results.Variant{Name: fs + "@aged80", FS: fs, Status: results.OK, Age: "updates:80%:1x", Fresh: fs})
	}
	read := map[string]float64{"ext4": 1.0, "ext4@aged80": 3.1, "xfs": 1.5, "xfs@aged80": 2.0}
	write := map[string]float64{"ext4": 2.0, "ext4@aged80": 2.1, "xfs": 1.2, "xfs@aged80": 1.3}
	for rep := 1; rep <= 5; rep++ {
		for _, v := range r.Variants {
			d := 0.01 * float64(rep)
			r.Measurements = append(r.Measurements,
				results.Measurement{Variant: v.Name, Rep: rep, Test: "read", Status: results.OK, Unit: "s", Value: results.Float(read[v.Name] + d)},
				results.Measurement{Variant: v.Name, Rep: rep, Test: "write", Status: results.OK, Unit: "s", Value: results.Float(write[v.Name] + d)},
				results.Measurement{Variant: v.Name, Rep: rep, Test: "mount", Status: results.OK, Unit: "s", Value: results.Float(0.01)})
			if v.Fresh != "" {
				r.Aging = append(r.Aging, results.Aging{Variant: v.Name, Rep: rep, Status: results.OK,
					Spec: v.Age, Seconds: 60 + float64(rep), FillBytes: 400 << 20, ChurnBytes: 512 << 20, Files: 9000,
					Fullness: 0.83, ListingSHA256: "abc", Layout: &results.AgingLayout{ExtentsPerFile: 1.2, Score: 0.8},
					FsckSeconds: 0.5, MountSeconds: 0.02, Fsck: "clean", CardWA: 2.5, FreeExtents: 300, FreeExtentAvgBytes: 96 << 10})
			}
		}
	}
	return r
}

func TestAgedGolden(t *testing.T) {
	var b bytes.Buffer
	WriteAged(&b, agedRun())
	golden.Check(t, "aged.golden", b.Bytes())
}

func TestAgedVerdicts(t *testing.T) {
	ar := verdict.Aged(agedRun(), 0)
	if ar == nil || len(ar.Verdicts) != 2 {
		t.Fatalf("verdicts: %+v", ar)
	}
	if v := ar.Verdicts[0]; !strings.Contains(v, "read: fresh: ext4 wins; aged (updates:80%:1x): xfs wins — the ranking changed") {
		t.Errorf("read verdict %q", v)
	}
	if v := ar.Verdicts[1]; !strings.Contains(v, "write: fresh: xfs wins") || !strings.Contains(v, "the same winner") {
		t.Errorf("write verdict %q", v)
	}
	for _, row := range ar.Rows {
		if row.Test == "mount" {
			t.Error("mount is taken before the aging: it must not be compared")
		}
		if row.Test == "read" && row.Fresh == "ext4" && (row.Slowdown() < 3 || row.Slowdown() > 3.2 || !row.Cmp.Significant()) {
			t.Errorf("ext4 read: %.2fx, significant %v; want about 3.1x and significant", row.Slowdown(), row.Cmp.Significant())
		}
	}
	// A run without --age has no section.
	r := agedRun()
	r.Variants = r.Variants[:1]
	if verdict.Aged(r, 0) != nil {
		t.Error("a run without aged twins got an aged section")
	}
	// Repetitions that made different trees are flagged.
	r = agedRun()
	r.Aging[1].ListingSHA256 = "def"
	var b bytes.Buffer
	WriteAged(&b, r)
	if !strings.Contains(b.String(), "aged trees differ") {
		t.Error("differing listings were not flagged")
	}
}

// TestVerdictsKeepAgedTwinsApart: a fresh variant and its aged twin are two states of one
// filesystem, so no verdict ranks one against the other: the fresh variants are judged among
// themselves, the aged ones among themselves under "(aged)" priorities.
// A repetition the machine was busy in is left out of fresh against aged, as every verdict
// leaves it out: here the busy ones would turn ext4's aged read from 3.1x slower into faster
// than fresh, and the read ranking with it.
func TestAgedLeavesBusyOut(t *testing.T) {
	r := agedRun()
	for i, m := range r.Measurements {
		if m.Variant == "ext4@aged80" && m.Test == "read" && m.Rep <= 2 {
			r.Measurements[i].Value = results.Float(0.1)
			r.Measurements[i].Noise = &results.Noise{Busy: true, Why: "other processes 90 % of a CPU"}
		}
	}
	ar := verdict.Aged(r, 0)
	var row *verdict.AgedRow
	for i := range ar.Rows {
		if ar.Rows[i].Test == "read" && ar.Rows[i].Fresh == "ext4" {
			row = &ar.Rows[i]
		}
	}
	if row == nil || row.Busy != 2 || row.Cmp.New.N != 3 || row.Slowdown() < 3 {
		t.Fatalf("ext4 read fresh against aged: %+v; want 2 busy left out, 3 aged repetitions, about 3.1x slower", row)
	}
	if v := ar.Verdicts[0]; !strings.Contains(v, "the ranking changed") {
		t.Errorf("read verdict %q: the busy repetitions changed it", v)
	}
	var b bytes.Buffer
	WriteAged(&b, r)
	if !strings.Contains(b.String(), "(2 busy left out)") {
		t.Errorf("the table does not say what it left out:\n%s", b.String())
	}
}

func TestVerdictsKeepAgedTwinsApart(t *testing.T) {
	vs := verdict.Verdicts(agedRun(), 0)
	var fresh, aged int
	for _, v := range vs {
		names := []string{v.Winner, v.RunnerUp}
		for _, c := range v.Tied {
			names = append(names, c.Name)
		}
		isAged := strings.HasSuffix(v.Priority, " (aged)")
		if isAged {
			aged++
		} else {
			fresh++
		}
		for _, n := range names {
			if n != "" && strings.Contains(n, "@aged") != isAged {
				t.Errorf("verdict %q names %s: fresh and aged variants ranked together", v.Priority, n)
			}
		}
	}
	if fresh == 0 || aged == 0 || fresh != aged {
		t.Errorf("%d fresh and %d aged verdicts, want the same non-zero number of each", fresh, aged)
	}
	// A run without aged twins keeps its priorities as they were.
	r := agedRun()
	r.Variants = []results.Variant{r.Variants[0], r.Variants[2]}
	for _, v := range verdict.Verdicts(r, 0) {
		if strings.Contains(v.Priority, "aged") {
			t.Errorf("a run without --age got verdict %q", v.Priority)
		}
	}
}

// TestAgedHTMLGolden: the HTML page of a run with --age has the aged section, with the same
// tables and verdicts as the terminal's.
func TestAgedHTMLGolden(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, agedRun(), HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`<h2 id="aged">Aged (updates:80%:1x) against fresh</h2>`, "the ranking changed", "<td>ext4@aged80</td>", "3.04× worse"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	golden.Check(t, "aged.html.golden", b.Bytes())
}
