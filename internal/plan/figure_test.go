package plan

import "testing"

func TestFormatFigure(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 115557236: "115557236", 4064.94: "4065", 12.345: "12.3", 1.5: "1.50", 0.0123: "0.0123", 0.00123: "0.00123", 0.861: "0.861", -6.9: "-6.90"} {
		if got := FormatFigure(v); got != want {
			t.Errorf("FormatFigure(%v) = %s, want %s", v, got, want)
		}
	}
}
