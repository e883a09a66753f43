package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// A suite only this test knows, registered in one line as a suite's package does: its test
// writes files and reports files per second. That it runs through the engine and shows its
// rows and its verdict in the terminal summary and the HTML page, with its sizes in
// results.json, shows that a new suite needs no change to the engine, the runner or the
// report.
const fakeSuite = "test-touch"

// fakeParams are the fake suite's sizes: its [test-touch] table.
type fakeParams struct {
	Files int `json:"files"`
}

var fakeEntry = catalog.Test{Name: "test_touch_files", Unit: catalog.FilesPerSec, Better: catalog.HigherIsBetter, Quantity: catalog.Rate,
	Title: "files touched", Doc: "a test's own suite: create empty files, syncfs timed"}

func init() {
	suites.Register(suites.Suite{Name: fakeSuite, Rank: 1000, Title: "a suite registered by a test",
		Tests:    []suites.Test{{Test: fakeEntry, Run: touchFiles}},
		Params:   &fakeParams{Files: 10},
		Verdicts: verdict.PerTest([]string{fakeEntry.Name}),
		Tables:   suites.RateTable(fakeSuite, "a suite registered by a test", []string{fakeEntry.Name}, nil),
	})
}

// touchFiles creates the configured number of empty files and makes them durable.
func touchFiles(_ context.Context, r suites.Rep) ([]results.Measurement, error) {
	n := r.Params(fakeSuite).(*fakeParams).Files
	dir := filepath.Join(r.Mountpoint(), "touch")
	m, err := r.Timed(fakeEntry.Name, 0, func() error {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		for i := range n {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644); err != nil {
				return err
			}
		}
		f, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
	if err != nil {
		return nil, err
	}
	m.Unit, m.Value = catalog.FilesPerSec, results.Float(float64(n)/m.WallSeconds)
	return []results.Measurement{m}, nil
}

func TestSuiteOfATestRunsThroughTheEngine(t *testing.T) {
	needRoot(t)
	cfg := smallConfig()
	cfg.Suite = plan.Suites{fakeSuite}
	cfg.Variants = []plan.Variant{{Name: "ext4", FS: "ext4"}, {Name: "ext2", FS: "ext2"}}
	if err := cfg.Params.Set(fakeSuite, "files", 64); err != nil {
		t.Fatal(err)
	}
	r := runAndLoad(t, cfg)
	for _, v := range cfg.Variants {
		if vs := r.Values(v.Name, fakeEntry.Name); len(vs) != 1 || vs[0] <= 0 {
			t.Errorf("%s: %s figures %v, want one rate", v.Name, fakeEntry.Name, vs)
		}
	}
	var c struct {
		Params map[string]json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(r.Config, &c); err != nil {
		t.Fatal(err)
	}
	var got fakeParams
	if err := json.Unmarshal(c.Params[fakeSuite], &got); err != nil || got.Files != 64 || len(c.Params) != 1 {
		t.Errorf("results.json's params = %s (%v), want only the suite's own with files 64", c.Params[fakeSuite], err)
	}
	var sum bytes.Buffer
	if err := report.Summary(&sum, r); err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := report.HTML(&page, r, report.HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verdict, " + fakeSuite + " suite:", "files touched:", fakeSuite + ": a suite registered by a test (medians", "test_touch_files     ext4  "} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, sum.String())
		}
	}
	for _, want := range []string{`<h2 id="suite-` + fakeSuite + `">`, "<td>test_touch_files</td><td>ext2</td>", fakeSuite + ": a suite registered by a test</th>", "<td>files touched</td>"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
