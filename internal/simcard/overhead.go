package simcard

import (
	"math"
	"time"
)

// Distribution is a histogram of per-request real times of the server itself (not of the
// modelled card), in nanoseconds, with its median and 99th percentile. Buckets grow in steps
// of 2^(1/4) (about 19 %) from 1 µs, so a percentile is exact to that step; it is reported as
// the upper bound of its bucket (never below the true value), capped at MaxNs.
type Distribution struct {
	Count uint64 `json:"count"`
	SumNs uint64 `json:"sum_ns"`
	P50Ns uint64 `json:"p50_ns"`
	P99Ns uint64 `json:"p99_ns"`
	// MaxNs is the largest time seen. In a difference of two snapshots (Sub) it is the later
	// snapshot's, an upper bound for the interval.
	MaxNs   uint64   `json:"max_ns"`
	Buckets []Bucket `json:"buckets"` // the non-empty buckets, ascending
}

// Bucket counts the times above the previous bucket's LeNs and at most its own.
type Bucket struct {
	LeNs  uint64 `json:"le_ns"`
	Count uint64 `json:"count"`
}

// histSteps buckets per doubling; histN buckets reach 1 µs × 2^24 ≈ 17 s, and the last one
// also takes anything longer.
const (
	histSteps = 4
	histN     = histSteps*24 + 1
)

// histBounds are the buckets' upper bounds in nanoseconds.
var histBounds = func() [histN]uint64 {
	var b [histN]uint64
	for k := range b {
		b[k] = uint64(math.Round(1000 * math.Pow(2, float64(k)/histSteps)))
	}
	b[histN-1] = math.MaxUint64
	return b
}()

// hist accumulates a Distribution; it is not safe for concurrent use (the Card's mutex guards it).
type hist struct {
	n               [histN]uint64
	count, sum, max uint64
}

func (h *hist) add(d time.Duration) {
	ns := uint64(max(d, 0))
	k := 0
	for k < histN-1 && ns > histBounds[k] {
		k++
	}
	h.n[k]++
	h.count++
	h.sum += ns
	h.max = max(h.max, ns)
}

func (h *hist) distribution() Distribution {
	d := Distribution{Count: h.count, SumNs: h.sum, MaxNs: h.max}
	for k, n := range h.n {
		if n > 0 {
			d.Buckets = append(d.Buckets, Bucket{LeNs: histBounds[k], Count: n})
		}
	}
	d.percentiles()
	return d
}

func (d *Distribution) percentiles() {
	d.P50Ns, d.P99Ns = d.Quantile(0.5), d.Quantile(0.99)
}

// Quantile returns the upper bound of the bucket holding the q-quantile (0 < q ≤ 1), capped
// at MaxNs; 0 when empty.
func (d Distribution) Quantile(q float64) uint64 {
	if d.Count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(d.Count)))
	var seen uint64
	for _, b := range d.Buckets {
		seen += b.Count
		if seen >= rank {
			return min(b.LeNs, d.MaxNs)
		}
	}
	return d.MaxNs
}

// Mean returns the mean time, 0 when empty.
func (d Distribution) Mean() time.Duration {
	if d.Count == 0 {
		return 0
	}
	return time.Duration(d.SumNs / d.Count)
}

// Sub returns the distribution of the requests between an earlier snapshot old and d.
func (d Distribution) Sub(old Distribution) Distribution {
	prev := map[uint64]uint64{}
	for _, b := range old.Buckets {
		prev[b.LeNs] = b.Count
	}
	out := Distribution{Count: d.Count - old.Count, SumNs: d.SumNs - old.SumNs, MaxNs: d.MaxNs}
	for _, b := range d.Buckets {
		if n := b.Count - prev[b.LeNs]; n > 0 {
			out.Buckets = append(out.Buckets, Bucket{LeNs: b.LeNs, Count: n})
		}
	}
	out.percentiles()
	return out
}
