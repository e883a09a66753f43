package suitekit

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/results"
)

// MinMeasure is the shortest work a rate test gives a figure for: bonnie++ prints "+++++"
// instead of a figure for a test that took under 0.5 s.
const MinMeasure = 500 * time.Millisecond

// Latencies is a histogram of operation times with better than 1 % resolution in constant
// memory (a 2 × RAM bonnie file is millions of chunks), plus the exact maximum, which bonnie++
// prints. Buckets are log-linear (as HdrHistogram's): a value is bucketed by its highest set
// bit and the latBits bits below it, so that Add is a few integer instructions on the hot
// path of the 4 KiB random tests, not a logarithm and a map insert per request.
type Latencies struct {
	counts *[latBuckets]uint64 // allocated on the first Add, or by NewPhase
	n      uint64
	max    time.Duration
}

const (
	latBits    = 7 // bits kept below the leading one: buckets are at most 1/128 wide (< 1 %)
	latSub     = 1 << latBits
	latBuckets = (64 - latBits + 1) * latSub // the last: a leading one at bit 63
)

// latIndex is the bucket of a duration in nanoseconds (values below 2^(latBits+1) exactly).
func latIndex(ns uint64) int {
	e := bits.Len64(ns) // position of the leading one, 1-based
	if e <= latBits+1 {
		return int(ns)
	}
	shift := e - latBits - 1 // ns>>shift is in [latSub, 2·latSub)
	return shift*latSub + int(ns>>shift)
}

// latUpper is the largest duration in nanoseconds that falls into bucket i.
func latUpper(i int) uint64 {
	if i < 2*latSub {
		return uint64(i)
	}
	shift := i/latSub - 1
	mant := uint64(i%latSub + latSub)
	return (mant+1)<<shift - 1
}

// Add counts one operation that took d.
func (l *Latencies) Add(d time.Duration) {
	if l.counts == nil {
		l.counts = new([latBuckets]uint64)
	}
	ns := uint64(max(d, 0))
	l.counts[latIndex(ns)]++
	l.n++
	l.max = max(l.max, d)
}

// Merge adds o's operations to l.
func (l *Latencies) Merge(o *Latencies) {
	if o.counts != nil {
		if l.counts == nil {
			l.counts = new([latBuckets]uint64)
		}
		for i, c := range o.counts {
			l.counts[i] += c
		}
	}
	l.n += o.n
	l.max = max(l.max, o.max)
}

// N is the number of operations counted.
func (l *Latencies) N() uint64 { return l.n }

// Max is the longest operation.
func (l *Latencies) Max() time.Duration { return l.max }

// Quantile returns the q-quantile in seconds: the upper bound of its bucket, never above max.
func (l *Latencies) Quantile(q float64) float64 {
	if l.n == 0 || l.counts == nil {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(l.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range l.counts {
		seen += c
		if seen >= rank {
			return min(float64(latUpper(i))/1e9, l.max.Seconds())
		}
	}
	return l.max.Seconds()
}

// Extra adds the latency figures to a measurement's Extra, in seconds.
func (l *Latencies) Extra(m map[string]float64) {
	if l.n == 0 {
		return
	}
	m["latency_p50_s"] = l.Quantile(0.50)
	m["latency_p99_s"] = l.Quantile(0.99)
	m["latency_p999_s"] = l.Quantile(0.999)
	m["latency_max_s"] = l.max.Seconds()
}

// Phase is what one timed piece of work did.
type Phase struct {
	Ops   int           // operations counted for the rate (chunks, seeks, files, requests)
	Bytes uint64        // bytes written or read
	Work  time.Duration // time up to the last operation, before any final sync
	Lat   Latencies
}

// NewPhase is a phase with its latency histogram allocated, which a lean loop does before
// its clock starts (nothing is then allocated inside it, so the garbage collector never runs
// during the test).
func NewPhase() Phase {
	var p Phase
	p.Lat.counts = new([latBuckets]uint64)
	return p
}

// TimeOp runs op, adding its duration to the phase's latencies.
func (p *Phase) TimeOp(op func() error) error {
	t := time.Now()
	err := op()
	p.Lat.Add(time.Since(t))
	return err
}

// Lap adds the time since *last to the latencies and moves *last to now: one clock read per
// operation, a request's latency being the time since the previous one returned (which adds
// the few tens of nanoseconds of the loop itself).
func (p *Phase) Lap(last *time.Time) {
	now := time.Now()
	p.Lat.Add(now.Sub(*last))
	*last = now
}

// Stopped says whether done is closed, looking at every 64th operation n only: a channel
// check per 8 KiB chunk would cost a good part of what the lean loops save.
func Stopped(done <-chan struct{}, n int) bool {
	if n%64 != 0 {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Rate turns a timed measurement (suites.Rep's Timed) into a rate measurement: Value =
// amount ÷ wall seconds in unit, CPU % and latencies in Extra. Work that took less than
// MinMeasure gives no figure, as bonnie++ prints +++++: its rate would be mostly timer and
// scheduling noise.
func Rate(m results.Measurement, p Phase, amount float64, unit string, notes ...string) results.Measurement {
	if m.Extra == nil {
		m.Extra = map[string]float64{}
	}
	if m.WallSeconds > 0 {
		m.Extra["cpu_pct"] = 100 * (m.UserSeconds + m.SysSeconds) / m.WallSeconds
	}
	m.Extra["ops"] = float64(p.Ops)
	if p.Work > 0 && p.Work.Seconds() < m.WallSeconds*0.999 {
		m.Extra["rate_before_sync"] = amount / p.Work.Seconds()
	}
	p.Lat.Extra(m.Extra)
	m.Unit = unit
	var ns []string
	if m.WallSeconds < MinMeasure.Seconds() {
		m.Status, m.Value = results.NA, nil
		ns = append(ns, fmt.Sprintf("too fast to measure: took %.2f s", m.WallSeconds))
	} else {
		m.Value = results.Float(amount / m.WallSeconds)
	}
	for _, n := range notes {
		if n != "" {
			ns = append(ns, n)
		}
	}
	m.Note = strings.Join(ns, "; ")
	return m
}
