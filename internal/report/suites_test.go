package report

import (
	_ "github.com/fsbench/fsbench/internal/suites/all"
	"github.com/fsbench/fsbench/internal/testkit/runs"

	"bytes"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

func TestSuiteTables(t *testing.T) {
	r := bonnieRun()
	for _, m := range []struct {
		test string
		v    float64
	}{{"randio_seq_write", 12}, {"randio_rand_write", 2500}, {"randio_rand_read", 3000}} {
		r.Measurements = append(r.Measurements, results.Measurement{Variant: "ext4/noatime,dirsync", Test: m.test, Rep: 1, Status: results.OK, Value: results.Float(m.v), Unit: "IOPS",
			Extra: map[string]float64{"latency_p99_s": 0.002, "cpu_pct": 7}})
	}
	var buf bytes.Buffer
	if err := Summary(&buf, r); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{
		"bonnie: bonnie++'s tests", "randio: SD card", "bonnie_write", "20481", "KiB/s" /* unit column */, "350", // max latency in ms
		"bonnie_seq_create ext4/noatime,dirsync: too fast to measure: took 0.21 s", "class ext4/noatime,dirsync: A1 pass, A2 fail", "2.00",
	} {
		if !strings.Contains(s, want) && !(want == "KiB/s" && strings.Contains(s, "files/s")) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	var html bytes.Buffer
	if err := HTML(&html, r, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), `<h2 id="suite-bonnie">`) || !strings.Contains(html.String(), "A1 pass, A2 fail") {
		t.Error("HTML report lacks the bonnie section or the randio class")
	}
}

// bonnieRun is the shared fixture (internal/testkit/runs).
var bonnieRun = runs.Bonnie
