package export

import (
	bonniesuite "github.com/fsbench/fsbench/internal/suites/bonnie"
	"github.com/fsbench/fsbench/internal/testkit/runs"

	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
)

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

// bonnieRun and loadRun are the shared fixtures (internal/testkit/runs).
var bonnieRun = runs.Bonnie

func loadRun(t *testing.T) *results.Run { return runs.Frozen(t) }
