package runner

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/plan"
)

func TestApplyCardState(t *testing.T) {
	tests := []struct {
		state, suite string
		freshness    string // a word the freshness method must hold; "" = an error
		wantErr      string
	}{
		{"", "bootlin", "discards the whole device", ""},
		{plan.CardFresh, "bootlin", "discards the whole device", ""},
		{plan.CardUsed, "bootlin,randio", "nothing is discarded", ""},
		{plan.CardUsed, plan.FlashSuite, "", "raw NAND"},
		{"worn", "bootlin", "", "want one of fresh, used"},
	}
	for _, tc := range tests {
		p := &Plan{Methods: baseMethods()}
		err := applyCardState(plan.Config{CardState: tc.state, Suite: plan.ParseSuites(tc.suite)}, p)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q on %s: err %v, want one mentioning %q", tc.state, tc.suite, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !strings.Contains(p.Methods["freshness"], tc.freshness) {
			t.Errorf("%q on %s: %v, freshness %q; want it to say %q", tc.state, tc.suite, err, p.Methods["freshness"], tc.freshness)
		}
	}
}
