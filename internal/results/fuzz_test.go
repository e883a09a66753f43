package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// maxSeedBytes is the size above which a seed file is shrunk (see shrinkJSON): the fuzzer
// mutates and re-parses every input thousands of times a second, and the reports' 200 KB
// test runs would slow it to a crawl without covering more of the schema than a few of
// their measurements do.
const maxSeedBytes = 16 << 10

// shrinkJSON keeps the first few elements of every array of a JSON document (every object
// and key stays), so that a large results file becomes a small seed with the same shape.
func shrinkJSON(b []byte) ([]byte, bool) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, false
	}
	var shrink func(any) any
	shrink = func(v any) any {
		switch v := v.(type) {
		case []any:
			v = v[:min(len(v), 3)]
			for i := range v {
				v[i] = shrink(v[i])
			}
			return v
		case map[string]any:
			for k := range v {
				v[k] = shrink(v[k])
			}
			return v
		default:
			return v
		}
	}
	out, err := json.MarshalIndent(shrink(v), "", "  ")
	return out, err == nil
}

// FuzzLoad checks that Load refuses what is not a results file with an error, and that a
// Run it accepts is one fsbench can work with: CSV renders it (one record per measurement
// and skipped variant, every record as wide as the header), and Save writes it in a form
// that Load reads back to an equal Run.
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{
		"testdata/*.golden", "testdata/*.golden.json", "testdata/*.results.json",
		"../testkit/runs/testdata/run.json", "../report/testdata/wear.json",
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) < 5 {
		f.Fatalf("found only the seed files %q", seeds)
	}
	for _, name := range seeds {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > maxSeedBytes {
			if small, ok := shrinkJSON(b); ok {
				b = small
			}
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `{"schema": "fsbench.results/v0"}`, `{"schema": "other/v1"}`,
		`{"schema": "fsbench.results/v1"}`,
		`{"schema": "fsbench.results/v1", "config": {"a": [1, 2]}, "variants": [{"name": "x", "status": "skipped", "reason": "r\n\"q\""}]}`,
	} {
		f.Add([]byte(s))
	}

	dir := f.TempDir() // one per worker process: the fuzz function runs one input at a time
	in := filepath.Join(dir, "in.json")
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(in, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Load(in)
		if err != nil {
			if r != nil {
				t.Fatalf("Load returned a Run with its error %v", err)
			}
			return
		}
		if r == nil {
			t.Fatal("Load returned neither a Run nor an error")
		}
		if r.Schema != Schema {
			t.Fatalf("Load accepted schema %q", r.Schema)
		}

		c, err := CSV(r)
		if err != nil {
			t.Fatalf("CSV of a loaded run: %v", err)
		}
		records, err := csv.NewReader(bytes.NewReader(c)).ReadAll()
		if err != nil {
			t.Fatalf("CSV wrote what encoding/csv cannot read: %v", err)
		}
		want := 1 + len(r.Measurements)
		for _, v := range r.Variants {
			if v.Status == Skipped {
				want++
			}
		}
		if len(records) != want {
			t.Fatalf("CSV has %d records, want a header, %d measurements and the skipped variants: %d",
				len(records), len(r.Measurements), want)
		}

		if err := Save(out, r); err != nil {
			t.Fatalf("Save of a loaded run: %v", err)
		}
		r2, err := Load(out)
		if err != nil {
			t.Fatalf("Load of what Save wrote: %v", err)
		}
		// Config is raw JSON that Save re-indents and re-escapes ("<" as "\u003c", invalid
		// UTF-8 as U+FFFD): what it says must not change, so it is compared decoded.
		if d := cmp.Diff(decodeJSON(t, r.Config), decodeJSON(t, r2.Config)); d != "" {
			t.Fatalf("Save and Load changed the config (-saved +loaded):\n%s", d)
		}
		r.Config, r2.Config = nil, nil
		if d := cmp.Diff(r, r2, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("Save and Load changed the run (-saved +loaded):\n%s", d)
		}
	})
}

// decodeJSON decodes raw JSON for comparison; nil stays nil.
func decodeJSON(t *testing.T, m json.RawMessage) any {
	if m == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(m, &v); err != nil {
		t.Fatalf("config %q is not JSON: %v", m, err)
	}
	return v
}
