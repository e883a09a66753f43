package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsbench/fsbench/internal/plan"
)

// TestPurgeRun removes only the run directories that carry fsbench's marks.
func TestPurgeRun(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	mk := func(rel, content string) string {
		p := filepath.Join(runs, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(p)
	}
	request := func(dir string) string {
		b, _ := json.Marshal(plan.Request{Out: filepath.Join(dir, "res"), Work: dir})
		return string(b)
	}
	handed := filepath.Join(runs, "host-1-1")
	mk("host-1-1/request.json", request(handed))
	claimed := filepath.Dir(mk("host-2-2/res/.fsbench", `{"fsbench": "results directory"}`))
	mk("host-2-2/res/results.json", "{}")
	users := mk("notes/thesis.tex", "mine")
	elsewhere := filepath.Join(runs, "host-3-3")
	mk("host-3-3/request.json", request(filepath.Join(runs, "host-1-1")))
	fake := filepath.Dir(mk("host-4-4/res/.fsbench", `{"fsbench": "something else"}`))
	target := filepath.Dir(mk("../elsewhere/res/.fsbench", `{"fsbench": "results directory"}`))
	link := filepath.Join(runs, "link")
	if err := os.Symlink(filepath.Dir(target), link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{handed, claimed} {
		if err := PurgeRun(dir); err != nil {
			t.Errorf("PurgeRun(%s): %v", dir, err)
		}
		if _, err := os.Lstat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there", dir)
		}
	}
	for _, dir := range []string{users, elsewhere, fake, link, filepath.Join(filepath.Dir(runs), "elsewhere")} {
		if err := PurgeRun(dir); err == nil {
			t.Errorf("PurgeRun(%s) removed a directory without fsbench's marks", dir)
		} else {
			t.Logf("%v", err)
		}
		if _, err := os.Lstat(dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the symlink's target: %v", err)
	}
}

// TestSessionTree: a tree is recorded with its identity and goes, with what is in it, when the
// session closes.
func TestSessionTree(t *testing.T) {
	s, err := OpenSession(SessionOptions{Dir: filepath.Join(t.TempDir(), "res"), LedgerDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := s.Tree(".tools-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".confined-1", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(s.Ledger.Path())
	var rec ledgerRecord
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Trees) != 1 || rec.Trees[0].Path != dir || rec.Trees[0].Ino == 0 {
		t.Fatalf("ledger trees %+v (%v), want %s with its inode", rec.Trees, err, dir)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s left after Close (%v)", dir, err)
	}
}
