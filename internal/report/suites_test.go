package report

import (
	_ "github.com/fsbench/fsbench/internal/suites/all"

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

func bonnieRun() *results.Run {
	params := map[string]float64{"file_bytes": 2 << 30, "chunk_bytes": 8192, "seeks": 8192, "seekers": 3, "files": 102400, "dirs": 100, "seed": 1}
	ms := []struct {
		test     string
		value    float64
		cpu, lat float64
		tooFast  bool
	}{
		{"bonnie_write", 20480.7, 12.9, 0.35, false},
		{"bonnie_rewrite", 10240, 8, 1.5, false},
		{"bonnie_read", 30000, 5, 0.02, false},
		{"bonnie_seeks", 345.67, 3, 120.5, false},
		{"bonnie_seq_create", 0, 0, 0.0004, true},
		{"bonnie_seq_stat", 50000, 99, 0.00002, false},
		{"bonnie_seq_delete", 1234, 40, 0.5, false},
		{"bonnie_rand_create", 1500, 30, 0.25, false},
		{"bonnie_rand_stat", 40000, 98, 0.0001, false},
		{"bonnie_rand_delete", 1100, 35, 0.6, false},
	}
	r := &results.Run{Schema: results.Schema, Variants: []results.Variant{{Name: "ext4/noatime,dirsync", FS: "ext4", Status: results.OK}}}
	for _, m := range ms {
		x := results.Measurement{Variant: "ext4/noatime,dirsync", Test: m.test, Rep: 1, Status: results.OK, Unit: "files/s", Extra: map[string]float64{"cpu_pct": m.cpu, "latency_max_s": m.lat}}
		for k, v := range params {
			x.Extra[k] = v
		}
		if m.tooFast {
			x.Status, x.Note = results.NA, "too fast to measure: took 0.21 s"
		} else {
			x.Value = results.Float(m.value)
		}
		r.Measurements = append(r.Measurements, x)
	}
	r.Measurements = append(r.Measurements, results.Measurement{Variant: "ext4/noatime,dirsync", Test: "mount", Rep: 1, Status: results.OK, Value: results.Float(0.01), Unit: "s"})
	return r
}
