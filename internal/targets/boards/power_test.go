package boards

import (
	"context"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/targets"
)

// TestLivePowerCutChecks: --suite powercut on a board runs only where fsbench can switch its
// power (an ssh:// board given both power commands, or a labgrid place), on its card named
// twice, and alone; every refusal says what to give.
func TestLivePowerCutChecks(t *testing.T) {
	for _, tc := range []struct {
		target, destroy, off, on, suites string
		wantErr                          string
	}{
		{"ssh://root@board/dev/mmcblk0p2", "/dev/mmcblk0p2", "relay off", "relay on", "powercut", ""},
		{"labgrid:rpi4/dev/mmcblk0p2", "/dev/mmcblk0p2", "", "", "powercut", ""},
		{"ssh://root@board/dev/mmcblk0p2", "/dev/mmcblk0p2", "", "", "powercut", "--power-off CMD and --power-on CMD"},
		{"ssh://root@board/dev/mmcblk0p2", "/dev/mmcblk0p2", "relay off", "", "powercut", "--power-on CMD"},
		{"ssh://root@board", "", "relay off", "relay on", "powercut", "name its device"},
		{"labgrid:rpi4", "", "", "", "powercut", "name its device"},
		{"ssh://root@board/dev/mmcblk0p2", "/dev/mmcblk0p1", "relay off", "relay on", "powercut", "--destroy /dev/mmcblk0p2"},
		{"labgrid:rpi4/dev/mmcblk0p2", "/dev/mmcblk0p2", "", "", "bootlin,powercut", "runs alone"},
	} {
		spec, err := plan.ParseTarget(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		tg, err := targets.New(spec, targets.Options{Request: plan.Request{Destroy: tc.destroy, PowerOff: tc.off, PowerOn: tc.on}})
		if err != nil {
			t.Fatal(err)
		}
		cfg := plan.Default()
		cfg.Suite = plan.ParseSuites(tc.suites)
		err = tg.Check(cfg)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s %s: %v", tc.target, tc.suites, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s %s (off %q, on %q, destroy %q): err = %v, want one containing %q", tc.target, tc.suites, tc.off, tc.on, tc.destroy, err, tc.wantErr)
		}
	}
}

// TestCommandPower runs the user's power commands with sh -c, and a failing one says which
// flag it came from and what it printed.
func TestCommandPower(t *testing.T) {
	dir := t.TempDir()
	sw := commandPower{off: "echo off >> " + dir + "/log", on: "echo relay stuck >&2; exit 3"}
	if err := sw.Set(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	err := sw.Set(context.Background(), true)
	if err == nil || !strings.Contains(err.Error(), "--power-on") || !strings.Contains(err.Error(), "relay stuck") {
		t.Errorf("a failing --power-on: %v, want the flag and what the command said", err)
	}
}

// TestLiveResumes: a rerun into a results directory that holds a live campaign resumes it
// only when it is a power-cut campaign itself; any other run there is refused as before.
func TestLiveResumes(t *testing.T) {
	dir := t.TempDir()
	spec, _ := plan.ParseTarget("labgrid:rpi4/dev/mmcblk0p2")
	mk := func(suites string) targets.Target {
		cfg := plan.Default()
		cfg.Suite = plan.ParseSuites(suites)
		tg, err := targets.New(spec, targets.Options{Request: plan.Request{Config: cfg}})
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	live, other := mk("powercut").(targets.Resumer), mk("bootlin").(targets.Resumer)
	if live.Resumes(dir) {
		t.Error("an empty directory resumes a campaign")
	}
	st := &liveState{Variant: "ext4", Made: true}
	if err := st.save(liveStatePath(dir, 0, plan.Variant{Name: "ext4"})); err != nil {
		t.Fatal(err)
	}
	if !live.Resumes(dir) {
		t.Error("a directory holding a campaign is not resumed by the same campaign")
	}
	if other.Resumes(dir) {
		t.Error("a bootlin run takes over a directory holding a power-cut campaign")
	}
}
