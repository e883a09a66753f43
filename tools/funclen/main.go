// Command funclen lists the functions of a Go tree longer than a limit (100 lines by default),
// tests and testdata left out, and exits 1 when there is one: a long function is one whose
// steps have no names yet. The line count is from "func" to the closing brace, comments
// inside included.
//
//	go run ./tools/funclen -max 100 .
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// long is a function over the limit.
type long struct {
	pos   token.Position
	name  string
	lines int
}

func main() {
	limit := flag.Int("max", 100, "the most lines a function may have")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	found, err := scan(root, *limit)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(2)
	}
	for _, l := range found {
		fmt.Printf("%s:%d: %s is %d lines (at most %d)\n", l.pos.Filename, l.pos.Line, l.name, l.lines, *limit)
	}
	if len(found) > 0 {
		os.Exit(1)
	}
}

// scan returns the production functions under root longer than limit lines, longest first.
func scan(root string, limit int) ([]long, error) {
	fset := token.NewFileSet()
	var found []long
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			if n := end.Line - start.Line + 1; n > limit {
				found = append(found, long{pos: start, name: funcName(fd), lines: n})
			}
		}
		return nil
	})
	sort.SliceStable(found, func(i, j int) bool { return found[i].lines > found[j].lines })
	return found, err
}

// funcName is fd's name as gocyclo writes it: (*T).Name for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	star := ""
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = "*", s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok { // a generic receiver: T[E]
		t = ix.X
	}
	if ix, ok := t.(*ast.IndexListExpr); ok {
		t = ix.X
	}
	name := "?"
	if id, ok := t.(*ast.Ident); ok {
		name = id.Name
	}
	if star != "" {
		return "(" + star + name + ")." + fd.Name.Name
	}
	return name + "." + fd.Name.Name
}
