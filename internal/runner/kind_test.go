package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/report"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
	_ "github.com/fsbench/fsbench/internal/targets/all"
)

// fakeKind is a target kind only this test knows: a loop device over an image file of its own,
// registered by the test. That it runs through the engine, and that its results load and
// report, shows that a new kind needs no change to the engine or the report.
type fakeKind struct {
	spec plan.TargetSpec
	caps targets.Capability
}

const (
	fakeLocal  plan.TargetKind = "fake-local"
	fakeLiar   plan.TargetKind = "fake-liar"   // declares a remote runner it does not implement
	fakeNoCaps plan.TargetKind = "fake-nocaps" // declares nothing
)

func init() {
	// What a kind's package does in its init: its --target form, and its maker.
	plan.RegisterTargetForm(fakeLocal, plan.TargetForm{Usage: string(fakeLocal)})
	targets.Register(fakeLocal, func(s plan.TargetSpec, _ targets.Options) (targets.Target, error) {
		return &fakeKind{spec: s, caps: targets.LocalDevice}, nil
	})
	targets.Register(fakeLiar, func(s plan.TargetSpec, _ targets.Options) (targets.Target, error) {
		return &fakeKind{spec: s, caps: targets.RemoteRunner}, nil
	})
	targets.Register(fakeNoCaps, func(s plan.TargetSpec, _ targets.Options) (targets.Target, error) {
		return &fakeKind{spec: s}, nil
	})
}

func (f *fakeKind) Spec() plan.TargetSpec       { return f.spec }
func (f *fakeKind) Caps() targets.Capability    { return f.caps }
func (f *fakeKind) Check(cfg plan.Config) error { return cfg.CheckSuiteMix() }
func (f *fakeKind) Methods(plan.Config) map[string]string {
	return map[string]string{"fake": "a fake kind's own method"}
}

func (f *fakeKind) Prepare(_ context.Context, s *session.Session, cfg plan.Config) (*targets.Prepared, error) {
	img := filepath.Join(s.Work, "fake.img")
	if err := session.CreateImage(img, cfg.Size); err != nil {
		return nil, err
	}
	if err := s.Ledger.AddFile(img); err != nil {
		return nil, err
	}
	s.OnClose("fake image", func() error { return s.Ledger.RemoveOwnFile(img) })
	loop, err := session.AttachLoop(img, session.LoopOptions{DirectIO: true})
	if err != nil {
		return nil, err
	}
	if err := s.Ledger.AddLoop(loop.Path, img); err != nil {
		loop.Detach()
		return nil, err
	}
	s.OnClose("fake loop "+loop.Path, loop.Detach)
	return &targets.Prepared{Device: loop.Path, DeviceName: loop.Name, Size: cfg.Size, Underlying: img,
		Result: results.Target{Kind: results.TargetKind(fakeLocal), Device: "a fake device " + loop.Path, SizeBytes: cfg.Size}}, nil
}

func TestFakeKindRunsThroughTheEngine(t *testing.T) {
	needRoot(t)
	cfg := smallConfig()
	cfg.Variants = []plan.Variant{{Name: "ext4", FS: "ext4"}}
	cfg.Tests = []string{catalog.Mkfs, catalog.Mount}
	spec, err := plan.ParseTarget(string(fakeLocal))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Target: spec, Out: filepath.Join(dir, "res")}, Log: t.Logf}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	checkNoLeftovers(t, dir)
	r, err := results.Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Target.Kind != results.TargetKind(fakeLocal) {
		t.Errorf("results.json's target kind = %q, want %q", r.Target.Kind, fakeLocal)
	}
	if r.Methods["fake"] == "" {
		t.Errorf("the kind's own method is not in results.json's methods: %v", r.Methods)
	}
	ok := 0
	for _, m := range r.Measurements {
		if m.Status == results.OK {
			ok++
		}
	}
	if ok < 2 {
		t.Errorf("%d measurements ok on the fake kind, want mkfs and mount: %+v", ok, r.Measurements)
	}
	if got := report.TargetText(r); !strings.Contains(got, "a fake device") {
		t.Errorf("the report says the run was on %q, not on the fake kind's device", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(out.Dir, "work")); len(entries) > 0 {
		t.Errorf("the fake kind's files are left behind: %v", entries)
	}
}

// A kind whose capabilities and methods disagree is refused before anything is made.
func TestKindWithoutItsCapabilityIsRefused(t *testing.T) {
	needRoot(t)
	for _, kind := range []plan.TargetKind{fakeLiar, fakeNoCaps} {
		dir := t.TempDir()
		out, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: smallConfig(), Target: plan.TargetSpec{Kind: kind}, Out: filepath.Join(dir, "res")}}})
		if err == nil || out != nil || !strings.Contains(err.Error(), "capabilities") {
			t.Errorf("%s: Run = %v, %v; want a refusal and no results directory", kind, out, err)
		}
		if _, serr := os.Stat(filepath.Join(dir, "res")); serr == nil {
			t.Errorf("%s: a results directory was made", kind)
		}
	}
}

// A farm runs only targets that declare a remote runner, whatever their kind.
func TestRunsElsewhere(t *testing.T) {
	for s, want := range map[string]bool{"image": false, "simcard:sd-typical": false, "vm": true, "ssh://board/dev/mmcblk0": true,
		"labgrid:place/dev/sda": true, string(fakeLocal): false} {
		spec, err := plan.ParseTarget(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := runsElsewhere(spec); got != want {
			t.Errorf("runsElsewhere(%s) = %v, want %v", s, got, want)
		}
	}
}
