package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
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

// TestOtherSuitesAreRates checks what the other suites' tables say by heading their figures
// "rate": every test of those suites is a rate, higher is better.
func TestOtherSuitesAreRates(t *testing.T) {
	for _, name := range otherSuites {
		for _, test := range catalog.MustSuite(name).Tests {
			if c := catalog.Get(test); c.Quantity != catalog.Rate || c.Better != catalog.HigherIsBetter {
				t.Errorf("%s of suite %s: %v, %v; the table shows it as a rate", test, name, c.Quantity, c.Better)
			}
		}
	}
}

func TestClassVerdict(t *testing.T) {
	cls := catalog.AppClasses()
	tests := []struct {
		pass []bool
		want string
	}{
		{[]bool{true, true}, "A2 pass (and A1)"},
		{[]bool{true, false}, "A1 pass, A2 fail"},
		{[]bool{false, false}, "A1 fail, A2 fail"},
	}
	for _, tc := range tests {
		if got := classVerdict(cls, tc.pass); got != tc.want {
			t.Errorf("classVerdict(%v) = %q, want %q", tc.pass, got, tc.want)
		}
	}
}
