package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTarget(t *testing.T) {
	sim := func(p string) *TargetSpec { return &TargetSpec{Kind: TargetSimcard, Profile: p} }
	dev := func(d string) *TargetSpec { return &TargetSpec{Kind: TargetDevice, Device: d} }
	img := &TargetSpec{Kind: TargetImage}
	tests := []struct {
		in   string
		want TargetSpec
		str  string // String(), when it differs from in
	}{
		{"", TargetSpec{Kind: TargetImage}, "image"},
		{"image", TargetSpec{Kind: TargetImage}, ""},
		{"simcard", *sim("sd-typical"), "simcard:sd-typical"},
		{"simcard:sd-cheap-old", *sim("sd-cheap-old"), ""},
		{"simcard:/etc/my card.toml", *sim("/etc/my card.toml"), ""},
		{"device:/dev/mmcblk0p3", *dev("/dev/mmcblk0p3"), ""},
		{"nandsim", TargetSpec{Kind: TargetNandsim}, ""},
		{"vm", TargetSpec{Kind: TargetVM}, ""},
		{"vm:simcard", TargetSpec{Kind: TargetVM, Inner: sim("sd-typical")}, "vm:simcard:sd-typical"},
		{"vm:simcard:emmc", TargetSpec{Kind: TargetVM, Inner: sim("emmc")}, ""},
		{"ssh://root@127.0.0.1:2222/dev/mmcblk0", TargetSpec{Kind: TargetSSH, User: "root", Host: "127.0.0.1", Port: 2222, Inner: dev("/dev/mmcblk0")}, ""},
		{"ssh://board/dev/mmcblk0p3", TargetSpec{Kind: TargetSSH, Host: "board", Inner: dev("/dev/mmcblk0p3")}, ""},
		{"ssh://board", TargetSpec{Kind: TargetSSH, Host: "board", Inner: img}, ""},
		{"ssh://board/", TargetSpec{Kind: TargetSSH, Host: "board", Inner: img}, "ssh://board"},
		{"ssh://board/simcard:sd-typical", TargetSpec{Kind: TargetSSH, Host: "board", Inner: sim("sd-typical")}, ""},
		{"ssh://[::1]:22/dev/sda", TargetSpec{Kind: TargetSSH, Host: "::1", Port: 22, Inner: dev("/dev/sda")}, ""},
		{"labgrid:board-a/dev/mmcblk0", TargetSpec{Kind: TargetLabgrid, Place: "board-a", Inner: dev("/dev/mmcblk0")}, ""},
		{"labgrid:board-a", TargetSpec{Kind: TargetLabgrid, Place: "board-a", Inner: img}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTarget(tc.in)
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
			b, err := json.Marshal(struct{ T TargetSpec }{got})
			if err != nil {
				t.Fatal(err)
			}
			var back struct{ T TargetSpec }
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
		_, err := ParseTarget(in)
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
	if _, err := ParseTarget("nand"); err == nil || !strings.Contains(err.Error(), "nandsim") {
		t.Errorf("ParseTarget(nand) error %v does not name nandsim", err)
	}
}
