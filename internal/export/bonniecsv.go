package export

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// Bonnie++ CSV format versions: 1.97 (bonnie++ 1.97, 48 fields) and 1.98 (bonnie++ 2.00, which
// adds seeks and seek_proc_count after chunk_size: 50 fields; Debian 12's bon_csv2html and
// bon_csv2txt accept only this one).
const (
	BonnieCSV197 = "1.97"
	BonnieCSV198 = "1.98"
)

// bonnieIOFields and bonnieFileFields are the rate fields of bonnie++'s CSV, in the format's
// order: block I/O, then file operations.
var (
	bonnieIOFields   = []string{"putc", "put_block", "rewrite", "getc", "get_block", "seeks"}
	bonnieFileFields = []string{"seq_create", "seq_stat", "seq_del", "ran_create", "ran_stat", "ran_del"}
)

// bonnieTests are the tests whose rates fields hold, as the catalog maps them (the bonnie suite
// declares them there: BonnieField); "" is a field fsbench has no test for (per-character I/O,
// which the Pandora study skipped too). Asked when writing: the suite adds its entries when
// its package is loaded.

func bonnieTests(fields []string) []string {
	out := make([]string, len(fields))
	for _, t := range catalog.Tests() {
		if i := slices.Index(fields, t.BonnieField); t.BonnieField != "" && i >= 0 {
			out[i] = t.Name
		}
	}
	return out
}

// BonnieCSV writes one bonnie++ CSV line per variant and repetition that ran the bonnie suite,
// in the given format version, so that bon_csv2html, bon_csv2txt and scripts written for
// bonnie++ read fsbench's results. The machine-name field is the variant (commas, which would
// split the field, become '+'). Rates are bonnie++'s: K/sec (1024 bytes), seeks/s, files/s;
// "+++++" for a test too fast to measure; CPU % as an integer; latency the maximum.
func BonnieCSV(w io.Writer, r *results.Run, version string) (int, error) {
	if version != BonnieCSV197 && version != BonnieCSV198 {
		return 0, fmt.Errorf("unknown bonnie++ CSV version %q: use %s or %s", version, BonnieCSV197, BonnieCSV198)
	}
	type key struct {
		variant string
		rep     int
	}
	var order []key
	cells := map[key]map[string]results.Measurement{}
	bonnieIOTests, bonnieFileTests := bonnieTests(bonnieIOFields), bonnieTests(bonnieFileFields)
	for _, m := range r.Measurements {
		if !slices.Contains(bonnieIOTests, m.Test) && !slices.Contains(bonnieFileTests, m.Test) || m.Warmup {
			continue
		}
		k := key{m.Variant, m.Rep}
		if cells[k] == nil {
			cells[k] = map[string]results.Measurement{}
			order = append(order, k)
		}
		cells[k][m.Test] = m
	}
	n := 0
	for _, k := range order {
		by := cells[k]
		var p map[string]float64 // the parameters, from any measurement that has them
		for _, m := range by {
			if _, ok := m.Extra["file_bytes"]; ok {
				p = m.Extra
				break
			}
		}
		if p == nil {
			continue
		}
		name := strings.NewReplacer(",", "+", "\n", " ").Replace(k.variant)
		f := []string{version, version, name, "1", strconv.FormatFloat(p["seed"], 'f', 0, 64), bonnieSize(uint64(p["file_bytes"]) >> 20)}
		chunk := ""
		if c := uint64(p["chunk_bytes"]); c != 8192 {
			chunk = strconv.FormatUint(c, 10)
		}
		f = append(f, chunk)
		if version == BonnieCSV198 {
			f = append(f, strconv.FormatFloat(p["seeks"], 'f', 0, 64), strconv.FormatFloat(p["seekers"], 'f', 0, 64))
		}
		for _, t := range bonnieIOTests {
			f = append(f, bonnieStat(by, t, t == bonnieIOTests[slices.Index(bonnieIOFields, "seeks")])...)
		}
		files := p["files"] / 1024
		dirs := ""
		if p["dirs"] > 1 {
			dirs = strconv.FormatFloat(p["dirs"], 'f', 0, 64)
		}
		f = append(f, strconv.FormatFloat(math.Ceil(files), 'f', 0, 64), "", "", dirs, "")
		for _, t := range bonnieFileTests {
			f = append(f, bonnieStat(by, t, false)...)
		}
		for _, t := range append(append([]string{}, bonnieIOTests...), bonnieFileTests...) {
			f = append(f, bonnieLatency(by, t))
		}
		if _, err := fmt.Fprintln(w, strings.Join(f, ",")); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// bonnieSize is bonnie++'s print_size of a size in MiB: "2G" when a whole number of GiB, else
// "300M", which is bytesize.Label's form for whole MiB.
func bonnieSize(mib uint64) string {
	if mib == 0 {
		return "0M"
	}
	return bytesize.Label(mib << 20)
}

// bonnieStat is a test's rate and CPU share as bonnie++ prints them; seeks have a decimal
// below 1000.
func bonnieStat(by map[string]results.Measurement, test string, seeks bool) []string {
	m, ok := by[test]
	if test == "" || !ok {
		return []string{"", ""}
	}
	if m.Status == results.NA && strings.HasPrefix(m.Note, "too fast") {
		return []string{"+++++", "+++"}
	}
	if m.Status != results.OK || m.Value == nil {
		return []string{"", ""}
	}
	v := *m.Value
	s := strconv.FormatInt(int64(v), 10)
	if seeks {
		if v >= 1000 {
			s = strconv.FormatFloat(v, 'f', 0, 64)
		} else {
			s = strconv.FormatFloat(v, 'f', 1, 64)
		}
	}
	return []string{s, strconv.Itoa(int(m.Extra["cpu_pct"]))}
}

// bonnieLatency formats the maximum latency as bonnie++ does: seconds above 100 s,
// milliseconds above 0.1 s, else microseconds.
func bonnieLatency(by map[string]results.Measurement, test string) string {
	m, ok := by[test]
	if test == "" || !ok {
		return ""
	}
	l, ok := m.Extra["latency_max_s"]
	if !ok || l <= 0 {
		return ""
	}
	switch {
	case l > 99.999999:
		return fmt.Sprintf("%ds", int(l))
	case l > 0.099999:
		return fmt.Sprintf("%dms", int(l*1000))
	default:
		return fmt.Sprintf("%dus", int(l*1e6))
	}
}

// BonnieRecord is one parsed bonnie++ CSV line: its fields by bonnie++'s names.
type BonnieRecord map[string]string

var bonnieFields197 = strings.Split("format_version,bonnie_version,name,concurrency,seed,file_size,io_chunk_size,putc,putc_cpu,put_block,put_block_cpu,rewrite,rewrite_cpu,getc,getc_cpu,get_block,get_block_cpu,seeks,seeks_cpu,num_files,max_size,min_size,num_dirs,file_chunk_size,seq_create,seq_create_cpu,seq_stat,seq_stat_cpu,seq_del,seq_del_cpu,ran_create,ran_create_cpu,ran_stat,ran_stat_cpu,ran_del,ran_del_cpu,putc_latency,put_block_latency,rewrite_latency,getc_latency,get_block_latency,seeks_latency,seq_create_latency,seq_stat_latency,seq_del_latency,ran_create_latency,ran_stat_latency,ran_del_latency", ",")

// BonnieFields returns the field names of a CSV format version, in order.
func BonnieFields(version string) []string {
	if version == BonnieCSV198 {
		f := append([]string{}, bonnieFields197[:7]...)
		f = append(f, "seek_count", "seek_proc_count")
		f = append(f, bonnieFields197[7:]...)
		// bonnie++ names both field 7 (the count) and field 19 (the rate) "seeks"; the count is
		// "seek_count" here so that names stay unique.
		return f
	}
	return bonnieFields197
}

// ParseBonnieCSV reads bonnie++ CSV lines (of bonnie++ or of BonnieCSV), skipping header
// lines ("format_version,..." or "name,...") and '#' comments.
func ParseBonnieCSV(rd io.Reader) ([]BonnieRecord, error) {
	cr := csv.NewReader(rd)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	var out []BonnieRecord
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bonnie++ CSV line %d: %w", line, err)
		}
		if rec[0] == "format_version" || rec[0] == "name" {
			continue
		}
		names := BonnieFields(rec[0])
		if len(rec) != len(names) {
			return nil, fmt.Errorf("bonnie++ CSV line %d: %d fields, format %s has %d", line, len(rec), rec[0], len(names))
		}
		r := BonnieRecord{}
		for i, n := range names {
			r[n] = rec[i]
		}
		out = append(out, r)
	}
}
