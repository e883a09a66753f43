package verdict

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

func TestMarginText(t *testing.T) {
	tests := []struct {
		v    Verdict
		want string
	}{
		{Verdict{RunnerUp: "squashfs-lzo", Unit: "ms", WinnerMedian: 0.516, RunnerMedian: 1.09, Margin: 1.09/0.516 - 1},
			"2.11× faster than squashfs-lzo (0.516 vs 1.09 ms)"},
		{Verdict{RunnerUp: "ext4", Unit: "MB/s", WinnerMedian: 193, RunnerMedian: 182, Margin: 193.0/182 - 1},
			"6.0 % faster than ext4 (193 vs 182 MB/s)"},
		{Verdict{RunnerUp: "ext2", Unit: "MB/s", WinnerMedian: 202, RunnerMedian: 196, Margin: 202.0/196 - 1},
			"3.1 % faster than ext2 (202 vs 196 MB/s)"},
		{Verdict{RunnerUp: "xfs", Unit: "MB/s", WinnerMedian: 200.2, RunnerMedian: 200, Margin: 200.2/200 - 1},
			"about as fast as xfs (200 vs 200 MB/s)"},
		{Verdict{RunnerUp: "erofs-lz4hc", Unit: "% data", WinnerMedian: 44.2, RunnerMedian: 66.0, Margin: 66.0/44.2 - 1},
			"33 % less space than erofs-lz4hc (44.2 vs 66.0 % data)"},
		{Verdict{RunnerUp: "ext4-nojournal", Unit: "x written", WinnerMedian: 2.14, RunnerMedian: 2.87, Margin: 2.87/2.14 - 1},
			"25 % less flash written than ext4-nojournal (2.14 vs 2.87 x written)"},
		{Verdict{RunnerUp: "", Unit: "MB/s"}, ""},
	}
	for _, tc := range tests {
		if got := tc.v.MarginText(); got != tc.want {
			t.Errorf("MarginText = %q, want %q", got, tc.want)
		}
	}
}

// TestTieRule: a verdict names a winner only when the best-ranked variant differs
// significantly from every variant it is compared with; otherwise it says "no clear winner"
// and names every variant the data cannot tell apart from the best.
func TestTieRule(t *testing.T) {
	tests := []struct {
		name string
		data map[string][]float64 // mount times in s, per variant
		want string               // the verdict's line
	}{
		{"clear winner",
			map[string][]float64{"a": {1, 1.1, 1.2, 1.3}, "b": {2, 2.1, 2.2, 2.3}, "c": {3, 3.1, 3.2, 3.3}},
			"a; 1.87× faster than b (1150 vs 2150 ms); significant (p=0.029 n=4)"},
		{"a tie of two, the third apart",
			map[string][]float64{"a": {1, 1.1, 1.2, 1.35}, "b": {1.3, 1.4, 1.5, 1.6}, "c": {3, 3.1, 3.2, 3.3}},
			"no clear winner: a, b within noise; medians from 1150 (a) to 1450 ms (b); not significant (p=0.057 n=4)"},
		{"all equal",
			map[string][]float64{"a": {1, 1, 1, 1}, "b": {1, 1, 1, 1}},
			"no clear winner: a, b within noise; the same median, 1000 ms; not significant (p=1.000 n=4)"},
		{"three repetitions cannot tell",
			map[string][]float64{"a": {1, 1.1, 1.2}, "b": {2, 2.1, 2.2}},
			"no clear winner: a, b within noise; medians from 1100 (a) to 2100 ms (b); cannot tell: need >= 4 repetitions per side (have 3)"},
		// b is significantly slower than a, but c, slower still by its median, is not: its
		// one fast repetition overlaps a's. Every variant the data cannot tell apart is named.
		{"a wider variant further down is in the tie",
			map[string][]float64{"a": {1, 1.1, 1.2, 1.3}, "b": {2, 2.1, 2.2, 2.3}, "c": {1.25, 5, 5.1, 5.2}},
			"no clear winner: a, c within noise; medians from 1150 (a) to 5050 ms (c); not significant (p=0.057 n=4)"},
		{"one variant",
			map[string][]float64{"a": {1, 1.1, 1.2, 1.3}},
			"no comparison: only a has data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := map[string]map[string][]float64{}
			for v, xs := range tc.data {
				data[v] = map[string][]float64{"mount": xs}
			}
			vs := Verdicts(runOf(data), 0)
			if len(vs) != 1 || vs[0].Priority != "boot/mount time" {
				t.Fatalf("verdicts %+v, want boot/mount time alone", vs)
			}
			v := vs[0]
			if got := v.Line(); got != tc.want {
				t.Errorf("line\n got %q\nwant %q", got, tc.want)
			}
			if strings.HasPrefix(tc.want, "a;") != v.Clear() {
				t.Errorf("Clear() = %v for %q", v.Clear(), tc.want)
			}
		})
	}
}

// TestReadMostlySpaceAmongTied: the variants whose read cannot be told apart from the best are
// ranked by space; a read the data does tell apart wins on its own.
func TestReadMostlySpaceAmongTied(t *testing.T) {
	read := func(v string, mbps ...float64) []results.Measurement {
		var out []results.Measurement
		for i, x := range mbps {
			out = append(out, results.Measurement{Variant: v, Test: catalog.Read, Rep: i + 1, Status: results.OK,
				Value: results.Float(100 / x), Unit: "s", WallSeconds: 100 / x, LogicalBytes: 100e6})
		}
		return out
	}
	space := func(v string, share float64) []results.Measurement {
		var out []results.Measurement
		for i := range 4 {
			out = append(out, results.Measurement{Variant: v, Test: catalog.UsedSpace, Rep: i + 1, Status: results.OK,
				Value: results.Float(share * 1e8), Unit: "bytes", Extra: map[string]float64{"used_per_logical": share}})
		}
		return out
	}
	run := func(ms ...[]results.Measurement) *results.Run {
		r := &results.Run{}
		for _, v := range []string{"fast", "small", "big"} {
			r.Variants = append(r.Variants, results.Variant{Name: v, FS: v, Status: results.OK})
		}
		for _, m := range ms {
			r.Measurements = append(r.Measurements, m...)
		}
		return r
	}
	tests := []struct {
		name string
		r    *results.Run
		want string
	}{
		{"read tied: the least space",
			run(read("fast", 200, 210, 190, 205), read("small", 195, 200, 185, 208), read("big", 100, 101, 102, 103),
				space("fast", 1.1), space("small", 0.45), space("big", 0.4)),
			"small; 59 % less space than fast (45.0 vs 110 % data); significant (p=0.029 n=4); its read cannot be told from fast's (198 vs 202 MB/s, p=0.571 n=4)"},
		{"read apart: the fastest",
			run(read("fast", 300, 310, 290, 305), read("small", 195, 200, 185, 208), read("big", 100, 101, 102, 103),
				space("fast", 1.1), space("small", 0.45), space("big", 0.4)),
			"fast; 1.53× faster than small (302 vs 198 MB/s); significant (p=0.029 n=4)"},
		{"read tied and the same space",
			run(read("fast", 200, 210, 190, 205), read("small", 195, 200, 185, 208), read("big", 100, 101, 102, 103),
				space("fast", 0.45), space("small", 0.45), space("big", 0.4)),
			"no clear winner: fast, small within noise; the same median, 45.0 % data; not significant (p=1.000 n=4); the fastest reader (202 MB/s)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := readMostly(tc.r, 0).Line(); got != tc.want {
				t.Errorf("line\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
