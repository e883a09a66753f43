package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	dir := t.TempDir()
	body := func(n int) string { return strings.Repeat("\t_ = 1\n", n) }
	write := func(name, src string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 3 lines of frame plus the body: short has 5 lines, long 12, the method 11.
	write("a.go", "package a\n\nfunc short() {\n"+body(3)+"}\n\nfunc long() {\n"+body(10)+"}\n\ntype T struct{}\n\nfunc (t *T) M() {\n"+body(9)+"}\n")
	write("a_test.go", "package a\n\nfunc longTest() {\n"+body(50)+"}\n")
	write("testdata/b.go", "package b\n\nfunc longData() {\n"+body(50)+"}\n")
	found, err := scan(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range found {
		got = append(got, l.name)
	}
	if strings.Join(got, " ") != "long (*T).M" {
		t.Errorf("over 10 lines: %v, want long (12 lines) then (*T).M (11), tests and testdata left out", got)
	}
	if len(found) > 0 && found[0].lines != 12 {
		t.Errorf("long counted %d lines, want 12", found[0].lines)
	}
}
