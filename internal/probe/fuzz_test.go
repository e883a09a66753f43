package probe

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// hangLimit is how long one input may take before the fuzz worker is stopped: far more than
// any probe.json needs, and short enough that a loop that never ends is reported (as a crash
// of the worker, with the input kept) instead of stalling the fuzzer at 0 execs/s.
const hangLimit = 10 * time.Second

// watchdog panics, ending the process, unless stop is called within hangLimit.
func watchdog(what string) (stop func() bool) {
	return time.AfterFunc(hangLimit, func() { panic(fmt.Sprintf("%s took more than %v", what, hangLimit)) }).Stop
}

// svgCircles checks that b is well-formed XML and counts its <circle> elements.
func svgCircles(t *testing.T, name string, b []byte) int {
	n := 0
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "circle" {
			n++
		}
	}
}

// FuzzLoad checks that Load refuses what is not a probe.json with an error, and that a
// Result it accepts is one fsbench can show again (fsbench advise rewrites the files of a
// loaded probe): WriteFiles writes the summary WriteSummary prints, charts that are
// well-formed SVG with a point per measurement (or "no data"), and a probe.json that Load
// reads back to an equal Result. Seeds are the probe.json of two model probes (one with
// the write tests), the package's summary and eMMC output, and hand-made edge cases.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir() // one per worker process: the fuzz function runs one input at a time
	for i, write := range []bool{false, true} {
		r := runModel(f, "sd-typical", write)
		out := filepath.Join(dir, fmt.Sprint("seed", i))
		if _, err := WriteFiles(out, r); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, JSONFile))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, name := range []string{"summary.golden", "extcsd.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `{"schema": "fsbench.probe/v0"}`,
		`{"schema": "fsbench.probe/v1", "read_sweep": [{"block_size": 512, "median_ns": 1}, {"block_size": 1024, "median_ns": 2}]}`,
		`{"schema": "fsbench.probe/v1", "write": true, "write_sweep": [{"block_size": 4096, "mb_per_s": 1}], "gapped_write_sweep": []}`,
		`{"schema": "fsbench.probe/v1", "align": {"points": [{"align": 0, "diff_ns": 5}, {"align": 4096, "diff_ns": 1e3}]}, "estimates": {"au": {"value": 4096}}}`,
	} {
		f.Add([]byte(s))
	}

	in := filepath.Join(dir, "in.json")
	out := filepath.Join(dir, "out")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(in, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Load(in)
		if err != nil {
			if r != nil {
				t.Fatalf("Load returned a Result with its error %v", err)
			}
			return
		}
		if r == nil || r.Schema != Schema {
			t.Fatalf("Load accepted %+v", r)
		}
		defer watchdog("writing the files of a loaded probe")()

		var sum bytes.Buffer
		if err := WriteSummary(&sum, r); err != nil {
			t.Fatalf("WriteSummary: %v", err)
		}
		paths, err := WriteFiles(out, r)
		if err != nil {
			t.Fatalf("WriteFiles of a loaded probe: %v", err)
		}
		if txt, err := os.ReadFile(filepath.Join(out, SummaryTxtFile)); err != nil || !bytes.Equal(txt, sum.Bytes()) {
			t.Fatalf("%s is not what WriteSummary prints (%v)", SummaryTxtFile, err)
		}
		points := map[string]int{ReadSweepSVG: len(r.ReadSweep), AlignSVG: len(r.Align.Points), WriteSweepSVG: len(r.WriteSweep) + len(r.GappedSweep)}
		for _, p := range paths {
			name := filepath.Base(p)
			want, ok := points[name]
			if !ok {
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if n := svgCircles(t, name, b); n != want && !bytes.Contains(b, []byte(">no data<")) {
				t.Fatalf("%s has %d points, want %d", name, n, want)
			}
		}
		os.Remove(filepath.Join(out, WriteSweepSVG)) // written only with a write sweep

		back, err := Load(out)
		if err != nil {
			t.Fatalf("Load of what WriteFiles wrote: %v", err)
		}
		if d := cmp.Diff(r, back, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("WriteFiles and Load changed the result (-written +loaded):\n%s", d)
		}
	})
}

// FuzzParseExtCSD checks parseExtCSD on any text: it finds a field exactly when the text has
// one, keeps each field's last value (one byte, as the register is), and the lines mmc-utils
// would print for what it parsed parse back to the same EMMC.
func FuzzParseExtCSD(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "extcsd.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	for _, s := range []string{
		"", "Extended CSD rev 1.5\n",
		"eMMC Pre EOL information [EXT_CSD_PRE_EOL_INFO]: 0x03\n",
		"[EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_A]: 0x0b [EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_A]:0x0C\n",
		"eMMC Life Time Estimation B [EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_B]: 0x100\n",
	} {
		f.Add(s)
	}
	anyField := regexp.MustCompile(`\[(EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_A|EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_B|EXT_CSD_PRE_EOL_INFO)\]\s*:\s*0x[0-9a-fA-F]`)
	f.Fuzz(func(t *testing.T, out string) {
		e, err := parseExtCSD(out)
		if err != nil {
			if !anyField.MatchString(out) && !strings.Contains(err.Error(), "no life-time fields") {
				t.Fatalf("error %q for output without fields", err)
			}
			return
		}
		if !anyField.MatchString(out) {
			t.Fatalf("parsed %+v from output without fields", e)
		}
		for _, v := range []int{e.LifeTimeA, e.LifeTimeB, e.PreEOL} {
			if v < 0 || v > 0xff {
				t.Fatalf("parsed %+v: a value beyond one byte", e)
			}
		}
		if e.Summary == "" || e.Skipped != "" {
			t.Fatalf("parsed %+v", e)
		}
		// The fields parseExtCSD did not find stay 0 and print as 0x00, which it reads as 0.
		again := fmt.Sprintf("eMMC Life Time Estimation A [EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_A]: 0x%02x\n"+
			"eMMC Life Time Estimation B [EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_B]: 0x%02x\n"+
			"eMMC Pre EOL information [EXT_CSD_PRE_EOL_INFO]: 0x%02x\n", e.LifeTimeA, e.LifeTimeB, e.PreEOL)
		e2, err := parseExtCSD(again)
		if err != nil || e2 != e {
			t.Fatalf("parsed %+v, printed back and parsed again %+v, %v", e, e2, err)
		}
		if _, err := json.Marshal(e); err != nil {
			t.Fatal(err)
		}
	})
}
