package runner

import (
	"strings"
	"testing"
)

func TestFlashTarget(t *testing.T) {
	tests := []struct {
		kind, suites string
		want         bool
		wantErr      string
	}{
		{"nandsim", "free-electrons", true, ""},
		{"nandsim", " free-electrons ", true, ""},
		{"image", "bootlin", false, ""},
		{"simcard", "bonnie,smallfiles", false, ""},
		{"nandsim", "bootlin", false, "add --suite free-electrons"},
		{"image", "free-electrons", false, "use --target vm"},
		{"device", "free-electrons", false, "use --target vm"},
		{"image", "bootlin,free-electrons", false, "run it on its own"},
		{"nandsim", "bootlin,free-electrons", false, "add --suite free-electrons"},
	}
	for _, tc := range tests {
		got, err := flashTarget(tc.kind, tc.suites)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s %s: err = %v, want one containing %q", tc.kind, tc.suites, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %s = %v, %v; want %v", tc.kind, tc.suites, got, err, tc.want)
		}
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[uint64]string{8 << 20: "8M", 252 << 20: "252M", 1 << 30: "1G", 1536 << 20: "1536M", 192 << 10: "192K"} {
		if got := SizeLabel(n); got != want {
			t.Errorf("SizeLabel(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestParseTargetNandsim(t *testing.T) {
	kind, profile, err := ParseTarget("nandsim")
	if err != nil || kind != "nandsim" || profile != "" {
		t.Errorf("ParseTarget(nandsim) = %q, %q, %v", kind, profile, err)
	}
	if _, _, err := ParseTarget("nand"); err == nil || !strings.Contains(err.Error(), "nandsim") {
		t.Errorf("ParseTarget(nand) error %v does not name nandsim", err)
	}
}
