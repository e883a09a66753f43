package trace

import (
	"math/bits"
	"slices"
	"sort"
	"time"
)

// DirStats counts the requests of one direction.
type DirStats struct {
	Requests uint64 `json:"requests"`
	Bytes    uint64 `json:"bytes"`
}

// Latency is a latency distribution, in nanoseconds, over the completed requests of a set.
// Percentiles are nearest-rank: p50 is the smallest latency at least half the requests do
// not exceed.
type Latency struct {
	Count uint64 `json:"count"`
	P50Ns uint64 `json:"p50_ns"`
	P99Ns uint64 `json:"p99_ns"`
	MaxNs uint64 `json:"max_ns"`
}

// SizeBucket is the requests whose size is in [Bytes, 2×Bytes).
type SizeBucket struct {
	Bytes        uint64  `json:"bytes"`
	Reads        uint64  `json:"reads"`
	Writes       uint64  `json:"writes"`
	Discards     uint64  `json:"discards"` // discards and secure erases
	ReadLatency  Latency `json:"read_latency"`
	WriteLatency Latency `json:"write_latency"`
}

// Alignment counts the writes that start and end on multiples of Unit, i.e. that cover only
// whole units: the card need not read-modify-write a partial page or merge a partial AU.
type Alignment struct {
	Unit    uint64  `json:"unit"`
	Writes  uint64  `json:"writes"`
	Bytes   uint64  `json:"bytes"`
	Share   float64 `json:"share"`    // of write requests (0 when there are none)
	ByBytes float64 `json:"by_bytes"` // of written bytes
}

// Summary is what a trace says about the workload, as recorded in results.json.
type Summary struct {
	Requests   uint64   `json:"requests"`
	Read       DirStats `json:"read"`
	Write      DirStats `json:"write"`
	Discard    DirStats `json:"discard"`    // discards and secure erases
	Other      DirStats `json:"other"`      // rwbs "N": write-zeroes and the like
	Flushes    uint64   `json:"flushes"`    // cache-flush requests
	Preflushes uint64   `json:"preflushes"` // data requests carrying REQ_PREFLUSH
	FUA        uint64   `json:"fua"`        // writes with forced unit access
	Sync       uint64   `json:"sync"`
	Meta       uint64   `json:"meta"` // requests flagged as filesystem metadata
	Errors     uint64   `json:"errors"`
	// Sizes is the request-size histogram (data requests only), smallest bucket first.
	Sizes          []SizeBucket `json:"sizes"`
	Aligned4K      Alignment    `json:"aligned_4k"`
	AlignedPage    Alignment    `json:"aligned_page"`
	AlignedAU      Alignment    `json:"aligned_au"`
	FlushLatency   Latency      `json:"flush_latency"`
	BusyNs         uint64       `json:"busy_ns"` // union of the issue→completion intervals
	SpanNs         uint64       `json:"span_ns"` // first issue to last completion
	Incomplete     uint64       `json:"incomplete"`
	Lost           uint64       `json:"lost_events"`
	UnmatchedCompl uint64       `json:"unmatched_completions"`
}

// Summarize computes t's summary; pageSize and auSize (bytes, 0 to skip) are the card's flash
// page and allocation unit for the alignment shares.
func Summarize(t *Trace, pageSize, auSize uint64) Summary {
	s := Summary{Lost: t.Lost, UnmatchedCompl: t.Unmatched}
	s.Aligned4K.Unit, s.AlignedPage.Unit, s.AlignedAU.Unit = 4096, pageSize, auSize
	h := sizeHistogram{buckets: map[int]*SizeBucket{}, lats: map[int]*bucketLatencies{}}
	var flushLat []uint64
	var ivs []interval
	for _, r := range t.Requests {
		s.Requests++
		n := r.Len()
		s.countOp(r, n)
		if r.Op == OpFlush && r.Done {
			flushLat = append(flushLat, uint64(r.Latency))
		}
		s.countFlags(r)
		if !r.Done {
			s.Incomplete++
		} else {
			ivs = append(ivs, interval{r.Issue, r.Issue + r.Latency})
		}
		if n == 0 || r.Op == OpFlush || r.Op == OpOther {
			continue
		}
		h.add(r, n)
	}
	s.Sizes = h.sizes()
	s.FlushLatency = latency(flushLat)
	for _, a := range []*Alignment{&s.Aligned4K, &s.AlignedPage, &s.AlignedAU} {
		if s.Write.Requests > 0 {
			a.Share = float64(a.Writes) / float64(s.Write.Requests)
		}
		if s.Write.Bytes > 0 {
			a.ByBytes = float64(a.Bytes) / float64(s.Write.Bytes)
		}
	}
	if len(ivs) > 0 {
		s.BusyNs, s.SpanNs = busy(ivs, t.Requests[0].Issue)
	}
	return s
}

// countOp counts request r of n bytes under its operation, and a write under each alignment
// it meets.
func (s *Summary) countOp(r Request, n uint64) {
	switch r.Op {
	case OpRead:
		s.Read.Requests++
		s.Read.Bytes += n
	case OpWrite:
		s.Write.Requests++
		s.Write.Bytes += n
		for _, a := range []*Alignment{&s.Aligned4K, &s.AlignedPage, &s.AlignedAU} {
			if n > 0 && a.Unit > 0 && r.Off()%a.Unit == 0 && n%a.Unit == 0 {
				a.Writes++
				a.Bytes += n
			}
		}
	case OpDiscard, OpSecureErase:
		s.Discard.Requests++
		s.Discard.Bytes += n
	case OpFlush:
		s.Flushes++
	case OpOther:
		s.Other.Requests++
		s.Other.Bytes += n
	}
}

// countFlags counts r's flags.
func (s *Summary) countFlags(r Request) {
	count := func(flag Flags, p *uint64) {
		if r.Flags&flag != 0 {
			*p++
		}
	}
	if r.Op != OpFlush {
		// The flush machinery's own flushes are "FF" (preflush + flush): counted
		// once, in Flushes.
		count(FlagPreflush, &s.Preflushes)
	}
	count(FlagFUA, &s.FUA)
	count(FlagSync, &s.Sync)
	count(FlagMeta, &s.Meta)
	count(FlagError, &s.Errors)
}

// bucketLatencies are the read and write latencies of one size bucket.
type bucketLatencies struct{ r, w []uint64 }

// sizeHistogram counts data requests by size, in power-of-two buckets (k: 2^k bytes).
type sizeHistogram struct {
	buckets map[int]*SizeBucket
	lats    map[int]*bucketLatencies
}

// add counts r, of n > 0 bytes, in its bucket.
func (h sizeHistogram) add(r Request, n uint64) {
	k := bits.Len64(n) - 1
	b := h.buckets[k]
	if b == nil {
		b = &SizeBucket{Bytes: 1 << k}
		h.buckets[k], h.lats[k] = b, &bucketLatencies{}
	}
	switch r.Op {
	case OpRead:
		b.Reads++
		if r.Done {
			h.lats[k].r = append(h.lats[k].r, uint64(r.Latency))
		}
	case OpWrite:
		b.Writes++
		if r.Done {
			h.lats[k].w = append(h.lats[k].w, uint64(r.Latency))
		}
	default:
		b.Discards++
	}
}

// sizes returns the buckets, smallest first, with their latencies.
func (h sizeHistogram) sizes() []SizeBucket {
	var out []SizeBucket
	for k, b := range h.buckets {
		b.ReadLatency, b.WriteLatency = latency(h.lats[k].r), latency(h.lats[k].w)
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Bytes < out[j].Bytes })
	return out
}

// interval is a request's time in flight, issue to completion.
type interval struct{ a, b time.Duration }

// busy returns the union of the in-flight intervals ivs (not empty; sorted here), as the
// device's io_ticks would count it had it exact timestamps, and the span from first (the
// first request's issue) to the last completion.
func busy(ivs []interval, first time.Duration) (busyNs, spanNs uint64) {
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].a < ivs[j].a })
	cur := ivs[0]
	for _, v := range ivs[1:] {
		if v.a > cur.b {
			busyNs += uint64(cur.b - cur.a)
			cur = v
		} else if v.b > cur.b {
			cur.b = v.b
		}
	}
	busyNs += uint64(cur.b - cur.a)
	end := ivs[0].b
	for _, v := range ivs {
		end = max(end, v.b)
	}
	return busyNs, uint64(end - first)
}

// latency computes the nearest-rank percentiles of v (which it sorts).
func latency(v []uint64) Latency {
	if len(v) == 0 {
		return Latency{}
	}
	slices.Sort(v)
	rank := func(p int) uint64 {
		i := (p*len(v) + 99) / 100 // ceil(p/100 × n), 1-based
		return v[max(i, 1)-1]
	}
	return Latency{Count: uint64(len(v)), P50Ns: rank(50), P99Ns: rank(99), MaxNs: v[len(v)-1]}
}
