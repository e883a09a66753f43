package export

import (
	bonniesuite "github.com/fsbench/fsbench/internal/suites/bonnie"

	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
)

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

func TestBonnieCSVGolden(t *testing.T) {
	for _, v := range []string{BonnieCSV197, BonnieCSV198} {
		t.Run(v, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := BonnieCSV(&buf, bonnieRun(), v)
			if err != nil || n != 1 {
				t.Fatalf("%d lines, %v", n, err)
			}
			golden.Check(t, "bonnie-"+v+".csv.golden", buf.Bytes())
			recs, err := ParseBonnieCSV(&buf)
			if err != nil || len(recs) != 1 {
				t.Fatalf("parse back: %d records, %v", len(recs), err)
			}
			want := map[string]string{
				"format_version": v, "name": "ext4/noatime+dirsync", "file_size": "2G", "io_chunk_size": "",
				"putc": "", "put_block": "20480", "put_block_cpu": "12", "seeks": "345.7", "num_files": "100", "num_dirs": "100",
				"seq_create": "+++++", "seq_create_cpu": "+++", "ran_del": "1100", "put_block_latency": "350ms",
				"seeks_latency": "120s", "seq_stat_latency": "20us", "rewrite_latency": "1500ms",
			}
			if v == BonnieCSV198 {
				want["seek_count"], want["seek_proc_count"] = "8192", "3"
			}
			for k, w := range want {
				if recs[0][k] != w {
					t.Errorf("%s = %q, want %q", k, recs[0][k], w)
				}
			}
		})
	}
	if _, err := BonnieCSV(&bytes.Buffer{}, bonnieRun(), "2.0"); err == nil {
		t.Error("unknown version accepted")
	}
}

// TestBonCSV2Txt feeds the 1.98 lines to Debian's bon_csv2txt, which checks the version and
// field positions.
func TestBonCSV2Txt(t *testing.T) {
	tool, err := exec.LookPath("bon_csv2txt")
	if err != nil {
		t.Skip("bon_csv2txt not installed (Debian package bonnie++)")
	}
	var buf bytes.Buffer
	if _, err := BonnieCSV(&buf, bonnieRun(), BonnieCSV198); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool)
	cmd.Stdin = &buf
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "Expected") || !strings.Contains(string(out), "20.0m") || !strings.Contains(string(out), "ext4/noa") || !strings.Contains(string(out), "345.7") {
		t.Errorf("bon_csv2txt: %v\n%s", err, out)
	}
}

// TestBonnieFieldsMapped checks that every test of the bonnie suite lands in a rate field of
// bonnie++'s CSV, and that those fields are the format's own.
func TestBonnieFieldsMapped(t *testing.T) {
	mapped := append(bonnieTests(bonnieIOFields), bonnieTests(bonnieFileFields)...)
	for _, test := range bonniesuite.Suite.TestNames() {
		if !slices.Contains(mapped, test) {
			t.Errorf("%s has no field in the bonnie++ CSV", test)
		}
	}
	for _, v := range []string{BonnieCSV197, BonnieCSV198} {
		for _, f := range append(append([]string{}, bonnieIOFields...), bonnieFileFields...) {
			if !slices.Contains(BonnieFields(v), f) {
				t.Errorf("format %s has no field %s", v, f)
			}
		}
	}
}

func TestLAVAGolden(t *testing.T) {
	r := loadRun(t)
	// A failed cell and a skipped variant, as a board run may have them.
	r.Measurements = append(r.Measurements, results.Measurement{Variant: "ext4", Test: "nosuch_test", Rep: 1, Status: results.Failed, Error: "EIO"})
	for _, format := range []string{LAVACommands, LAVAResultTxt} {
		var b bytes.Buffer
		n, err := LAVA(&b, r, format)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 || strings.Count(b.String(), "\n") != n {
			t.Errorf("%s: %d results, %d lines", format, n, strings.Count(b.String(), "\n"))
		}
		golden.Check(t, "lava-"+strings.ReplaceAll(format, ".", "_")+".golden", b.Bytes())
	}
	var b bytes.Buffer
	LAVA(&b, r, LAVACommands)
	for _, want := range []string{
		"lava-test-case fsbench_ext4_nosuch_test --result fail\n",
		"lava-test-case fsbench_f2fs --result skip\n",
		"lava-test-case fsbench_ext4_write --result pass --measurement ",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q", want)
		}
	}
	if _, err := LAVA(&b, r, "junit"); err == nil {
		t.Error("an unknown format was accepted")
	}
}

// loadRun is the report's frozen real run (512 MiB loop device, 4 repetitions, the default
// variants), which the exports translate.
func loadRun(t *testing.T) *results.Run {
	t.Helper()
	r, err := results.Load(filepath.Join("..", "report", "testdata", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
