package figure

import (
	"math"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{115557236, "115557236"},
		{4064.94, "4065"},
		{100, "100"},
		{99.96, "100.0"}, // rounds up across the boundary: still three digits
		{12.345, "12.3"},
		{1.5, "1.50"},
		{1, "1.00"},
		{0.861, "0.861"},
		{0.5, "0.500"},
		{0.1, "0.100"},
		{0.0123, "0.0123"},
		{0.00123, "0.00123"},
		{-6.9, "-6.90"},
		{-0.5, "-0.500"},
		{1e-12, "0.000000000"},
		{math.Inf(1), "+Inf"},
		{math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{1, "1.00×"},
		{1.874, "1.87×"},
		{2.1, "2.10×"},
		{16.82, "16.8×"},
		{123.4, "123×"},
		{0.5, "0.500×"},
		{math.Inf(1), "+Inf×"},
	}
	for _, tt := range tests {
		if got := Ratio(tt.in); got != tt.want {
			t.Errorf("Ratio(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
