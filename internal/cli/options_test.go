package cli

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/plan"
)

// Every setting a run's request holds is settable from run's flags and arrives in the engine's
// options as given, with no copy on the way that could drop one: this command line sets every
// field of plan.Request, and the reflection check below fails for a field a later change adds
// without a flag.
func TestRunFlagsFillEveryRequestSetting(t *testing.T) {
	args := []string{
		"--target", "labgrid:place-a/dev/mmcblk0", "--destroy", "/dev/mmcblk0", "-o", "/tmp/out", "--force",
		"--time-scale", "0.5", "--endurance-scale", "0.25", "--no-capacity-check", "--image", "/tmp/img", "--keep-image", "--no-direct-io",
		"--kernel", "/boot/k", "--ssh-config", "/tmp/sshcfg", "--ssh-option", "ConnectTimeout=9",
		"--remote-binary", "/tmp/fsb", "--remote-dir", "/tmp/rd", "--link-timeout", "40s",
		"--labgrid-coordinator", "127.0.0.1:20408", "--labgrid-client", "/opt/lg/labgrid-client",
		"--power-cycle", "--boot-timeout", "7m", "--size", "512M", "--power-off", "relay 0 off", "--power-on", "relay 0 on",
	}
	opt, err := parseRunOptions(t, args)
	if err != nil {
		t.Fatal(err)
	}
	r := opt.Request
	want := plan.Request{
		Config: r.Config, Target: plan.TargetSpec{Kind: plan.TargetLabgrid, Place: "place-a", Inner: r.Target.Inner},
		Destroy: "/dev/mmcblk0", Out: "/tmp/out", Force: true, TimeScale: 0.5, EnduranceScale: 0.25, NoCapacityCheck: true,
		Image: "/tmp/img", KeepImage: true, NoDirectIO: true, Kernel: "/boot/k",
		SSHOptions:   []string{"-F", "/tmp/sshcfg", "-o", "ConnectTimeout=9"},
		RemoteBinary: "/tmp/fsb", RemoteDir: "/tmp/rd", LinkTimeout: 40 * time.Second,
		LabgridCoordinator: "127.0.0.1:20408", LabgridClient: "/opt/lg/labgrid-client",
		PowerCycle: true, BootTimeout: 7 * time.Minute, PowerOff: "relay 0 off", PowerOn: "relay 0 on",
	}
	if r.Config.Size != 512<<20 {
		t.Errorf("--size: config size %d", r.Config.Size)
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("run's options:\n got %+v\nwant %+v", r, want)
	}
	// Work is the only setting no flag gives: a guest's or a board's work directory, which the
	// host writes into the request it hands on.
	v := reflect.ValueOf(r)
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if name == "Work" {
			continue
		}
		if v.Field(i).IsZero() {
			t.Errorf("plan.Request.%s is not set by run's flags: give it a flag (cli/run.go) or say here why not", name)
		}
	}
}

// A request file another fsbench wrote carries its own settings only: the host's image file,
// SSH client and labgrid settings are never written into it.
func TestRequestKeepsHostSettingsHome(t *testing.T) {
	dir := t.TempDir()
	r := plan.Request{Config: plan.Default(), Out: dir, Image: "/host/img", SSHOptions: []string{"-F", "/host/cfg"},
		LabgridClient: "/host/lg", PowerCycle: true, TimeScale: 0.5}
	path := dir + "/request.json"
	if err := plan.WriteRequest(path, r); err != nil {
		t.Fatal(err)
	}
	opt, err := parseRunOptions(t, []string{"--request", path})
	if err != nil {
		t.Fatal(err)
	}
	got := opt.Request
	if got.Image != "" || got.SSHOptions != nil || got.LabgridClient != "" || got.PowerCycle || got.NoDirectIO {
		t.Errorf("host settings crossed into the request: %+v", got)
	}
	if got.TimeScale != 0.5 || got.Out != dir || !strings.EqualFold(got.Config.Suite.String(), r.Config.Suite.String()) {
		t.Errorf("request lost its own settings: %+v", got)
	}
}
