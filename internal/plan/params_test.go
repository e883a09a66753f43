package plan_test

import (
	"github.com/fsbench/fsbench/internal/plan"
	_ "github.com/fsbench/fsbench/internal/suites/all"
	"github.com/fsbench/fsbench/internal/suites/bonnie"
	"github.com/fsbench/fsbench/internal/suites/powercut"

	"strings"
	"testing"
)

var opts = plan.Options{KnownSuites: []string{"bootlin", "bonnie", "powercut"}}

// TestSuiteTable checks that a suite's table sets its sizes and that its mistakes name their
// lines.
func TestSuiteTable(t *testing.T) {
	c, err := plan.Parse("t.toml", []byte("suite = \"bootlin\"\n[powercut]\ncuts = 7\n[bonnie]\nfiles = 2048\ndirs = 100\nfile_size_bytes = \"2M\"\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Params.Get(plan.PowerCutSuite).(*powercut.Params); p.Cuts != 7 || p.Ops != 300 || p.Seed != 1 {
		t.Errorf("powercut params %+v", p)
	}
	if b := c.Params.Get("bonnie").(*bonnie.Params); b.Files != 2048 || b.Dirs != 100 || b.FileSize != 2<<20 || b.ChunkSize != 8192 {
		t.Errorf("bonnie params %+v", b)
	}
	if d := plan.Default().Params.Get(plan.PowerCutSuite).(*powercut.Params); d.Cuts != 50 {
		t.Errorf("the table changed the defaults: %+v", d)
	}
	for _, tc := range []struct{ in, want string }{
		{"[powercut]\ncutz = 7\n", `t.toml:2: unknown key "cutz" in [powercut]; did you mean "cuts"?`},
		{"[powercut]\n\ncuts = \"many\"\n", `t.toml:3: [powercut] cuts must be a whole number of at least 0, not the string "many"`},
		{"powercut = 3\n", "t.toml:1: powercut must be a table"},
		{"[bonnie]\nfiles = 10\ndirs = 100\n", "t.toml:1: [bonnie] dirs (100) must not be more than files (10)"},
		{"[bonie]\nfiles = 2\n", `t.toml:1: unknown key "bonie" at the top level`},
	} {
		_, err := plan.Parse("t.toml", []byte(tc.in), opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestParamsJSON checks that the sizes round-trip through JSON, as a run request carries them.
func TestParamsJSON(t *testing.T) {
	p := plan.DefaultSuiteParams()
	if err := p.Set(plan.PowerCutSuite, "cuts", 9); err != nil {
		t.Fatal(err)
	}
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back plan.SuiteParams
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if got := back.Get(plan.PowerCutSuite).(*powercut.Params); got.Cuts != 9 || !back.Equal(p) {
		t.Errorf("round trip %s: %+v", b, got)
	}
	if plan.DefaultSuiteParams().Get(plan.PowerCutSuite).(*powercut.Params).Cuts != 50 {
		t.Error("Set changed the registered defaults")
	}
	if err := back.UnmarshalJSON([]byte(`{"nosuch": {}}`)); err == nil {
		t.Error("an unknown suite's sizes were accepted")
	}
}

func TestSetFault(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mergeLoss bool
		wantErr   bool
	}{
		{"", false, false},
		{"merge-loss", true, false},
		{"merge-los", false, true},
	} {
		c := plan.Default()
		err := c.SetFault(tc.name)
		got := c.Params.Get(plan.PowerCutSuite).(*powercut.Params).MergeLoss
		if (err != nil) != tc.wantErr || got != tc.mergeLoss {
			t.Errorf("SetFault(%q): err %v, MergeLoss %v; want error %v, MergeLoss %v", tc.name, err, got, tc.wantErr, tc.mergeLoss)
		}
	}
}
