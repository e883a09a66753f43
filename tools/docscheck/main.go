// Command docscheck runs every command README.md, ARCHITECTURE.md and docs/*.md show (package
// tools/internal/docscheck): for real in a scratch directory, on image files and the simulated card,
// or, where that cannot be (a real card, a board, a farm, an hour-long benchmark), checked as
// far as it can be and listed with the reason. It exits 1 when a command failed or a document
// holds a command no rule knows.
//
//	go run ./tools/docscheck            # make docs-check
//	go run ./tools/docscheck -short     # flags and targets only, seconds
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsbench/fsbench/tools/internal/docscheck"
)

func main() {
	root := flag.String("root", ".", "the repository")
	short := flag.Bool("short", false, "check subcommands, flags, make targets and scripts only; run nothing for real")
	keep := flag.Bool("keep", false, "keep the scratch directory")
	timeout := flag.Duration("timeout", 5*time.Minute, "time allowed to each command")
	flag.Parse()
	os.Exit(run(*root, !*short, *keep, *timeout))
}

func run(root string, full, keep bool, timeout time.Duration) int {
	ctx := context.Background()
	root, err := filepath.Abs(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	scratch, err := os.MkdirTemp("", "docscheck-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if keep {
		fmt.Println("scratch directory:", scratch)
	} else {
		defer os.RemoveAll(scratch)
	}
	bin := filepath.Join(scratch, "bin", "fsbench")
	build := exec.Command("go", "build", "-o", bin, "./cmd/fsbench")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building fsbench: %v\n%s", err, out)
		return 1
	}
	steps, problems, err := docscheck.Steps(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c := &docscheck.Checker{Root: root, Scratch: scratch, Bin: bin, Full: full, Timeout: timeout}
	defer func() {
		if err := c.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	var results []docscheck.Result
	if full {
		for _, r := range c.Fixtures(ctx) {
			report(r)
			if r.Err != nil {
				fmt.Fprintln(os.Stderr, "a fixture failed: the documents' commands cannot be run")
				return 1
			}
		}
	}
	for _, s := range steps {
		r := c.Check(ctx, s)
		report(r)
		results = append(results, r)
	}
	failed := 0
	for _, r := range results {
		if r.Err != nil {
			failed++
		}
	}
	fmt.Println()
	fmt.Println(docscheck.Summary(results))
	for _, p := range problems {
		fmt.Println("PROBLEM", p)
	}
	if failed > 0 || len(problems) > 0 {
		return 1
	}
	return 0
}

func report(r docscheck.Result) {
	status := "ok  "
	if r.Err != nil {
		status = "FAIL"
	}
	line := fmt.Sprintf("%s %-11s %-26s %s", status, r.Kind, r.Cmd.Where(), r.Cmd.Text)
	if r.Cmd.File == "(fixture)" {
		line = fmt.Sprintf("%s %-11s %-26s %s", status, "fixture", "", strings.Join(r.Argv, " "))
	}
	fmt.Println(line)
	if r.Kind != docscheck.Run || r.Cmd.File == "(fixture)" {
		if r.How != "" {
			fmt.Printf("       %s (%.1f s)\n", r.How, r.Took.Seconds())
		}
	} else {
		fmt.Printf("       %.1f s\n", r.Took.Seconds())
	}
	if r.Why != "" {
		fmt.Printf("       not as written: %s\n", r.Why)
	}
	if r.Err != nil {
		fmt.Printf("       %v\n", r.Err)
		for _, l := range strings.Split(r.Output, "\n") {
			fmt.Printf("       | %s\n", l)
		}
	}
}
