package verdict

import (
	"math"
	"testing"
)

func TestRatingForRatio(t *testing.T) {
	tests := []struct {
		ratio float64
		want  Rating
	}{
		{1, Best}, {1.05, Best}, {1.0501, VeryGood}, {1.25, VeryGood}, {1.3, Good}, {1.5, Good},
		{1.9, Fair}, {2, Fair}, {2.5, Average}, {3, Average}, {4, Bad}, {5, Bad}, {5.01, Worst},
		{math.Inf(1), Worst},
	}
	for _, tc := range tests {
		if got := RatingForRatio(tc.ratio); got != tc.want {
			t.Errorf("RatingForRatio(%v) = %v, want %v", tc.ratio, got, tc.want)
		}
	}
	if Best.Letter() != "A" || Worst.Letter() != "G" || Rating(0).Letter() != "-" {
		t.Errorf("letters: %s %s %s", Best.Letter(), Worst.Letter(), Rating(0).Letter())
	}
}

func TestRate(t *testing.T) {
	tests := []struct {
		name         string
		samples      map[string][]float64
		higherBetter bool
		want         map[string]Rating
		tied         map[string]string
	}{
		{
			name: "times by ratio, 3 reps, disjoint ranges",
			samples: map[string][]float64{
				"a": {1.00, 1.01, 1.02}, "b": {1.20, 1.21, 1.22}, "c": {2.9, 3.0, 3.1}, "d": {9, 10, 11},
			},
			want: map[string]Rating{"a": Best, "b": VeryGood, "c": Average, "d": Worst},
		},
		{
			name: "throughput: higher is better",
			samples: map[string][]float64{
				"fast": {200, 201, 202}, "half": {100, 101, 102}, "slow": {10, 11, 12},
			},
			higherBetter: true,
			want:         map[string]Rating{"fast": Best, "half": Fair, "slow": Worst},
		},
		{
			name: "overlapping ranges with 3 reps tie within 25 %",
			samples: map[string][]float64{
				"a": {1.0, 1.1, 1.4}, "b": {1.05, 1.2, 1.3},
			},
			want: map[string]Rating{"a": Best, "b": Best},
			tied: map[string]string{"b": "a"},
		},
		{
			name: "overlap beyond 25 % keeps its own rating",
			samples: map[string][]float64{
				"a": {1.0, 1.1, 3.0}, "b": {1.2, 1.6, 1.8},
			},
			want: map[string]Rating{"a": Best, "b": Good},
		},
		{
			name: "6 reps: U test decides, significant difference keeps ratings apart",
			samples: map[string][]float64{
				"a": {1.00, 1.01, 1.02, 1.03, 1.04, 1.05}, "b": {1.10, 1.11, 1.12, 1.13, 1.14, 1.15},
			},
			want: map[string]Rating{"a": Best, "b": VeryGood},
		},
		{
			name: "6 reps: not significant means a tie",
			samples: map[string][]float64{
				"a": {1.0, 1.3, 1.05, 1.25, 1.1, 1.2}, "b": {1.08, 1.38, 1.13, 1.33, 1.18, 1.28},
			},
			want: map[string]Rating{"a": Best, "b": Best},
			tied: map[string]string{"b": "a"},
		},
		{
			name: "ties do not chain",
			samples: map[string][]float64{
				"a": {1.00, 1.02, 1.04}, "b": {1.04, 1.10, 1.16}, "c": {1.16, 1.22, 1.28},
			},
			want: map[string]Rating{"a": Best, "b": Best, "c": VeryGood},
			// c overlaps b, but b's own rating is no better than c's: c is not lifted to a's.
			tied: map[string]string{"b": "a"},
		},
		{
			name:    "best median not positive: not rated",
			samples: map[string][]float64{"a": {-2, -1, 0}, "b": {5, 6, 7}},
			want:    map[string]Rating{"a": 0, "b": 0},
		},
		{
			name:    "no samples: left out",
			samples: map[string][]float64{"a": {1}, "none": nil},
			want:    map[string]Rating{"a": Best},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Rate(tc.samples, tc.higherBetter, 0)
			if len(got) != len(tc.want) {
				t.Errorf("rated %d variants, want %d", len(got), len(tc.want))
			}
			for name, want := range tc.want {
				if got[name].Rating != want {
					t.Errorf("%s: %v (ratio %.3f), want %v", name, got[name].Rating, got[name].Ratio, want)
				}
				if got[name].TiedWith != tc.tied[name] {
					t.Errorf("%s: tied with %q, want %q", name, got[name].TiedWith, tc.tied[name])
				}
			}
		})
	}
}

func TestDistinguishable(t *testing.T) {
	tests := []struct {
		name string
		a, b []float64
		want bool
	}{
		{"3 reps apart: by ranges", []float64{1, 1.1, 1.2}, []float64{1.3, 1.4, 1.5}, true},
		{"3 reps overlapping", []float64{1, 1.1, 1.35}, []float64{1.3, 1.4, 1.5}, false},
		{"4 reps apart: U test p=0.029", []float64{1, 1.1, 1.2, 1.25}, []float64{1.3, 1.4, 1.5, 1.6}, true},
		{"4 reps, one overlap: p=0.057", []float64{1, 1.1, 1.2, 1.35}, []float64{1.3, 1.4, 1.5, 1.6}, false},
	}
	for _, tc := range tests {
		if got := Distinguishable(tc.a, tc.b, 0.05); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestVerdicts(t *testing.T) {
	vs := Verdicts(loadRun(t), 0)
	want := []string{"boot/mount time", "read-mostly rootfs", "write-heavy data", "space", "flash wear"}
	if len(vs) != len(want) {
		t.Fatalf("%d verdicts, want %d", len(vs), len(want))
	}
	for i, v := range vs {
		if v.Priority != want[i] {
			t.Errorf("verdict %d is %q, want %q", i, v.Priority, want[i])
		}
	}
	if vs[4].Winner != "" || vs[4].Note != "not measured in this run" {
		t.Errorf("flash wear: %+v", vs[4])
	}
	// Read-only images cannot take part in the write-heavy verdict.
	if w := vs[2].Winner; w == "squashfs-lzo" || w == "erofs-lz4hc" || w == "" {
		t.Errorf("write-heavy winner %q", w)
	}
	for _, v := range vs[:4] {
		if v.RunnerUp == "" || v.Significance == "" {
			t.Errorf("%s: no runner-up or significance: %+v", v.Priority, v)
		}
	}
}

func TestVerdictThreeRepsCannotTell(t *testing.T) {
	// fixture-like run: 3 repetitions each, completely apart.
	r := runOf(map[string]map[string][]float64{
		"a": {"mount": {0.010, 0.011, 0.012}},
		"b": {"mount": {0.020, 0.021, 0.022}},
	})
	v := Verdicts(r, 0)[0]
	if v.Winner != "a" || v.Significant || v.Significance != "cannot tell: need >= 4 repetitions per side (have 3)" {
		t.Errorf("verdict %+v", v)
	}
}
