// Package enginetest runs the engine (internal/suite) on a loop device for the tests of the
// engine and of the suites' packages: a fresh image file attached with direct I/O, a mount
// point, and an Env for one repetition of the named suites (as root; it skips otherwise).
package enginetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/suite"
)

// Env makes an image of size bytes under t.TempDir(), attaches it as a loop device with
// direct I/O, and returns an Env for suite.RunRepetition of the suites names (a list, as the
// configuration gives it) plus the cleanup, which the test must defer
// (RunRepetition mounts and unmounts; the cleanup detaches and checks that nothing is left).
func Env(t testing.TB, size uint64, names string) (*suite.Env, func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes a loop device and mounts filesystems (run with sudo)")
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	if err := session.CreateImage(img, size); err != nil {
		t.Fatal(err)
	}
	loop, err := session.AttachLoop(img, session.LoopOptions{DirectIO: true})
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(dir, "mnt")
	work := filepath.Join(dir, "work")
	for _, d := range []string{mnt, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			loop.Detach()
			t.Fatal(err)
		}
	}
	sys, err := fs.HostSystem()
	if err != nil {
		loop.Detach()
		t.Fatal(err)
	}
	sel, err := suite.Select(plan.ParseSuites(names), nil)
	if err != nil {
		loop.Detach()
		t.Fatal(err)
	}
	env := &suite.Env{Device: loop.Path, DeviceName: loop.Name, Sysfs: "/sys", Mountpoint: mnt, WorkDir: work,
		Timeout: 10 * time.Minute, Selection: sel, Run: fs.DefaultRunner, System: sys, Log: t.Logf,
		Params: plan.DefaultSuiteParams()}
	return env, func() {
		if err := loop.Detach(); err != nil {
			t.Error(err)
		}
		mounts, _ := os.ReadFile("/proc/mounts")
		if strings.Contains(string(mounts), mnt) {
			t.Errorf("%s is still mounted", mnt)
		}
	}
}

// Run runs one repetition of the suites names on a fresh filesystem of kind fsName, with
// params changing the default sizes (nil: none), and returns each test's measurement.
func Run(t testing.TB, size uint64, fsName, names string, params func(*plan.SuiteParams)) map[string]results.Measurement {
	t.Helper()
	env, done := Env(t, size, names)
	if params != nil {
		params(&env.Params)
	}
	defer done()
	k, ok := fs.Lookup(fsName)
	if !ok {
		t.Fatalf("no filesystem %s", fsName)
	}
	if av := env.System.Check(k); !av.Runs {
		t.Skipf("%s: %s", fsName, av.Reason)
	}
	got := map[string]results.Measurement{}
	err := suite.RunRepetition(context.Background(), env, suite.Job{Variant: plan.Variant{Name: fsName, FS: fsName}, Kind: k}, 1, false, func(m results.Measurement) error {
		got[m.Test] = m
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
