package suitekit

import (
	"math"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

func TestLatencies(t *testing.T) {
	var l Latencies
	for i := 1; i <= 1000; i++ {
		l.Add(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct{ q, want float64 }{{0.5, 500e-6}, {0.99, 990e-6}, {0.999, 999e-6}, {1, 1000e-6}} {
		if got := l.Quantile(tc.q); math.Abs(got-tc.want)/tc.want > 0.011 {
			t.Errorf("Quantile(%v) = %v, want %v within 1 %%", tc.q, got, tc.want)
		}
	}
	var other Latencies
	other.Add(2 * time.Second)
	l.Merge(&other)
	if l.N() != 1001 || l.Max() != 2*time.Second {
		t.Errorf("Merge: n %d max %v", l.N(), l.Max())
	}
	m := map[string]float64{}
	l.Extra(m)
	if m["latency_max_s"] != 2 || m["latency_p50_s"] <= 0 || m["latency_p999_s"] < m["latency_p99_s"] {
		t.Errorf("Extra = %v", m)
	}
}

// TestLatencyBuckets checks the log-linear buckets: every value lands in a bucket whose upper
// bound is at or above it and less than 1 % above it, and the buckets are in order.
func TestLatencyBuckets(t *testing.T) {
	values := []uint64{0, 1, 2, 127, 128, 255, 256, 257, 1000, 4095, 4096, 150_000, 1<<40 + 12345, math.MaxInt64}
	for v := uint64(300); v < 1<<22; v = v*17/16 + 1 {
		values = append(values, v)
	}
	for _, v := range values {
		i := latIndex(v)
		if i < 0 || i >= latBuckets {
			t.Fatalf("latIndex(%d) = %d, outside [0, %d)", v, i, latBuckets)
		}
		up := latUpper(i)
		if up < v || float64(up-v) > 0.01*float64(v) {
			t.Errorf("value %d: bucket %d has upper bound %d", v, i, up)
		}
		if i > 0 && latUpper(i-1) >= v {
			t.Errorf("value %d: the bucket below (%d) already reaches %d", v, i-1, latUpper(i-1))
		}
	}
}

func TestRateTooFast(t *testing.T) {
	p := Phase{Ops: 100, Work: 150 * time.Millisecond}
	p.Lat.Add(time.Millisecond)
	fast := Rate(results.Measurement{Test: "bonnie_seq_create", Status: results.OK, WallSeconds: 0.21, UserSeconds: 0.1, SysSeconds: 0.05}, p, 100, catalog.FilesPerSec, "scaled")
	if fast.Status != results.NA || fast.Value != nil || fast.Note != "too fast to measure: took 0.21 s; scaled" {
		t.Errorf("fast: status %s value %v note %q", fast.Status, fast.Value, fast.Note)
	}
	if math.Abs(fast.Extra["cpu_pct"]-100*0.15/0.21) > 1e-9 || fast.Extra["latency_max_s"] != 0.001 {
		t.Errorf("fast extra = %v", fast.Extra)
	}
	slow := Rate(results.Measurement{Status: results.OK, WallSeconds: 2, UserSeconds: 0.5}, Phase{Ops: 1000, Work: time.Second}, 1000, catalog.FilesPerSec)
	if slow.Status != results.OK || *slow.Value != 500 || slow.Unit != catalog.FilesPerSec || slow.Extra["rate_before_sync"] != 1000 || slow.Extra["cpu_pct"] != 25 {
		t.Errorf("slow: %+v %v", slow, slow.Extra)
	}
}
