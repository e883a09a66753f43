// Package simcardtest lets tests serve a simulated card from their own test binary (the helper
// re-exec pattern): the test binary has no `fsbench simcard serve` command, so a test named
// for the purpose calls HelperMain, which serves the card with the same flags.
package simcardtest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/simcard"
)

// Command returns the argv prefix and environment that make the test binary run the test
// named helperTest with env set, for target.SimcardOptions.Command and .Env.
func Command(helperTest, env string) (argv, environ []string) {
	return []string{os.Args[0], "-test.run=^" + helperTest + "$", "--"}, []string{env + "=1"}
}

// HelperMain serves a card as `fsbench simcard serve` would, from the arguments after "--",
// and exits the process. Call it from the helper test when its environment variable is set.
func HelperMain() {
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	if len(args) < 2 || args[0] != "simcard" || args[1] != "serve" {
		fmt.Fprintf(os.Stderr, "helper: want simcard serve ..., got %q\n", args)
		os.Exit(2)
	}
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	profile := fl.String("profile", "sd-typical", "")
	size := fl.String("size", "", "")
	scale := fl.Float64("time-scale", 1, "")
	backing := fl.String("backing", "", "")
	timeout := fl.Duration("unmount-timeout", 20*time.Second, "")
	endurance := fl.Float64("endurance-scale", 1, "")
	wearSeed := fl.Uint64("wear-seed", 0, "")
	if err := fl.Parse(args[2:]); err != nil || fl.NArg() != 1 {
		fmt.Fprintf(os.Stderr, "helper: bad arguments %q: %v\n", args, err)
		os.Exit(2)
	}
	p, err := flash.Lookup(*profile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	n, err := bytesize.Parse(*size)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	st, err := simcard.Serve(ctx, simcard.Config{Profile: p, Size: n, Dir: fl.Arg(0), Backing: *backing,
		TimeScale: *scale, EnduranceScale: *endurance, WearSeed: *wearSeed, UnmountTimeout: *timeout, Log: os.Stderr})
	if st.Profile != "" {
		_ = simcard.WriteStats(os.Stdout, st)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Binary returns the fsbench binary a benchmark serves its cards with (fsbench simcard serve)
// and runs: FSBENCH_BIN when set (built false), else this module's fsbench, built into a
// temporary directory of t (built true). The test binary has no fsbench commands of its own.
func Binary(t testing.TB) (path string, built bool) {
	t.Helper()
	if p := os.Getenv("FSBENCH_BIN"); p != "" {
		return p, false
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "fsbench")
	cmd := exec.Command(goTool, "build", "-o", out, "github.com/fsbench/fsbench/cmd/fsbench")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build fsbench (%s build github.com/fsbench/fsbench/cmd/fsbench): %v\n%s", goTool, err, b)
	}
	return out, true
}

// Require skips a test that serves a simulated card behind a loop device where that cannot be
// done, saying why: not root, a build without the FUSE server (32-bit targets), no /dev/fuse.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: serves a FUSE card and attaches a loop device")
	}
	if !simcard.FUSEAvailable {
		t.Skip("this build has no FUSE card server (32-bit target)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("the simulated card needs FUSE: %v", err)
	}
}
