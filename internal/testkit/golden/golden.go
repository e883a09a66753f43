// Package golden compares test output with golden files under testdata/. It owns the -update
// flag of the test binaries that use it: `go test ./internal/x/ -args -update` rewrites the
// files; on a mismatch the output is left beside the golden file as NAME.got for inspection.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Update rewrites the golden files instead of comparing with them.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Check compares got with testdata/name.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -args -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		os.WriteFile(path+".got", got, 0o644)
		t.Errorf("%s differs (-want +got), see %s.got:\n%s", name, path, d)
		return
	}
	os.Remove(path + ".got")
}
