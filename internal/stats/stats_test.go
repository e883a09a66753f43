package stats

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		in   []float64
		want Summary
	}{
		{"empty", nil, Summary{}},
		{"only NaN", []float64{nan}, Summary{}},
		{"one", []float64{2}, Summary{N: 1, Median: 2, Min: 2, Max: 2}},
		{"odd", []float64{3, 1, 2}, Summary{N: 3, Median: 2, Min: 1, Max: 3}},
		{"even", []float64{4, 1, 3, 2}, Summary{N: 4, Median: 2.5, Min: 1, Max: 4}},
		{"NaN ignored", []float64{5, nan, 1}, Summary{N: 2, Median: 3, Min: 1, Max: 5}},
		{"outlier does not move median", []float64{1, 1, 100}, Summary{N: 3, Median: 1, Min: 1, Max: 100}},
		{"even, sum beyond float64", []float64{math.MaxFloat64, math.MaxFloat64}, Summary{N: 2, Median: math.MaxFloat64, Min: math.MaxFloat64, Max: math.MaxFloat64}},
		{"even, opposite extremes", []float64{-math.MaxFloat64, math.MaxFloat64}, Summary{N: 2, Median: 0, Min: -math.MaxFloat64, Max: math.MaxFloat64}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.in); got != tc.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("input reordered: %v", in)
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		s    Summary
		want float64
	}{
		{Summary{N: 3, Median: 10, Min: 9, Max: 11}, 0.2},
		{Summary{N: 1, Median: 10, Min: 10, Max: 10}, 0},
		{Summary{N: 2, Median: 0, Min: -1, Max: 1}, 0},
	}
	for _, tc := range tests {
		if got := tc.s.Spread(); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v.Spread() = %v, want %v", tc.s, got, tc.want)
		}
	}
}
