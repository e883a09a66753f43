// Command testsum runs a go test command line with -json, prints each package's result as it
// comes, keeps the whole verbose output in a log file, and ends with the list of skipped,
// reduced and failed tests (package tools/internal/testsum). It exits with go test's status, or 1
// when a test failed.
//
//	go run ./tools/testsum -log test.log -- go test -json -count=1 ./...
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/fsbench/fsbench/tools/internal/testsum"
)

func main() {
	logPath := flag.String("log", "test.log", "the file the whole verbose output goes to")
	started := flag.Int64("started", 0, "when the whole test command started (Unix seconds): the summary's time counts from it, so that it includes the steps before go test (lint, builds, fuzzing)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testsum [-log FILE] -- go test -json [flags] [packages]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	start := time.Now()
	if *started > 0 {
		start = time.Unix(*started, 0)
	}
	os.Exit(run(*logPath, start, flag.Args()))
}

func run(logPath string, start time.Time, argv []string) int {
	log, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		return 1
	}
	defer log.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		return 1
	}
	cmd.Stderr = io.MultiWriter(os.Stderr, log)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		return 1
	}
	s, rerr := testsum.Read(out, os.Stdout, log)
	werr := cmd.Wait()
	s.Took = time.Since(start)
	s.Write(os.Stdout, logPath)
	if rerr != nil {
		fmt.Fprintln(os.Stderr, "testsum: reading go test's output:", rerr)
		return 1
	}
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		return ee.ExitCode()
	case werr != nil:
		fmt.Fprintln(os.Stderr, "testsum:", werr)
		return 1
	case !s.OK():
		return 1
	}
	return 0
}
