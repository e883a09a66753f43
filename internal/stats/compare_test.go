package stats

import (
	"math"
	"strings"
	"testing"
)

func TestMinPAndNeedPerSide(t *testing.T) {
	tests := []struct {
		n1, n2 int
		want   float64
	}{
		{1, 1, 1}, {2, 2, 1.0 / 3}, {3, 3, 0.1}, {4, 4, 2.0 / 70}, {6, 6, 2.0 / 924}, {3, 4, 2.0 / 35},
	}
	for _, tc := range tests {
		if got := MinP(tc.n1, tc.n2); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("MinP(%d, %d) = %v, want %v", tc.n1, tc.n2, got, tc.want)
		}
	}
	if got := NeedPerSide(0.05); got != 4 {
		t.Errorf("NeedPerSide(0.05) = %d, want 4", got)
	}
	if got := NeedPerSide(0.1); got != 3 {
		t.Errorf("NeedPerSide(0.1) = %d, want 3", got)
	}
}

// The p-values below were computed with go-moremath's MannWhitneyUTest (the code benchstat
// runs); TestAgainstBenchmath (build tag benchmath) checks many more against it directly.
func TestCompare(t *testing.T) {
	tests := []struct {
		name        string
		old, new    []float64
		wantP       float64
		significant bool
		delta       string
		warning     string
	}{
		{
			name: "3 vs 3 completely apart cannot be significant",
			old:  []float64{1.0, 1.01, 1.02}, new: []float64{2.0, 2.01, 2.02},
			wantP: 0.1, delta: "~", warning: "need >= 4 repetitions per side to detect a difference at alpha 0.05 (have 3)",
		},
		{
			name: "6 vs 6 apart",
			old:  []float64{1.00, 1.01, 1.02, 0.99, 1.03, 1.00}, new: []float64{1.20, 1.21, 1.19, 1.22, 1.18, 1.20},
			wantP: 2.0 / 924, significant: true, delta: "+19.40%",
		},
		{
			name: "6 vs 6 overlapping",
			old:  []float64{1, 2, 3, 4, 5, 6}, new: []float64{1.5, 2.5, 3.5, 4.5, 5.5, 6.5},
			wantP: 0.6991341991341992, delta: "~",
		},
		{
			name: "4 vs 4 apart, smaller is better",
			old:  []float64{10, 11, 12, 13}, new: []float64{5, 6, 7, 8},
			wantP: 2.0 / 70, significant: true, delta: "-43.48%",
		},
		{
			name: "all equal",
			old:  []float64{1, 1, 1, 1}, new: []float64{1, 1, 1, 1},
			wantP: 1, delta: "~", warning: "all values are equal",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(tc.old, tc.new, 0)
			if math.Abs(c.P-tc.wantP) > 1e-9 {
				t.Errorf("P = %v, want %v", c.P, tc.wantP)
			}
			if c.Significant() != tc.significant {
				t.Errorf("Significant() = %v, want %v", c.Significant(), tc.significant)
			}
			if got := c.Delta(); got != tc.delta {
				t.Errorf("Delta() = %q, want %q", got, tc.delta)
			}
			if c.Warning != tc.warning {
				t.Errorf("Warning = %q, want %q", c.Warning, tc.warning)
			}
		})
	}
}

func TestCompareTiesExact(t *testing.T) {
	// With ties the exact distribution is conditional on them: 2 vs 2 values {1,1 | 2,2}
	// split C(4,2) = 6 ways; U = 0 only for this split and its mirror, p = 2/6.
	c := Compare([]float64{1, 1}, []float64{2, 2}, 0)
	if math.Abs(c.P-1.0/3) > 1e-12 {
		t.Errorf("P = %v, want 1/3", c.P)
	}
	// Partial ties: {1,2,2} vs {2,3,3}; 0.3 by enumerating the 20 splits.
	c = Compare([]float64{1, 2, 2}, []float64{2, 3, 3}, 0)
	if math.Abs(c.P-0.3) > 1e-9 {
		t.Errorf("P = %v, want 0.3", c.P)
	}
}

func TestCompareTiesPermutation(t *testing.T) {
	// Enumerated by hand over the C(15,4) = 1365 splits: U1 = 31.5, P(U1 <= 31.5) is the
	// smaller tail, 180/1365; twice it is 0.263736...
	c := Compare([]float64{-2, 2, -1, 3, -1, -2, 2, 2, 1, -1, 3}, []float64{2, -3, 0, -3}, 0)
	if math.Abs(c.P-0.26373626373626374) > 1e-12 {
		t.Errorf("P = %v, want 0.263736", c.P)
	}
	// One value against three equal ones: go-moremath says p = 1.5; the exact answer is
	// twice P(U1 >= 3) = 2 × 1/4.
	c = Compare([]float64{1}, []float64{0, 0, 0}, 0)
	if math.Abs(c.P-0.5) > 1e-12 {
		t.Errorf("P = %v, want 0.5", c.P)
	}
}

func TestPN(t *testing.T) {
	c := Compare([]float64{1, 2, 3}, []float64{4, 5, 6, 7}, 0)
	if got := c.PN(); !strings.HasPrefix(got, "p=0.057 n=3+4") {
		t.Errorf("PN() = %q", got)
	}
}

func TestMedianCI(t *testing.T) {
	tests := []struct {
		name   string
		xs     []float64
		lo, hi float64
	}{
		{"5 samples: unbounded below at 95%", []float64{1, 2, 3, 4, 5}, math.Inf(-1), 5},
		{"6 samples: min and max", []float64{6, 1, 5, 2, 4, 3}, 1, 6},
		{"10 samples", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2, 9},
	}
	for _, tc := range tests {
		iv := MedianCI(tc.xs, 0.95)
		if iv.Lo != tc.lo || iv.Hi != tc.hi {
			t.Errorf("%s: CI = [%v, %v], want [%v, %v]", tc.name, iv.Lo, iv.Hi, tc.lo, tc.hi)
		}
		if iv.Finite() && iv.Confidence < 0.95 {
			t.Errorf("%s: confidence %v < 0.95", tc.name, iv.Confidence)
		}
	}
	if got := NeedForCI(0.95); got != 6 {
		t.Errorf("NeedForCI(0.95) = %d, want 6", got)
	}
}

func TestStable(t *testing.T) {
	tests := []struct {
		name   string
		xs     []float64
		target float64
		want   bool
	}{
		{"too few samples however close", []float64{1, 1, 1, 1, 1}, 0.03, false},
		{"tight 6 samples", []float64{1.00, 1.01, 0.99, 1.02, 0.98, 1.00}, 0.03, true},
		{"one slow outlier among 6 is outside the CI bound", []float64{1.00, 1.01, 0.99, 1.02, 0.98, 1.5}, 0.03, false},
		{"outlier absorbed with 10 samples", []float64{1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00, 1.5}, 0.03, true},
		{"wide", []float64{1, 1.1, 0.9, 1.2, 0.8, 1}, 0.03, false},
		{"wide but within a 25% target", []float64{1, 1.1, 0.9, 1.2, 0.8, 1}, 0.25, true},
		{"default target", []float64{1.00, 1.01, 0.99, 1.02, 0.98, 1.00}, 0, true},
	}
	for _, tc := range tests {
		ok, ci := Stable(tc.xs, tc.target)
		if ok != tc.want {
			t.Errorf("%s: Stable = %v (ci %v), want %v", tc.name, ok, ci, tc.want)
		}
		if ok && (ci[0] > ci[1] || math.IsInf(ci[0], 0)) {
			t.Errorf("%s: bad ci %v", tc.name, ci)
		}
	}
}
