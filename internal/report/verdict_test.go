package report

import "testing"

func TestMarginText(t *testing.T) {
	tests := []struct {
		v    Verdict
		want string
	}{
		{Verdict{RunnerUp: "squashfs-lzo", Unit: "ms", WinnerMedian: 0.516, RunnerMedian: 1.09, Margin: 1.09/0.516 - 1},
			"2.1× faster than squashfs-lzo (0.516 vs 1.09 ms)"},
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
		{Verdict{RunnerUp: "btrfs", Unit: "MB/s", WinnerMedian: 182, RunnerMedian: 193, Margin: 182.0/193 - 1},
			"5.7 % slower than btrfs (182 vs 193 MB/s)"},
		{Verdict{RunnerUp: "", Unit: "MB/s"}, ""},
	}
	for _, tc := range tests {
		if got := tc.v.MarginText(); got != tc.want {
			t.Errorf("MarginText = %q, want %q", got, tc.want)
		}
	}
}
