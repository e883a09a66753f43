package vm

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/targets"
)

// TestVMGuestServesCard: with the powercut suite on vm:simcard the guest runs the simcard target
// itself (the card, its recording and the cuts in the guest) at the host's time scale, and the
// emulated SD card shrinks to the small unused one; other suites keep the card on the host.
func TestVMGuestServesCard(t *testing.T) {
	spec, err := plan.ParseTarget("vm:simcard:sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	tg := &vmTarget{spec: spec, opt: targets.Options{Request: plan.Request{TimeScale: 0.1}}}
	cfg := plan.Default()
	cfg.Size = 256 << 20
	cfg.Suite = plan.Suites{"powercut"}
	g, err := tg.guestRequest(plan.Request{Config: cfg, Out: "/r"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if g.Target.Kind != plan.TargetSimcard || g.Target.Profile != "sd-typical" || g.Destroy != "" || g.TimeScale != 0.1 {
		t.Errorf("guest request target %+v, destroy %q, time scale %g: want simcard:sd-typical at 0.1, nothing to destroy", g.Target, g.Destroy, g.TimeScale)
	}
	if got := tg.cardSize(cfg); got != 64<<20 {
		t.Errorf("emulated SD card %d bytes, want the small unused one", got)
	}
	if got := vmMemoryMiB(cfg); got < 1024+2*256 {
		t.Errorf("guest memory %d MiB: too little for the card, its copy and the write stream in tmpfs", got)
	}

	cfg.Suite = plan.Suites{"bootlin"}
	g, err = tg.guestRequest(plan.Request{Config: cfg, Out: "/r", NoCapacityCheck: true}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if g.Target.Kind != plan.TargetDevice || g.Target.Device != GuestCard || tg.cardSize(cfg) != cfg.Size {
		t.Errorf("bootlin on vm:simcard: guest target %+v, card %d: want the emulated SD card on the host's simulated card", g.Target, tg.cardSize(cfg))
	}
	if !g.NoCapacityCheck {
		t.Error("--no-capacity-check did not reach the guest: it checks its emulated SD card's capacity anyway")
	}
}

// TestVMEnduranceNeedsACard: the endurance suite in the guest needs the card that wears out
// (vm:simcard:PROFILE); on the guest's plain image file it is refused.
func TestVMEnduranceNeedsACard(t *testing.T) {
	cfg := plan.Default()
	cfg.Suite = plan.Suites{"endurance"}
	for _, tt := range []struct {
		target  string
		refused bool
	}{{"vm", true}, {"vm:simcard:sd-typical", false}} {
		spec, err := plan.ParseTarget(tt.target)
		if err != nil {
			t.Fatal(err)
		}
		err = (&vmTarget{spec: spec}).Check(cfg)
		if got := err != nil && strings.Contains(err.Error(), "never wears out"); got != tt.refused {
			t.Errorf("endurance on --target %s: %v; refused for the image file: %v, want %v", tt.target, err, got, tt.refused)
		}
	}
}
