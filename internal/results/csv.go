package results

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
)

// csvHeader is the column list of results.csv: one row per measurement, with the variant's
// definition repeated so that a spreadsheet needs no join.
var csvHeader = []string{
	"variant", "fs", "mkfs_args", "mount_options", "test", "rep", "warmup", "status",
	"value", "unit", "wall_s", "user_s", "sys_s",
	"dev_read_bytes", "dev_write_bytes", "dev_read_ios", "dev_write_ios", "dev_discard_bytes", "dev_flush_ios", "dev_busy_ms",
	"logical_bytes", "mb_per_s", "note", "error",
	// Raw flash and merged runs: the MTD partition size of a free-electrons variant, and the
	// kernel a merged variant ran on, and the label its run was given (fsbench merge --label:
	// which card or board the row is).
	"partition_bytes", "ran_on", "run",
}

// csvError is the index of the error column (a skipped variant's reason goes there too).
const csvError = 23

// CSV renders the measurements of r (and one row per skipped variant) as CSV.
func CSV(r *Run) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(csvHeader); err != nil {
		return nil, err
	}
	variants := map[string]Variant{}
	for _, v := range r.Variants {
		variants[v.Name] = v
		if v.Status == Skipped {
			row := make([]string, len(csvHeader))
			row[0], row[1], row[2], row[3] = v.Name, v.FS, strings.Join(v.MkfsArgs, " "), v.MountOptions
			row[7] = Skipped
			row[csvError] = v.Reason
			variantColumns(row, v)
			if err := w.Write(row); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range r.Measurements {
		v := variants[m.Variant]
		row := []string{
			m.Variant, v.FS, strings.Join(v.MkfsArgs, " "), v.MountOptions, m.Test,
			strconv.Itoa(m.Rep), strconv.FormatBool(m.Warmup), m.Status,
			"", m.Unit, num(m.WallSeconds), num(m.UserSeconds), num(m.SysSeconds),
			"", "", "", "", "", "", "",
			"", num(m.MBps), m.Note, m.Error, "", "", "",
		}
		variantColumns(row, v)
		if m.Value != nil {
			row[8] = num(*m.Value)
		}
		if d := m.Device; d != nil {
			row[13] = strconv.FormatUint(d.ReadBytes, 10)
			row[14] = strconv.FormatUint(d.WriteBytes, 10)
			row[15] = strconv.FormatUint(d.ReadIOs, 10)
			row[16] = strconv.FormatUint(d.WriteIOs, 10)
			row[17] = strconv.FormatUint(d.DiscardBytes, 10)
			row[18] = strconv.FormatUint(d.FlushIOs, 10)
			row[19] = strconv.FormatUint(d.BusyMs, 10)
		}
		if m.LogicalBytes > 0 {
			row[20] = strconv.FormatUint(m.LogicalBytes, 10)
		}
		if err := w.Write(row); err != nil {
			return nil, err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("encoding CSV: %w", err)
	}
	return buf.Bytes(), nil
}

// variantColumns fills the partition and ran-on columns of a row of variant v.
func variantColumns(row []string, v Variant) {
	if v.PartitionBytes > 0 {
		row[csvError+1] = strconv.FormatUint(v.PartitionBytes, 10)
	}
	if v.Source != nil {
		where := v.Source.Kernel + " (host)"
		if v.Source.Guest != "" {
			where = v.Source.Kernel + " (" + v.Source.Guest + ")"
		}
		row[csvError+2] = where
		row[csvError+3] = v.Source.Label
	}
}

// num formats a float without exponent noise; empty for zero, which in these columns means
// "not measured" (a timed test never takes exactly 0 s).
func num(f float64) string {
	if f == 0 {
		return ""
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
