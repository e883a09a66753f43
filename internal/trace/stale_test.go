package trace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCleanStaleIn(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"fsbench-100-1", "fsbench-100-2", "fsbench-200-1", "fsbench-x-1", "fsbench-300", "other-100-1"} {
		if err := os.Mkdir(filepath.Join(dir, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gone := func(pid int) bool { return pid == 100 } // 200 is alive
	removed, err := cleanStaleIn(dir, gone)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Errorf("removed %v, want the two instances of pid 100", removed)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if want := []string{"fsbench-200-1", "fsbench-300", "fsbench-x-1", "other-100-1"}; !slices.Equal(names, want) {
		t.Errorf("left %v, want %v", names, want)
	}
	if r, err := cleanStaleIn(filepath.Join(dir, "missing"), gone); err != nil || r != nil {
		t.Errorf("missing dir: %v, %v", r, err)
	}
}

func TestProcessGone(t *testing.T) {
	if processGone(os.Getpid()) {
		t.Error("this process is gone")
	}
}
