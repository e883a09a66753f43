package report

import (
	"bytes"
	"github.com/fsbench/fsbench/internal/testkit/runs"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
)

func fixture() *results.Run {
	f := results.Float
	return &results.Run{
		Variants: []results.Variant{
			{Name: "ext4", FS: "ext4", Status: results.OK},
			{Name: "squashfs-lzo", FS: "squashfs", ReadOnly: true, Status: results.OK},
			{Name: "f2fs", FS: "f2fs", Status: results.Skipped, Reason: "this kernel (6.18.44) has no f2fs"},
		},
		Measurements: []results.Measurement{
			{Variant: "ext4", Test: "mkfs", Rep: 0, Warmup: true, Status: results.OK, Value: f(9), Unit: "s"},
			{Variant: "ext4", Test: "mkfs", Rep: 1, Status: results.OK, Value: f(0.125), Unit: "s"},
			{Variant: "ext4", Test: "mkfs", Rep: 2, Status: results.OK, Value: f(0.135), Unit: "s"},
			{Variant: "ext4", Test: "mkfs", Rep: 3, Status: results.OK, Value: f(0.5), Unit: "s"},
			{Variant: "ext4", Test: "module_load", Rep: 1, Status: results.NA, Note: "built-in"},
			{Variant: "ext4", Test: "mount", Rep: 1, Status: results.OK, Value: f(0.0042), Unit: "s"},
			{Variant: "ext4", Test: "mount_mem", Rep: 1, Status: results.OK, Value: f(312 * 1024), Unit: "bytes"},
			{Variant: "ext4", Test: "write", Rep: 1, Status: results.OK, Value: f(12.34), Unit: "s", WallSeconds: 12.34, LogicalBytes: 223696210},
			{Variant: "ext4", Test: "used_space", Rep: 1, Status: results.OK, Value: f(210 << 20), Unit: "bytes", Extra: map[string]float64{"used_per_logical": 1.131}},
			{Variant: "ext4", Test: "read", Rep: 1, Status: results.Failed, Error: "input/output error"},
			{Variant: "ext4", Test: "remove", Rep: 1, Status: results.NotRun, Note: "read failed in this repetition"},
			{Variant: "squashfs-lzo", Test: "mkfs", Rep: 1, Status: results.OK, Value: f(1.5), Unit: "s"},
			{Variant: "squashfs-lzo", Test: "write", Rep: 1, Status: results.NA, Note: "read-only filesystem"},
			{Variant: "squashfs-lzo", Test: "read", Rep: 1, Status: results.OK, Value: f(123.456), Unit: "s", WallSeconds: 123.456, LogicalBytes: 44739242},
		},
	}
}

func TestSummaryGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Summary(&buf, fixture()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary.golden", buf.Bytes())
}

func TestSummaryRunGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Summary(&buf, loadRun(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary_run.golden", buf.Bytes())
}

func TestSummaryColor(t *testing.T) {
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		if err := SummaryWith(&buf, loadRun(t), SummaryOptions{Color: color}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(buf.String(), "\033["); got != color {
			t.Errorf("Color %v: escape codes present = %v", color, got)
		}
	}
}

func loadRun(t *testing.T) *results.Run { return runs.Frozen(t) }
