package trace

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	tr := &Trace{Lost: 1, Unmatched: 2, Requests: []Request{
		{Issue: us(0), Latency: us(100), Done: true, Sector: 0, Sectors: 8, Op: OpWrite, Flags: FlagSync},              // 4 KiB, 4K-aligned
		{Issue: us(50), Latency: us(100), Done: true, Sector: 32, Sectors: 32, Op: OpWrite, Flags: FlagFUA | FlagMeta}, // 16 KiB at 16 KiB
		{Issue: us(300), Latency: us(200), Done: true, Sector: 1, Sectors: 8, Op: OpWrite},                             // 4 KiB, unaligned
		{Issue: us(1000), Latency: us(1000), Done: true, Sector: 128, Sectors: 128, Op: OpWrite, Flags: FlagPreflush},  // 64 KiB at 64 KiB
		{Issue: us(1000), Latency: us(10), Done: true, Sector: 0, Sectors: 1, Op: OpRead, Flags: FlagMeta},             // 512 B
		{Issue: us(2100), Latency: us(50), Done: true, Op: OpFlush, Flags: FlagPreflush},                               // FF
		{Issue: us(3000), Sector: 0, Sectors: 2048, Op: OpDiscard},                                                     // 1 MiB, in flight
		{Issue: us(3000), Latency: us(30), Done: true, Sector: 8, Sectors: 8, Op: OpRead},                              // 4 KiB
		{Issue: us(3001), Latency: us(1), Done: true, Sector: 4096, Sectors: 8, Op: OpOther, Flags: FlagError},         // write-zeroes
	}}
	lat := func(n uint64, p50, p99, max int) Latency {
		return Latency{Count: n, P50Ns: uint64(us(p50)), P99Ns: uint64(us(p99)), MaxNs: uint64(us(max))}
	}
	want := Summary{
		Requests: 9,
		Read:     DirStats{2, 512 + 4096},
		Write:    DirStats{4, 4096 + 16384 + 4096 + 65536},
		Discard:  DirStats{1, 1 << 20},
		Other:    DirStats{1, 4096},
		Flushes:  1, Preflushes: 1, FUA: 1, Sync: 1, Meta: 2, Errors: 1,
		Sizes: []SizeBucket{
			{Bytes: 512, Reads: 1, ReadLatency: lat(1, 10, 10, 10)},
			{Bytes: 4096, Reads: 1, Writes: 2, ReadLatency: lat(1, 30, 30, 30), WriteLatency: lat(2, 100, 200, 200)},
			{Bytes: 16384, Writes: 1, WriteLatency: lat(1, 100, 100, 100)},
			{Bytes: 65536, Writes: 1, WriteLatency: lat(1, 1000, 1000, 1000)},
			{Bytes: 1 << 20, Discards: 1},
		},
		Aligned4K:      Alignment{Unit: 4096, Writes: 3, Bytes: 86016, Share: 0.75, ByBytes: 86016.0 / 90112},
		AlignedPage:    Alignment{Unit: 16384, Writes: 2, Bytes: 81920, Share: 0.5, ByBytes: 81920.0 / 90112},
		AlignedAU:      Alignment{Unit: 65536, Writes: 1, Bytes: 65536, Share: 0.25, ByBytes: 65536.0 / 90112},
		FlushLatency:   lat(1, 50, 50, 50),
		BusyNs:         uint64(us(150 + 200 + 1000 + 50 + 30 + 1)), // [0,150] [300,500] [1000,2000] [2100,2150] [3000,3030] [3001,3002]... merged
		SpanNs:         uint64(us(3030)),
		Incomplete:     1,
		Lost:           1,
		UnmatchedCompl: 2,
	}
	// [3001,3002] lies inside [3000,3030]: it adds nothing.
	want.BusyNs -= uint64(us(1))
	got := Summarize(tr, 16384, 65536)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Summarize (-want +got):\n%s", d)
	}
}

func TestSummarizeEmpty(t *testing.T) {
	got := Summarize(&Trace{}, 0, 0)
	want := Summary{Aligned4K: Alignment{Unit: 4096}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Summarize(empty) (-want +got):\n%s", d)
	}
}

func TestLatencyPercentiles(t *testing.T) {
	tests := []struct {
		in   []uint64
		want Latency
	}{
		{nil, Latency{}},
		{[]uint64{7}, Latency{1, 7, 7, 7}},
		{[]uint64{4, 1, 3, 2}, Latency{4, 2, 4, 4}},
		{seq(100), Latency{100, 50, 99, 100}},
		{seq(1000), Latency{1000, 500, 990, 1000}},
	}
	for _, tt := range tests {
		if got := latency(tt.in); got != tt.want {
			t.Errorf("latency(%d values) = %+v, want %+v", len(tt.in), got, tt.want)
		}
	}
}

// seq returns n, n-1, ..., 1.
func seq(n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = uint64(n - i)
	}
	return v
}
