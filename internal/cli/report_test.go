package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/testkit/runs"
)

// copyFixture puts a results.json from the report package's frozen fixtures into a new
// directory.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join("..", "report", "testdata", name)
	if name == "run.json" {
		// The frozen real run has one home that the verdict, report, export and cli tests share.
		path = runs.FrozenPath()
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReportCmd(t *testing.T) {
	dir := copyFixture(t, "run.json")
	other := filepath.Join(t.TempDir(), "sub", "..", "card.html")
	tests := []struct {
		name     string
		args     []string
		wantPath string
		wantLink string
	}{
		{"directory", []string{"report", dir}, filepath.Join(dir, "report.html"), `href="results.json"`},
		{"file", []string{"report", filepath.Join(dir, "results.json")}, filepath.Join(dir, "report.html"), `href="results.csv"`},
		{"-o elsewhere links back", []string{"report", dir, "-o", other}, other, "results.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := Main(context.Background(), tc.args, IO{Out: &out, Err: &errb}); code != ExitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if got := strings.TrimSpace(out.String()); got != tc.wantPath {
				t.Errorf("printed %q, want %q", got, tc.wantPath)
			}
			page, err := os.ReadFile(tc.wantPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(page), tc.wantLink) || !strings.Contains(string(page), ">Verdict</h2>") {
				t.Errorf("report lacks %q or the verdict", tc.wantLink)
			}
		})
	}
}

func TestReportCmdErrors(t *testing.T) {
	tests := []struct {
		args []string
		want int
		msg  string
	}{
		{[]string{"report"}, ExitUsage, "one argument"},
		{[]string{"report", "a", "b"}, ExitUsage, "one argument"},
		{[]string{"report", filepath.Join(t.TempDir(), "missing")}, ExitError, "reading results"},
		{[]string{"compare", "a"}, ExitUsage, "two arguments"},
		{[]string{"compare", "a", "b", "--alpha", "2"}, ExitUsage, "between 0 and 1"},
	}
	for _, tc := range tests {
		var errb bytes.Buffer
		if got := Main(context.Background(), tc.args, IO{Out: &bytes.Buffer{}, Err: &errb}); got != tc.want || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("Main(%v) = %d %q, want %d and %q", tc.args, got, errb.String(), tc.want, tc.msg)
		}
	}
}

func TestCompareCmd(t *testing.T) {
	fix := func(name string) string { return copyFixture(t, filepath.Join("compare", name)) }
	a, b, c, d := fix("a.json"), fix("b.json"), fix("c.json"), fix("d.json")
	tests := []struct {
		name       string
		args       []string
		regression bool
		want       []string
	}{
		{"regression reported, exit 0 without the flag", []string{"compare", a, b},
			false, []string{"-16.25%  (p=0.002 n=6)", "significant regressions"}},
		{"regression fails with the flag", []string{"compare", a, b, "--fail-on-regression"},
			true, []string{"-16.25%"}},
		{"same run: no regression", []string{"compare", a, a, "--fail-on-regression"},
			false, []string{"~  (p=1.000 n=6)", "no significant regression"}},
		{"3 against 3: cannot be significant", []string{"compare", c, d, "--fail-on-regression"},
			false, []string{"~  (p=0.100 n=3)", "need >= 4 repetitions per side"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			root := NewRoot(IO{Out: &out, Err: &errb})
			root.SetArgs(tc.args)
			err := root.ExecuteContext(context.Background())
			var re RegressionError
			if got := errors.As(err, &re); got != tc.regression {
				t.Fatalf("regression error = %v (%v), want %v", got, err, tc.regression)
			}
			if tc.regression && re.ExitCode() != ExitRegression {
				t.Errorf("exit code %d, want %d", re.ExitCode(), ExitRegression)
			}
			if !tc.regression && err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestCompareCmdHTML(t *testing.T) {
	a := copyFixture(t, filepath.Join("compare", "a.json"))
	b := copyFixture(t, filepath.Join("compare", "b.json"))
	page := filepath.Join(t.TempDir(), "cmp.html")
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"compare", a, b, "--html", page}, IO{Out: &out, Err: &out}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	s, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s), "2 significant regression(s)") {
		t.Errorf("page does not count the regressions")
	}
}
