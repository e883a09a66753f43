package testsum

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsbench/fsbench/internal/testkit/golden"
)

// A recorded go test -json run (testdata/run.json: a package that passes with skips, one of them
// a slow test the fast command leaves out, a reduced test and a benchmark gate, one whose tests
// fail, one that does not build) gives the progress lines and the summary of the golden files.
func TestRead(t *testing.T) {
	in, err := os.Open(filepath.Join("testdata", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var progress, log bytes.Buffer
	s, err := Read(in, &progress, &log)
	if err != nil {
		t.Fatal(err)
	}
	s.Write(&progress, "test.log")
	golden.Check(t, "summary", progress.Bytes())
	if s.OK() {
		t.Error("a run with failed tests is OK")
	}
	if !bytes.Contains(log.Bytes(), []byte("=== RUN   TestA")) {
		t.Error("the log lacks the verbose output")
	}
}

func TestSkipReason(t *testing.T) {
	tests := []struct{ out, want string }{
		{"=== RUN   TestX\n    x_test.go:12: needs root\n--- SKIP: TestX (0.00s)\n", "needs root"},
		{"=== RUN   TestX\n    x_test.go:3: first log\n    x_test.go:9: the reason\n        on two lines\n--- SKIP: TestX (0.00s)\n", "the reason on two lines"},
		{"=== RUN   TestX/sub\n        x_test.go:4: deeper\n    --- SKIP: TestX/sub (0.00s)\n", "deeper"},
		{"=== RUN   TestX\n--- SKIP: TestX (0.00s)\n", "(no reason given)"},
	}
	for _, tc := range tests {
		if got := skipReason(tc.out); got != tc.want {
			t.Errorf("skipReason(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}
