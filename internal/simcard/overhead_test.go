package simcard

import (
	"testing"
	"time"
)

func TestDistribution(t *testing.T) {
	var h hist
	for i := 0; i < 98; i++ {
		h.add(10 * time.Microsecond)
	}
	h.add(2 * time.Millisecond)
	h.add(3 * time.Millisecond)
	d := h.distribution()
	tests := []struct {
		name      string
		got, want uint64
	}{
		{"count", d.Count, 100},
		{"sum", d.SumNs, uint64(98*10*time.Microsecond + 5*time.Millisecond)},
		{"max", d.MaxNs, uint64(3 * time.Millisecond)},
		// 10 µs lies in the bucket up to 1 µs × 2^(14/4) = 11.314 µs.
		{"p50", d.P50Ns, 11314},
		// the 99th of 100 is 2 ms: bucket up to 2^(44/4) µs = 2.048 ms
		{"p99", d.P99Ns, 2048000},
		{"p100 capped at max", d.Quantile(1), uint64(3 * time.Millisecond)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	// The interval between two snapshots: the two slow requests only.
	before := d
	h.add(50 * time.Microsecond)
	h.add(60 * time.Microsecond)
	span := h.distribution().Sub(before)
	if span.Count != 2 || span.SumNs != uint64(110*time.Microsecond) || span.P50Ns != 53817 || span.P99Ns != 64000 {
		t.Errorf("span %+v: want 2 requests, p50 in the bucket up to 53.817 µs, p99 up to 64 µs", span)
	}
	if (Distribution{}).Quantile(0.5) != 0 || (Distribution{}).Mean() != 0 {
		t.Error("an empty distribution has quantiles or a mean")
	}
}
