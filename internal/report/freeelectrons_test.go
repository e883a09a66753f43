package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/golden"
	"github.com/fsbench/fsbench/internal/verdict"
)

// feRun builds runs of the free-electrons suite by hand: variants as the suite expands them
// (one per filesystem and partition size) and per cell a warm-up that must not count plus
// three repetitions around a median.
type feRun struct{ *results.Run }

func newFERun() feRun {
	return feRun{&results.Run{Schema: results.Schema, Status: results.RunComplete,
		Machine: results.Machine{Kernel: "6.18.44", Arch: "amd64"},
		Target:  results.Target{Kind: "nandsim", Device: "/dev/mtd0"}}}
}

// variant adds base-<MiB>M; skip, when set, is the reason it was skipped.
func (f feRun) variant(base string, mib uint64, readOnly bool, skip string) string {
	name := fmt.Sprintf("%s-%dM", base, mib)
	v := results.Variant{Name: name, FS: strings.TrimSuffix(base, "-ubi"), Base: base, PartitionBytes: mib << 20, ReadOnly: readOnly, Status: results.OK}
	if skip != "" {
		v.Status, v.Reason = results.Skipped, skip
	}
	f.Variants = append(f.Variants, v)
	return name
}

// ok records a cell whose median is med: repetitions at 0.9, 1 and 1.25 times it, and a
// warm-up far off.
func (f feRun) ok(variant, test, unit string, med float64) {
	f.Measurements = append(f.Measurements, results.Measurement{Variant: variant, Test: test, Rep: 0, Warmup: true, Status: results.OK, Value: results.Float(med*10 + 1), Unit: unit})
	for i, k := range []float64{0.9, 1, 1.25} {
		f.Measurements = append(f.Measurements, results.Measurement{Variant: variant, Test: test, Rep: i + 1, Status: results.OK, Value: results.Float(med * k), Unit: unit})
	}
}

// status records a cell without a figure.
func (f feRun) status(variant, test, status, text string) {
	for rep := 1; rep <= 3; rep++ {
		m := results.Measurement{Variant: variant, Test: test, Rep: rep, Status: status, Note: text}
		if status == results.Failed {
			m.Note, m.Error = "", text
		}
		f.Measurements = append(f.Measurements, m)
	}
}

// study are the 2010 figures (CALAO USB-A9263, Linux 2.6.36) of ubifs and jffs2 at 8, 32 and
// 252 MB, in seconds and KB, test by test.
var study = map[string]map[string][3]float64{
	"ubifs": {
		"init_time": {0.34, 0.78, 1.17}, "init_mem": {888, 916, 988}, "mount_time": {0.14, 0.36, 0.33},
		"mount_mem": {544, 532, 540}, "used_space": {4520, 16164, 127192}, "read_time": {4.46, 1.84, 11.59},
		"remove_time": {7.4, 6.93, 17.26}, "write_time": {4.83, 16.47, 118.38}, "video_write_time": {0, 19.03, 140.16},
	},
	"jffs2": {
		"init_time": {0.12, 0.39, 0.42}, "init_mem": {444, 464, 436}, "mount_time": {0.11, 0.48, 2.08},
		"mount_mem": {184, -12, 1540}, "used_space": {4196, 13940, 109880}, "read_time": {1.48, 5.46, 43.97},
		"remove_time": {5.76, 5.11, 9.82}, "write_time": {15.97, 60.83, 459.58}, "video_write_time": {16.06, 60.92, 461.35},
	},
}

var feTestNames = []string{"init_time", "init_mem", "mount_time", "mount_mem", "used_space", "read_time", "remove_time", "write_time", "video_write_time"}

// fillStudy records base's figures from the study at size index i (0: 8, 1: 32, 2: 252 MiB)
// for tests (all of the suite's when none are named). A zero figure is left unrecorded, as
// the study's "-".
func (f feRun) fillStudy(variant, base string, i int, tests ...string) {
	if len(tests) == 0 {
		tests = feTestNames
	}
	for _, test := range tests {
		v := study[base][test][i]
		switch {
		case v == 0:
		case strings.HasSuffix(test, "_time"):
			f.ok(variant, test, "s", v)
		default:
			f.ok(variant, test, "bytes", v*1024)
		}
	}
}

// feFixture is a run of the free-electrons suite only: ubifs, a read-only squashfs on UBI,
// jffs2 (whose 252 MiB partition comes before its 32 MiB one, and whose write fails there) and
// yaffs2, skipped at every size.
func feFixture() *results.Run {
	f := newFERun()
	for i, mib := range []uint64{8, 32, 252} {
		f.fillStudy(f.variant("ubifs", mib, false, ""), "ubifs", i)
	}
	for _, mib := range []uint64{8, 32, 252} {
		v := f.variant("squashfs-ubi", mib, true, "")
		f.ok(v, "init_time", "s", 0.3)
		f.ok(v, "init_mem", "bytes", 700*1024)
		f.ok(v, "mount_time", "s", 0.00423)
		f.ok(v, "mount_mem", "bytes", 96*1024)
		f.ok(v, "used_space", "bytes", float64(mib)*300*1024)
		f.ok(v, "read_time", "s", 0.0815*float64(mib))
		for _, test := range []string{"remove_time", "write_time", "video_write_time"} {
			f.status(v, test, results.NA, "read-only filesystem")
		}
	}
	for _, i := range []int{0, 2, 1} {
		mib := []uint64{8, 32, 252}[i]
		v := f.variant("jffs2", mib, false, "")
		if mib != 252 {
			f.fillStudy(v, "jffs2", i)
			continue
		}
		f.fillStudy(v, "jffs2", i, feTestNames[:7]...)
		f.status(v, "write_time", results.Failed, "writing copy-3/usr/lib/libc.so.6: no space left on device")
		f.status(v, "video_write_time", results.NotRun, "write_time failed in this repetition")
	}
	for _, mib := range []uint64{8, 32, 252} {
		f.variant("yaffs2", mib, false, "not in mainline Linux: build a kernel with the yaffs2 patches to test it")
	}
	return f.Run
}

// feMixed is fixture()'s block run with a few raw-flash variants beside it.
func feMixed() *results.Run {
	r := fixture()
	f := feRun{r}
	f.fillStudy(f.variant("ubifs", 8, false, ""), "ubifs", 0)
	f.fillStudy(f.variant("jffs2", 8, false, ""), "jffs2", 0)
	f.variant("yaffs2", 8, false, "not in mainline Linux")
	return r
}

// feMerged is what fsbench merge makes of a host run and a run in a TCG guest: the host
// skipped f2fs, the guest ran it; both ran ext4 and jffs2 at 8 MiB, the guest's renamed.
func feMerged() *results.Run {
	host := &results.Source{Dir: "host", Kernel: "6.18.44"}
	guest := &results.Source{Dir: "guest", Kernel: "6.1.0-56-amd64", Guest: "qemu tcg"}
	f := newFERun()
	add := func(v results.Variant, src *results.Source) {
		v.Source = src
		if v.Status == "" {
			v.Status = results.OK
		}
		f.Variants = append(f.Variants, v)
	}
	add(results.Variant{Name: "ext4", FS: "ext4"}, host)
	add(results.Variant{Name: "f2fs", FS: "f2fs"}, guest)
	add(results.Variant{Name: "ext4@6.1.0-56-amd64", FS: "ext4"}, guest)
	for _, x := range []struct {
		name string
		mbps float64
	}{{"ext4", 20}, {"f2fs", 25}, {"ext4@6.1.0-56-amd64", 9}} {
		for rep := 1; rep <= 3; rep++ {
			secs := 100 / x.mbps * (1 + 0.01*float64(rep))
			f.Measurements = append(f.Measurements,
				results.Measurement{Variant: x.name, Test: "write", Rep: rep, Status: results.OK, Value: results.Float(secs), Unit: "s", WallSeconds: secs, LogicalBytes: 100e6},
				results.Measurement{Variant: x.name, Test: "mount", Rep: rep, Status: results.OK, Value: results.Float(0.01 * float64(rep)), Unit: "s"})
		}
	}
	for _, x := range []struct {
		base string
		mib  uint64
		i    int
		src  *results.Source
	}{{"ubifs", 8, 0, host}, {"ubifs", 32, 1, guest}, {"jffs2", 8, 0, host}, {"jffs2", 32, 1, host}} {
		f.fillStudy(f.variant(x.base, x.mib, false, ""), x.base, x.i)
		f.Variants[len(f.Variants)-1].Source = x.src
	}
	add(results.Variant{Name: "jffs2-8M@6.1.0-56-amd64", FS: "jffs2", Base: "jffs2", PartitionBytes: 8 << 20}, guest)
	f.ok("jffs2-8M@6.1.0-56-amd64", "init_time", "s", 0.2)
	f.ok("jffs2-8M@6.1.0-56-amd64", "mount_time", "s", 0.3)
	add(results.Variant{Name: "yaffs2-8M", FS: "yaffs2", Base: "yaffs2", PartitionBytes: 8 << 20, Status: results.Skipped, Reason: "not in mainline Linux"}, host)
	return f.Run
}

// htmlSection is the part of page from the heading with id to the next h2.
func htmlSection(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<h2 id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no section %q", id)
	}
	j := strings.Index(page[i+1:], "<h2 ")
	if j < 0 {
		return page[i:]
	}
	return page[i : i+1+j]
}

var tableRE = regexp.MustCompile(`(?s)<table.*?</table>`)

// noEmptyTables fails when a table of page has a header row and nothing else.
func noEmptyTables(t *testing.T, page string) {
	t.Helper()
	for _, tb := range tableRE.FindAllString(page, -1) {
		if strings.Count(tb, "<tr>") < 2 {
			t.Errorf("empty table: %.200s", tb)
		}
	}
}

func TestFreeElectronsSummaryGolden(t *testing.T) {
	tests := []struct {
		name, golden string
		run          *results.Run
		want, absent []string
	}{
		{"flash only", "summary_fe.golden", feFixture(),
			[]string{
				"init_time + mount_time (s)",
				"[1] yaffs2 skipped: not in mainline Linux",
				"jffs2-252M write_time failed: writing copy-3",
			},
			// No block matrix or verdict without block variants; the notes replace the lists.
			[]string{"verdict:", "variant ", "skipped variants:", "failed cells:", "ran on:"}},
		{"merged", "summary_fe_merged.golden", feMerged(),
			[]string{"variant              kernel", "f2fs                 6.1.0-56-amd64 (qemu tcg)", "jffs2@6.1.0-56-amd64", "  ubifs — 8 MiB: 6.18.44 (host), 32 MiB: 6.1.0-56-amd64 (qemu tcg)"},
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Summary(&buf, tc.run); err != nil {
				t.Fatal(err)
			}
			s := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("summary lacks %q", w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(s, a) {
					t.Errorf("summary has %q", a)
				}
			}
			golden.Check(t, tc.golden, buf.Bytes())
		})
	}
}

func TestFreeElectronsMixedSummary(t *testing.T) {
	// Raw-flash variants beside block ones leave the block matrix and verdicts as they were,
	// and their skipped and failed cells go to the tables' notes, not the lists.
	var block, mixed bytes.Buffer
	if err := Summary(&block, fixture()); err != nil {
		t.Fatal(err)
	}
	if err := Summary(&mixed, feMixed()); err != nil {
		t.Fatal(err)
	}
	matrix, _, _ := strings.Cut(block.String(), "\nskipped variants:")
	if !strings.HasPrefix(mixed.String(), matrix) {
		t.Errorf("the block part changed with raw-flash variants beside it:\n%s", mixed.String())
	}
	_, rest, _ := strings.Cut(mixed.String(), matrix)
	for _, w := range []string{"\nraw flash,", "\nmount_mem (KiB)\nsize   ubifs  jffs2       yaffs2\n8 MiB    544    184  skipped [1]\n",
		"skipped variants:\n  f2fs: this kernel (6.18.44) has no f2fs\n", "failed cells:\n  ext4 rep 1 read"} {
		if !strings.Contains(rest, w) {
			t.Errorf("mixed summary lacks %q:\n%s", w, rest)
		}
	}
	if strings.Contains(rest, "  yaffs2-8M:") {
		t.Error("the skipped raw-flash variant is listed besides its note")
	}
}

func TestFreeElectronsHTMLGolden(t *testing.T) {
	tests := []struct {
		name     string
		run      *results.Run
		sections []string // checked against the golden file, in this order
		absent   []string
	}{
		{"fe", feFixture(), []string{"raw-flash", "problems"}, []string{"every cell completed", `id="verdict"`, `id="matrix"`, `id="charts"`, "Where each filesystem ran", "Ratio &lt;= 1.05"}},
		{"fe_merged", feMerged(), []string{"matrix", "raw-flash"}, nil},
		{"fe_mixed", feMixed(), []string{"raw-flash", "problems"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := HTML(&buf, tc.run, HTMLOptions{}); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			noEmptyTables(t, page)
			for _, a := range tc.absent {
				if strings.Contains(page, a) {
					t.Errorf("page has %q", a)
				}
			}
			// Every footnote mark leads to its note.
			for _, m := range regexp.MustCompile(`href="#(fe-note-\d+)"`).FindAllStringSubmatch(page, -1) {
				if !strings.Contains(page, `id="`+m[1]+`"`) {
					t.Errorf("footnote %s has no note", m[1])
				}
			}
			var got strings.Builder
			for _, id := range tc.sections {
				got.WriteString(htmlSection(t, page, id))
			}
			golden.Check(t, tc.name+".html.golden", []byte(got.String()))
		})
	}
}

func TestFreeElectronsCells(t *testing.T) {
	fe := freeElectrons(feFixture())
	if fe == nil {
		t.Fatal("no tables")
	}
	if got, want := strings.Join(fe.Sizes, ","), "8 MiB,32 MiB,252 MiB"; got != want {
		t.Errorf("rows %s, want %s (smallest first, whatever the variant order)", got, want)
	}
	if got, want := strings.Join(fe.Columns, ","), "ubifs,squashfs-ubi,jffs2,yaffs2"; got != want {
		t.Errorf("columns %s, want %s", got, want)
	}
	var titles []string
	cell := map[string]string{}
	for _, tb := range fe.Tables {
		titles = append(titles, tb.Title)
		for _, row := range tb.Rows {
			for i, c := range row.Cells {
				cell[tb.ID+" "+row.Size+" "+tb.Columns[i]] = c.Text
			}
		}
	}
	wantTitles := "init_time,init_mem,mount_time,mount_mem,init_time + mount_time,init_mem + mount_mem,used_space,read_time,remove_time,write_time,video_write_time"
	if got := strings.Join(titles, ","); got != wantTitles {
		t.Errorf("tables %s, want the study's order %s", got, wantTitles)
	}
	tests := []struct{ key, want string }{
		{"init_time 8 MiB ubifs", "0.340"},                // median, not the warm-up
		{"init_mount_time 8 MiB ubifs", "0.480"},          // 0.34 + 0.14, as the study
		{"init_mount_mem 252 MiB jffs2", "1976"},          // 436 + 1540 KiB
		{"mount_mem 32 MiB jffs2", "-12"},                 // memory deltas may be negative
		{"mount_time 32 MiB squashfs-ubi", "0.00423"},     // three significant digits when small
		{"used_space 252 MiB ubifs", "127192"},            // bytes shown in KiB
		{"write_time 252 MiB jffs2", "failed"},            // every repetition failed
		{"video_write_time 252 MiB jffs2", "not run"},     // after the failure
		{"video_write_time 8 MiB ubifs", "-"},             // not recorded
		{"write_time 32 MiB squashfs-ubi", "n/a"},         // read-only
		{"init_mount_time 32 MiB yaffs2", "skipped"},      // skipped at every size
		{"write_time 252 MiB ubifs", "118"},               // >= 100 s: whole seconds
		{"read_time 252 MiB squashfs-ubi", "20.5"},        // 0.0815 × 252
		{"init_mount_mem 32 MiB squashfs-ubi", "796"},     // 700 + 96
		{"remove_time 252 MiB jffs2", "9.82"},             // its own figures, not 32 MiB's
		{"video_write_time 252 MiB squashfs-ubi", "n/a"},  // n/a stays n/a
		{"init_mount_time 252 MiB squashfs-ubi", "0.304"}, // 0.3 + 0.00423
		{"init_mount_mem 32 MiB jffs2", "452"},            // 464 - 12
		{"init_mount_mem 8 MiB yaffs2", "skipped"},        // sums of skipped parts
		{"mount_time 252 MiB jffs2", "2.08"},              // from the 252 MiB variant
	}
	for _, tc := range tests {
		if got, ok := cell[tc.key]; !ok || got != tc.want {
			t.Errorf("%s = %q, want %q", tc.key, got, tc.want)
		}
	}
	if len(fe.Notes) != 2 {
		t.Errorf("notes %+v, want yaffs2's reason once and jffs2-252M's failure", fe.Notes)
	}
}

func TestFEFormat(t *testing.T) {
	tests := []struct {
		v     float64
		bytes bool
		want  string
	}{
		{0.34, false, "0.340"}, {0.00423, false, "0.00423"}, {1.174, false, "1.17"}, {43.97, false, "44.0"},
		{459.58, false, "460"}, {0, false, "0"}, {-0.5, false, "-0.500"},
		{888 * 1024, true, "888"}, {-12 * 1024, true, "-12"}, {100, true, "0"}, {-100, true, "0"}, {1536, true, "2"},
	}
	for _, tc := range tests {
		if got := feFormat(tc.v, tc.bytes); got != tc.want {
			t.Errorf("feFormat(%v, %v) = %q, want %q", tc.v, tc.bytes, got, tc.want)
		}
	}
}

func TestSources(t *testing.T) {
	host := fixture()
	guest := fixture()
	guest.Machine.Kernel = "6.1.0-56-amd64"
	guest.Guest = &results.Guest{KernelRelease: "6.1.0-56-amd64", Accel: "kvm"}
	sameKernel := fixture()
	for i := range sameKernel.Variants {
		sameKernel.Variants[i].Source = &results.Source{Dir: "d", Kernel: "6.18.44"}
	}
	tests := []struct {
		name string
		run  *results.Run
		want map[string]string // nil: not shown
	}{
		{"one host run", host, nil},
		{"merged from one kernel", sameKernel, nil},
		{"a guest run", guest, map[string]string{"ext4": "6.1.0-56-amd64 (qemu kvm)", "squashfs-lzo": "6.1.0-56-amd64 (qemu kvm)", "f2fs": "6.1.0-56-amd64 (qemu kvm)"}},
		{"merged host and guest", feMerged(), map[string]string{"ext4": "6.18.44 (host)", "f2fs": "6.1.0-56-amd64 (qemu tcg)", "jffs2-8M@6.1.0-56-amd64": "6.1.0-56-amd64 (qemu tcg)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := verdict.Sources(tc.run)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("sources = %v, want %v", got, tc.want)
			}
			for k, w := range tc.want {
				if got[k] != w {
					t.Errorf("sources[%s] = %q, want %q", k, got[k], w)
				}
			}
		})
	}
}
