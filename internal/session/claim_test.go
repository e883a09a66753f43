package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClaim claims results directories as run -o and merge -o do: new and empty ones are
// fsbench's; a marker counts only when it is a regular file holding what fsbench writes; an empty
// or linked one is refused unless force, a link is never followed, and the user's files are never
// touched.
func TestClaim(t *testing.T) {
	const earlier = `{"fsbench": "results directory", "created": "2026-01-01T00:00:00Z", "pid": 1, "started": "2026-01-01T00:00:00Z"}`
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, dir, outside string) // dir exists (empty) unless setup removes it
		force  bool
		refuse string // "" when claimed
	}{
		{name: "new directory", setup: func(t *testing.T, dir, _ string) { os.Remove(dir) }},
		{name: "empty directory"},
		{name: "a user's file, no marker", setup: userFile, refuse: "holds files fsbench did not write"},
		{name: "a user's file, no marker, force", setup: userFile, force: true, refuse: "holds files fsbench did not write"},
		{name: "a user's file and an empty marker", setup: func(t *testing.T, dir, o string) { userFile(t, dir, o); write(t, dir, MarkerName, "") },
			refuse: ".fsbench is empty"},
		{name: "a user's file and an empty marker, force", setup: func(t *testing.T, dir, o string) { userFile(t, dir, o); write(t, dir, MarkerName, "") },
			force: true},
		{name: "a marker linked to a user's file", setup: func(t *testing.T, dir, outside string) {
			if err := os.Symlink(filepath.Join(outside, "thesis.tex"), filepath.Join(dir, MarkerName)); err != nil {
				t.Fatal(err)
			}
		}, refuse: "symbolic link"},
		{name: "a marker linked to a user's file, force", setup: func(t *testing.T, dir, outside string) {
			if err := os.Symlink(filepath.Join(outside, "thesis.tex"), filepath.Join(dir, MarkerName)); err != nil {
				t.Fatal(err)
			}
		}, force: true},
		{name: "a marker that is a directory", setup: func(t *testing.T, dir, _ string) { os.Mkdir(filepath.Join(dir, MarkerName), 0o755) },
			force: true, refuse: "not a regular file"},
		{name: "a marker of something else", setup: func(t *testing.T, dir, _ string) { write(t, dir, MarkerName, "mine") },
			force: true, refuse: "not fsbench's marker"},
		{name: "an earlier run", setup: func(t *testing.T, dir, _ string) { write(t, dir, MarkerName, earlier) }, refuse: "holds an earlier fsbench run"},
		{name: "an earlier run, force", setup: func(t *testing.T, dir, _ string) { write(t, dir, MarkerName, earlier) }, force: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "res")
			outside := t.TempDir()
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, outside, "thesis.tex", "the user's own")
			if tc.setup != nil {
				tc.setup(t, dir, outside)
			}
			_, lock, err := claim(dir, tc.force)
			if lock != nil {
				defer lock.Close()
			}
			var ee *ExistsError
			switch {
			case tc.refuse == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refuse != "" && (!errors.As(err, &ee) || !strings.Contains(err.Error(), tc.refuse)):
				t.Errorf("claim: %v, want a refusal saying %q", err, tc.refuse)
			}
			for _, p := range []string{filepath.Join(outside, "thesis.tex"), filepath.Join(dir, "thesis.tex")} {
				if b, err := os.ReadFile(p); err == nil && string(b) != "the user's own" {
					t.Errorf("%s was changed: %q", p, b)
				}
			}
			fi, lerr := os.Lstat(filepath.Join(dir, MarkerName))
			if err == nil {
				b, _ := os.ReadFile(filepath.Join(dir, MarkerName))
				if lerr != nil || !fi.Mode().IsRegular() || !strings.Contains(string(b), `"fsbench": "results directory"`) {
					t.Errorf("claimed, but the marker is %v %v: %q", fi, lerr, b)
				}
			}
		})
	}
}

func userFile(t *testing.T, dir, _ string) { write(t, dir, "thesis.tex", "the user's own") }

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
