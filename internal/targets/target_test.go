package targets_test

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/targets"
	_ "github.com/fsbench/fsbench/internal/targets/all"
)

// Check refuses, before anything is made, a suite the target cannot run: the free-electrons
// suite needs raw NAND, and raw NAND runs nothing else.
func TestCheckSuites(t *testing.T) {
	tests := []struct {
		target, suites string
		wantErr        string
	}{
		{"nandsim", "free-electrons", ""},
		{"nandsim", " free-electrons ", ""},
		{"image", "bootlin", ""},
		{"image", "bonnie,smallfiles", ""},
		{"nandsim", "bootlin", "add --suite free-electrons"},
		{"image", "free-electrons", "use --target vm"},
		{"simcard", "free-electrons", "use --target vm"},
		{"image", "bootlin,free-electrons", "run it on its own"},
		{"nandsim", "bootlin,free-electrons", "add --suite free-electrons"},
		{"vm", "free-electrons", ""},
		{"vm", "bootlin", ""},
		{"vm", "bootlin,free-electrons", "run it on its own"},
		{"vm:simcard:sd-typical", "free-electrons", "use --target vm"},
		// Power cuts only where fsbench can cut the power: the simulated card on this machine.
		{"simcard:sd-typical", "powercut", ""},
		{"image", "powercut", "--target simcard:PROFILE"},
		{"image", "bootlin,powercut", "--target simcard:PROFILE"},
		// In a guest, the guest serves the card itself and cuts its power there.
		{"vm:simcard:sd-typical", "powercut", ""},
		{"vm", "powercut", "use --target vm:simcard:PROFILE"},
	}
	for _, tc := range tests {
		spec, err := plan.ParseTarget(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		tg, err := targets.New(spec, targets.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := plan.Default()
		cfg.Suite = plan.ParseSuites(tc.suites)
		cfg.Size = 256 << 20
		err = tg.Check(cfg)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s %s: %v", tc.target, tc.suites, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s %s: err = %v, want one containing %q", tc.target, tc.suites, err, tc.wantErr)
		}
	}
}

func TestNandsimExpand(t *testing.T) {
	tg, _ := targets.New(plan.TargetSpec{Kind: plan.TargetNandsim}, targets.Options{})
	cfg := plan.Default()
	cfg.Variants = plan.FlashVariants()[:2]
	cfg.NANDSizes = []uint64{8 << 20, 32 << 20}
	var got []string
	for _, e := range targets.Expand(tg, cfg) {
		got = append(got, e.Variant.Name+"/"+e.Base+"/"+bytesize.Label(e.PartitionBytes))
	}
	want := "jffs2-8M/jffs2/8M ubifs-8M/ubifs/8M jffs2-32M/jffs2/32M ubifs-32M/ubifs/32M"
	if strings.Join(got, " ") != want {
		t.Errorf("Expand = %v, want %s", got, want)
	}
}
