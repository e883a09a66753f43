// Package slowtests finds the slow tests of a module: the top-level test functions that call
// internal/testkit/slow's Need (left out of make test) or Enabled (a reduced version in make
// test, the whole one in make test-slow), directly or through functions of their own package
// that do (a helper such as needGuest). It reads the test files' syntax only; nothing is built.
package slowtests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Package is a directory's slow tests, sorted.
type Package struct {
	Dir   string // relative to the module root, with a leading ./ (as go test takes it)
	Tests []string
}

// slowImport is the import path of the package whose Need marks a slow test.
const slowImport = "github.com/fsbench/fsbench/internal/testkit/slow"

var testName = regexp.MustCompile(`^Test[A-Z0-9_]|^Test$`)

// Find walks the module under root and returns, per directory, the slow tests, sorted by
// directory.
func Find(root string) ([]Package, error) {
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, "_test.go") {
			dir := filepath.Dir(path)
			if _, seen := byDir[dir]; !seen {
				byDir[dir] = nil
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Package
	for dir := range byDir {
		tests, err := inDir(dir)
		if err != nil {
			return nil, err
		}
		if len(tests) == 0 {
			continue
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return nil, err
		}
		out = append(out, Package{Dir: "./" + filepath.ToSlash(rel), Tests: tests})
	}
	slices.SortFunc(out, func(a, b Package) int { return strings.Compare(a.Dir, b.Dir) })
	return out, nil
}

// inDir parses the test files of one directory (every package in it: x and x_test share the
// directory and go test runs both) and returns its slow top-level tests.
func inDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	// calls: function name → the names it calls (plain identifiers: functions of the same
	// package); slowDirect: functions that call slow.Need themselves.
	calls := map[string][]string{}
	slowDirect := map[string]bool{}
	var tests []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		alias := importName(f)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Recv != nil {
				continue
			}
			name := fn.Name.Name
			if testName.MatchString(name) {
				tests = append(tests, name)
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch f := call.Fun.(type) {
				case *ast.Ident:
					calls[name] = append(calls[name], f.Name)
				case *ast.SelectorExpr:
					if x, ok := f.X.(*ast.Ident); ok && alias != "" && x.Name == alias && (f.Sel.Name == "Need" || f.Sel.Name == "Enabled") {
						slowDirect[name] = true
					}
				}
				return true
			})
		}
	}
	var out []string
	for _, t := range tests {
		if reaches(t, calls, slowDirect, map[string]bool{}) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// importName is the name a file uses for the slow package, or "" when it does not import it.
func importName(f *ast.File) string {
	for _, imp := range f.Imports {
		if strings.Trim(imp.Path.Value, `"`) != slowImport {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return "slow"
	}
	return ""
}

// reaches reports whether fn calls slow.Need, itself or through the functions it calls.
func reaches(fn string, calls map[string][]string, direct, seen map[string]bool) bool {
	if direct[fn] {
		return true
	}
	if seen[fn] {
		return false
	}
	seen[fn] = true
	for _, c := range calls[fn] {
		if reaches(c, calls, direct, seen) {
			return true
		}
	}
	return false
}

// Pattern is a go test -run pattern that matches exactly the named top-level tests (and their
// subtests).
func Pattern(pkgs []Package) string {
	var names []string
	for _, p := range pkgs {
		for _, t := range p.Tests {
			if !slices.Contains(names, t) {
				names = append(names, t)
			}
		}
	}
	slices.Sort(names)
	return "^(" + strings.Join(names, "|") + ")$"
}
