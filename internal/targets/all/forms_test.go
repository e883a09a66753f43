package all_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsbench/fsbench/internal/plan"
	_ "github.com/fsbench/fsbench/internal/targets/all"
)

// The built-in --target forms, as the binary reads them: each kind's package registers its own
// (plan keeps the grammar and the registry); a spec reads back as it was written, in flags and
// in a run request's JSON.
func TestParseTarget(t *testing.T) {
	sim := func(p string) *plan.TargetSpec { return &plan.TargetSpec{Kind: plan.TargetSimcard, Profile: p} }
	dev := func(d string) *plan.TargetSpec { return &plan.TargetSpec{Kind: plan.TargetDevice, Device: d} }
	img := &plan.TargetSpec{Kind: plan.TargetImage}
	tests := []struct {
		in   string
		want plan.TargetSpec
		str  string // String(), when it differs from in
	}{
		{"", plan.TargetSpec{Kind: plan.TargetImage}, "image"},
		{"image", plan.TargetSpec{Kind: plan.TargetImage}, ""},
		{"simcard", *sim("sd-typical"), "simcard:sd-typical"},
		{"simcard:sd-cheap-old", *sim("sd-cheap-old"), ""},
		{"simcard:/etc/my card.toml", *sim("/etc/my card.toml"), ""},
		{"device:/dev/mmcblk0p3", *dev("/dev/mmcblk0p3"), ""},
		{"nandsim", plan.TargetSpec{Kind: plan.TargetNandsim}, ""},
		{"vm", plan.TargetSpec{Kind: plan.TargetVM}, ""},
		{"vm:simcard", plan.TargetSpec{Kind: plan.TargetVM, Inner: sim("sd-typical")}, "vm:simcard:sd-typical"},
		{"vm:simcard:emmc", plan.TargetSpec{Kind: plan.TargetVM, Inner: sim("emmc")}, ""},
		{"ssh://root@127.0.0.1:2222/dev/mmcblk0", plan.TargetSpec{Kind: plan.TargetSSH, User: "root", Host: "127.0.0.1", Port: 2222, Inner: dev("/dev/mmcblk0")}, ""},
		{"ssh://board/dev/mmcblk0p3", plan.TargetSpec{Kind: plan.TargetSSH, Host: "board", Inner: dev("/dev/mmcblk0p3")}, ""},
		{"ssh://board", plan.TargetSpec{Kind: plan.TargetSSH, Host: "board", Inner: img}, ""},
		{"ssh://board/", plan.TargetSpec{Kind: plan.TargetSSH, Host: "board", Inner: img}, "ssh://board"},
		{"ssh://board/simcard:sd-typical", plan.TargetSpec{Kind: plan.TargetSSH, Host: "board", Inner: sim("sd-typical")}, ""},
		{"ssh://[::1]:22/dev/sda", plan.TargetSpec{Kind: plan.TargetSSH, Host: "::1", Port: 22, Inner: dev("/dev/sda")}, ""},
		{"labgrid:board-a/dev/mmcblk0", plan.TargetSpec{Kind: plan.TargetLabgrid, Place: "board-a", Inner: dev("/dev/mmcblk0")}, ""},
		{"labgrid:board-a", plan.TargetSpec{Kind: plan.TargetLabgrid, Place: "board-a", Inner: img}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := plan.ParseTarget(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			want := tc.str
			if want == "" {
				want = tc.in
			}
			if s := got.String(); s != want {
				t.Errorf("String() = %q, want %q", s, want)
			}
			// JSON round trip, as a run request carries it.
			b, err := json.Marshal(struct{ T plan.TargetSpec }{got})
			if err != nil {
				t.Fatal(err)
			}
			var back struct{ T plan.TargetSpec }
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if diff := cmp.Diff(got, back.T); diff != "" {
				t.Errorf("JSON round trip %s (-want +got):\n%s", b, diff)
			}
		})
	}
}

func TestParseTargetErrors(t *testing.T) {
	for _, in := range []string{"imagee", "simcard:", "device:", "vm:device:/dev/sda", "vm:x", "ssh://", "ssh://h:0/dev/x",
		"ssh://h:99999", "ssh://h/tmp/x", "ssh://h/dev/x?y=1", "labgrid:", "nand"} {
		_, err := plan.ParseTarget(in)
		if err == nil {
			t.Errorf("%q: accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), "use image (the default)") {
			t.Errorf("%q: the error does not list the forms: %v", in, err)
		}
	}
}

func TestParseTargetNandsim(t *testing.T) {
	if _, err := plan.ParseTarget("nand"); err == nil || !strings.Contains(err.Error(), "nandsim") {
		t.Errorf("plan.ParseTarget(nand) error %v does not name nandsim", err)
	}
}

// A near miss is named before the forms; every form is listed, the default first.
func TestParseTargetNearMiss(t *testing.T) {
	for in, want := range map[string]string{
		"nand":          `unknown kind (did you mean "nandsim"?)`,
		"imagee":        `unknown kind (did you mean "image"?)`,
		"simcrd:emmc":   `unknown kind (did you mean "simcard"?)`,
		"labgird:p/dev": `unknown kind (did you mean "labgrid"?)`,
		"ssh:board":     "addressed as a URL, ssh://",
		"simcard:":      "nothing after simcard:",
		"nandsim:x":     "nandsim takes nothing after nandsim:",
	} {
		_, err := plan.ParseTarget(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", in, err, want)
			continue
		}
		forms := []string{"use image (the default), device:/dev/X", "labgrid:PLACE/dev/X", "nandsim (raw NAND", "simcard:PROFILE", "ssh://[user@]host", "vm or vm:simcard:PROFILE"}
		for _, f := range forms {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("%q: the error does not name the form %q: %v", in, f, err)
			}
		}
	}
}
