package runner

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/capacity"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
	simkind "github.com/fsbench/fsbench/internal/targets/simcard"
)

// checkHealthDelta checks a simulated-card run's card check: the card identified before and
// after from its own registers, and its health report's erase count moved by exactly the
// erases the card's model counted during the run (at least one where mustErase: a delta of 0
// against 0 modelled erases proves nothing about the path). It returns the modelled erases.
func checkHealthDelta(t *testing.T, r *results.Run, mustErase bool) uint64 {
	t.Helper()
	cc := r.CardCheck
	if cc == nil || cc.Before == nil || cc.After == nil || cc.HealthDelta == nil || cc.ModelledErases == nil {
		t.Fatalf("card check = %+v", cc)
	}
	if !cc.Before.Simulated || cc.Before.CID == nil || cc.Before.Fingerprint == "" || cc.Before.Fingerprint != cc.After.Fingerprint || cc.CapacitySkipped == "" {
		t.Errorf("card identity before %+v after %+v", cc.Before, cc.After)
	}
	var got int64 // erase_count_total is listed only among the changes when it moved
	for _, c := range cc.HealthDelta.Changes {
		if c.Name == "erase_count_total" {
			got = c.Delta
		}
	}
	if uint64(got) != *cc.ModelledErases || (mustErase && got == 0) {
		t.Errorf("health delta: erase_count_total moved by %d, the model erased %d blocks (at least one wanted: %v): %+v", got, *cc.ModelledErases, mustErase, cc.HealthDelta)
	}
	t.Logf("card %s: health %s; delta %+v; modelled erases %d", cc.Before.Describe(), cc.After.Health.Summary, cc.HealthDelta.Changes, *cc.ModelledErases)
	return *cc.ModelledErases
}

// TestSimulatedCardHealthDelta runs on a simulated card small enough that the run must erase:
// 64 MiB of sd-cheap-old (2 open AUs, a 4.5 MiB random-write log), ext4 written to and
// emptied twice over. The card's own health report (its CMD56 block, Transcend's layout, in
// the device directory the simulated card serves) moves by the erases its model counted.
func TestSimulatedCardHealthDelta(t *testing.T) {
	needRoot(t)
	if !simcardAvailable() {
		t.Skip("the simulated card needs FUSE and a 64-bit build")
	}
	cfg := smallConfig()
	cfg.Size = 64 << 20
	cfg.Repetitions = 2
	cfg.Variants = []plan.Variant{{Name: "ext4", FS: "ext4", MkfsArgs: []string{"-E", "lazy_itable_init=0,lazy_journal_init=0"}}}
	cfg.Tests = []string{catalog.Mkfs, catalog.Write, catalog.Remove}
	out, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(t.TempDir(), "res"), Target: plan.TargetSpec{Kind: plan.TargetSimcard, Profile: "sd-cheap-old"}, TimeScale: 0.001}, Self: []string{fsbenchBinary(t)}, Log: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := results.Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	checkHealthDelta(t, r, true)
}

// TestDeviceCapacityCheck runs the device target on simulated cards behind loop devices (the
// path a real card takes): a genuine card is checked and run, its check and identity recorded;
// a counterfeit is refused before anything is made, with the verdict's exit code and its card
// as it was; --no-capacity-check is recorded.
func TestDeviceCapacityCheck(t *testing.T) {
	needRoot(t)
	if !simcardAvailable() {
		t.Skip("the simulated card needs FUSE and a 64-bit build")
	}
	bin := fsbenchBinary(t)
	cfg := smallConfig()
	cfg.Variants = cfg.Variants[:1]
	cfg.Tests = []string{catalog.Mkfs}
	serve := func(profile string, size uint64) (string, string) {
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		backing := filepath.Join(dir, "card.img")
		sc, err := simkind.StartSimcard(ctx, simkind.SimcardOptions{Profile: profile, Size: size, Dir: filepath.Join(dir, "sim"),
			Backing: backing, TimeScale: 0.001, Command: []string{bin}, PathOffset: "off"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sc.Stop() })
		l, err := session.AttachLoop(sc.CardPath(), session.LoopOptions{DirectIO: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Detach() })
		return l.Path, backing
	}
	run := func(dev string, noCheck bool) (*results.Run, error) {
		out, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(t.TempDir(), "res"), Target: plan.TargetSpec{Kind: plan.TargetDevice, Device: dev}, Destroy: dev, NoCapacityCheck: noCheck}, Log: t.Logf}})
		if out == nil {
			t.Fatalf("no outcome: %v", err)
		}
		r, lerr := results.Load(out.Dir)
		if lerr != nil {
			t.Fatalf("%v (run: %v)", lerr, err)
		}
		return r, err
	}

	dev, _ := serve("sd-typical", 320<<20)
	r, err := run(dev, false)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.CardCheck; c == nil || c.Capacity == nil || c.Capacity.Verdict != capacity.VerdictGenuine || c.Capacity.UsableBytes != 320<<20 ||
		c.Before == nil || c.Before.CID == nil || c.After == nil {
		t.Errorf("genuine card's check: %+v", r.CardCheck)
	}
	if r, err = run(dev, true); err != nil {
		t.Fatal(err)
	}
	if c := r.CardCheck; c == nil || c.Capacity != nil || c.CapacitySkipped == "" {
		t.Errorf("--no-capacity-check: %+v", r.CardCheck)
	}

	fake, backing := serve("fake-limbo", 1<<30)
	before := sha(t, backing)
	r, err = run(fake, false)
	var ec interface{ ExitCode() int }
	if err == nil || !errors.As(err, &ec) || ec.ExitCode() != capacity.ExitCounterfeit {
		t.Fatalf("a run on a counterfeit card: %v, want a refusal with exit code %d", err, capacity.ExitCounterfeit)
	}
	if c := r.CardCheck; r.Status != results.RunFailed || len(r.Measurements) != 0 || c == nil || c.Capacity == nil || c.Capacity.Verdict != capacity.VerdictCounterfeit || c.Capacity.Class != "limbo" {
		t.Errorf("refused run: status %s, %d measurements, check %+v", r.Status, len(r.Measurements), r.CardCheck)
	}
	if after := sha(t, backing); after != before {
		t.Errorf("the counterfeit card changed: sha256 %s before, %s after", before, after)
	}
	t.Logf("refused: %v", err)
}

func sha(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))[:16]
}
