package docscheck

import (
	"bytes"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Unmapped lists the packages under an internal/ folder of the module at root (internal/... and
// tools/internal/...) that the code map does not name: a package is named when an item of one
// of the map's lists holds its path from the module's root in backquotes, as in
// "- `internal/cli`: ..." (a mention in a paragraph does not count: the lists are the map). A package is a
// folder with a Go file that is not a test (testdata is not code). The map cannot go stale
// without this failing: a package added, moved or renamed must be named where it now is.
func Unmapped(root string, codeMap []byte) ([]string, error) {
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if (strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/") || rel == "internal") && !slices.Contains(pkgs, rel) {
			pkgs = append(pkgs, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, line := range bytes.Split(codeMap, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("- ")) {
			continue
		}
		for _, m := range backquoted.FindAllSubmatch(line, -1) {
			named[string(bytes.TrimSuffix(m[1], []byte("/")))] = true
		}
	}
	var out []string
	for _, p := range pkgs {
		if !named[p] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// backquoted is a path in backquotes: `internal/cli`, `tools/internal/testsum`.
var backquoted = regexp.MustCompile("`([A-Za-z0-9_./-]+)`")
