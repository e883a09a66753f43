package report

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

func TestCardCheckText(t *testing.T) {
	n := uint64(154)
	r := &results.Run{Target: results.Target{Kind: "device", Device: "/dev/mmcblk0"}, CardCheck: &results.CardCheck{
		Capacity:       &results.CapacityCheck{Verdict: "genuine"},
		Before:         &results.CardReading{Fingerprint: `SD mid 0xaa oid XY "QEMU!" rev 0.1 serial 0123456789abcdef`},
		HealthDelta:    &results.HealthDelta{Changes: []results.HealthChange{{Name: "erase_count_total", Before: 0, After: 154, Delta: 154}}},
		ModelledErases: &n}}
	got := TargetText(r)
	for _, w := range []string{`card SD mid 0xaa oid XY "QEMU!"`, "capacity check: genuine", "erase_count_total +154 (its model erased 154 blocks)"} {
		if !strings.Contains(got, w) {
			t.Errorf("setup line lacks %q:\n%s", w, got)
		}
	}
	if s := TargetText(&results.Run{Target: results.Target{Kind: "image"}}); strings.Contains(s, "card") {
		t.Errorf("a run without a card check: %q", s)
	}
}
