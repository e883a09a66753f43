package fs

import (
	"context"
	"flag"
	"os"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// call is one program run through a fakeRunner.
type call struct {
	name string
	args []string
}

func (c call) String() string { return commandLine(c.name, c.args) }

// fakeRunner records every call and answers with out and err, after running hook if set.
type fakeRunner struct {
	mu    sync.Mutex
	calls []call
	out   []byte
	err   error
	hook  func(name string, args []string)
}

func (f *fakeRunner) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, call{name, append([]string(nil), args...)})
	f.mu.Unlock()
	if f.hook != nil {
		f.hook(name, args)
	}
	return f.out, f.err
}

// checkGolden compares got with testdata/name, or rewrites the file with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test -update if the change is intended)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func mustLookup(t *testing.T, name string) Kind {
	t.Helper()
	k, ok := Lookup(name)
	if !ok {
		t.Fatalf("Lookup(%q) failed", name)
	}
	return k
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
