package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// SustainedSchema is the version tag of sustained.json.
const SustainedSchema = "fsbench.sustained/v1"

// Card states the sustained test starts from (SustainedOptions.CardState).
const (
	CardFresh = "fresh" // discarded whole first: every block free, as a new card
	CardUsed  = "used"  // written whole once first, nothing discarded: every block holds data
)

// SustainedOptions say what the sustained-write test does. Zero values take the defaults.
type SustainedOptions struct {
	// Bytes is how much the test writes from the start of the device (default: all of it).
	Bytes uint64
	// Block is the size of each O_DIRECT write (default 1 MiB).
	Block uint64
	// Idle is how long the card is left alone before the recovery pass (default 30 s; below
	// 0: no recovery pass).
	Idle time.Duration
	// CardState is CardFresh (default) or CardUsed.
	CardState string
	// Sample is the longest a rate sample lasts (default 250 ms, so at least two a second).
	Sample time.Duration
	// Sleep waits (default time.Sleep; a test of the model advances the model's idle time).
	Sleep func(time.Duration)
	// Log receives progress lines, at least one every 10 s (nil: silent).
	Log func(format string, args ...any)
}

// RateSample is one stretch of the writes: at most SustainedOptions.Sample of the card's time,
// and at most a 4096th of the pass.
type RateSample struct {
	End        uint64  `json:"end"`   // byte position the stretch ends at
	Bytes      uint64  `json:"bytes"` // written in it
	Ns         int64   `json:"ns"`    // the writes' time
	MBps       float64 `json:"mbps"`
	MaxWriteNs int64   `json:"max_write_ns"` // its longest single write
}

// Pass is one sequential pass of writes from the start of the device, with what the fit of
// its time against its position found.
type Pass struct {
	Bytes   uint64       `json:"bytes"`
	Ns      int64        `json:"ns"`
	Samples []RateSample `json:"samples"`
	// Cliff: the rate drops at CliffAt from BurstMBps to AfterMBps (a two-segment fit of the
	// time against the position; see fitCliff). Without a cliff BurstMBps is the pass's rate.
	Cliff      bool    `json:"cliff"`
	CliffAt    uint64  `json:"cliff_at,omitempty"`
	BurstMBps  float64 `json:"burst_mbps"`
	AfterMBps  float64 `json:"after_mbps,omitempty"`
	MaxWriteNs int64   `json:"max_write_ns"`
}

// SustainedResult is sustained.json: the whole test.
type SustainedResult struct {
	Schema    string    `json:"schema"`
	Device    string    `json:"device"`
	Start     time.Time `json:"start"`
	SizeBytes uint64    `json:"size_bytes"`
	Block     uint64    `json:"block"`
	// CardState is what the card was made before the test, and Prepared how.
	CardState string `json:"card_state"`
	Prepared  string `json:"prepared"`
	// First is the measured pass; CacheBytes its cliff (0: none seen), the card's SLC (or
	// other write) cache as the writes found it.
	First      Pass   `json:"first"`
	CacheBytes uint64 `json:"cache_bytes"`
	// After the first pass the card was left alone IdleNs; Recovery is the pass that followed,
	// and RecoveredBytes what it wrote at the burst rate: the cache that came back
	// (RecoveredAtLeast: the pass ended before the rate dropped).
	IdleNs           int64  `json:"idle_ns,omitempty"`
	Recovery         *Pass  `json:"recovery,omitempty"`
	RecoveredBytes   uint64 `json:"recovered_bytes,omitempty"`
	RecoveredAtLeast bool   `json:"recovered_at_least,omitempty"`
	// Notes say what the figures mean and what limits them.
	Notes      []string `json:"notes,omitempty"`
	DurationNs int64    `json:"duration_ns"`
}

// Sustained writes the device (or its first Bytes) sequentially in Block O_DIRECT writes and
// finds the burst rate, the size of the write cache the card takes them in, the rate after it
// and, after Idle, how much of the cache came back. It DESTROYS the data on the device: the
// caller has checked that it may.
func Sustained(ctx context.Context, d Device, opt SustainedOptions) (*SustainedResult, error) {
	start := time.Now()
	if opt.Block == 0 {
		opt.Block = 1 << 20
	}
	if opt.Idle == 0 {
		opt.Idle = 30 * time.Second
	}
	if opt.CardState == "" {
		opt.CardState = CardFresh
	}
	if opt.Sample <= 0 {
		opt.Sample = 250 * time.Millisecond
	}
	if opt.Sleep == nil {
		opt.Sleep = time.Sleep
	}
	logf := opt.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opt.Block%d.BlockSize() != 0 {
		return nil, fmt.Errorf("write size %d is not a multiple of the device's block %d", opt.Block, d.BlockSize())
	}
	n := d.Size() / opt.Block * opt.Block
	if opt.Bytes > 0 {
		n = min(n, opt.Bytes/opt.Block*opt.Block)
	}
	if n < 8*opt.Block {
		return nil, fmt.Errorf("the sustained test needs at least %s to write, has %s", formatSize(8*opt.Block), formatSize(n))
	}
	r := &SustainedResult{Schema: SustainedSchema, Start: start, SizeBytes: d.Size(), Block: opt.Block, CardState: opt.CardState}
	buf, free, err := alignedBuffer(int(opt.Block))
	if err != nil {
		return nil, err
	}
	defer free()
	fillIncompressible(buf, uint64(start.UnixNano()))
	w := &passWriter{ctx: ctx, d: d, buf: buf, block: opt.Block, sample: opt.Sample, logf: logf}

	switch opt.CardState {
	case CardFresh:
		err := d.Discard(0, d.Size())
		switch {
		case err == nil:
			r.Prepared = "the whole device discarded (every block free, as a new card)"
		case errors.Is(err, unix.EOPNOTSUPP):
			r.Prepared = "the device does not take discards: it is in whatever state it was"
			r.Notes = append(r.Notes, "not discarded (the device refuses it): a used card's cache is smaller; --card-state used says how much")
		default:
			return nil, fmt.Errorf("discard the device for a fresh start: %w", err)
		}
	case CardUsed:
		logf("sustained: card state used: writing all of the device once first (%s)", formatSize(d.Size()/opt.Block*opt.Block))
		if _, err := w.pass("fill", d.Size()/opt.Block*opt.Block); err != nil {
			return nil, err
		}
		r.Prepared = "the whole device written once, nothing discarded (every block holds data, as on a card in use), then left alone " + opt.Idle.String()
		opt.Sleep(max(opt.Idle, 0))
	default:
		return nil, fmt.Errorf("card state %q: want %s or %s", opt.CardState, CardFresh, CardUsed)
	}

	first, err := w.pass("first pass", n)
	if err != nil {
		return nil, err
	}
	r.First = *first
	if first.Cliff {
		r.CacheBytes = first.CliffAt
	}
	if opt.Idle > 0 {
		logf("sustained: leaving the card alone for %v", opt.Idle)
		opt.Sleep(opt.Idle)
		r.IdleNs = int64(opt.Idle)
		// Enough to see the cliff again: twice the cache found, and at least 64 writes.
		m := n
		if first.Cliff {
			m = min(n, max(2*first.CliffAt/opt.Block*opt.Block, 64*opt.Block))
		}
		rec, err := w.pass("recovery pass", m)
		if err != nil {
			return nil, err
		}
		r.Recovery = rec
		r.RecoveredBytes, r.RecoveredAtLeast = recovered(first, rec)
	}
	r.Notes = append(r.Notes, sustainedNotes(r)...)
	r.DurationNs = int64(time.Since(start))
	return r, nil
}

// recovered is how much of the recovery pass ran at the first pass's burst rate.
//
// A card left full by the first pass writes more slowly at its best than a fresh one (its
// blocks must be erased first), so the recovery pass is judged against the first pass's rate
// after the cache: a cliff in it is the cache that came back; a pass that ran throughout at a
// quarter above that rate never reached the end of it.
func recovered(first, rec *Pass) (uint64, bool) {
	if !first.Cliff || len(rec.Samples) == 0 {
		return 0, false
	}
	if rec.Cliff {
		return rec.CliffAt, false
	}
	if rec.BurstMBps >= 1.25*first.AfterMBps {
		return rec.Bytes, true
	}
	return 0, false // no faster start: nothing came back
}

func sustainedNotes(r *SustainedResult) []string {
	var out []string
	if !r.First.Cliff {
		out = append(out, fmt.Sprintf("no cache cliff in %s: the rate held at %.1f MB/s (a cache larger than that, or none)", formatSize(r.First.Bytes), r.First.BurstMBps))
	}
	if r.Recovery != nil && r.First.Cliff && r.First.Bytes >= r.SizeBytes/r.Block*r.Block {
		out = append(out, "the first pass wrote the whole card: the recovery pass finds a card whose every block holds data, whose cache can only be as large as its free (spare) blocks allow")
	}
	return out
}

// passWriter writes sequential passes and samples them.
type passWriter struct {
	ctx    context.Context
	d      Device
	buf    []byte
	block  uint64
	sample time.Duration
	logf   func(string, ...any)
}

// pass writes [0, n) and samples it: a sample closes when it has lasted w.sample of the writes'
// time or holds a 4096th of the pass (whole writes).
func (w *passWriter) pass(what string, n uint64) (*Pass, error) {
	p := &Pass{Bytes: n}
	bin := max((n/4096+w.block-1)/w.block*w.block, w.block)
	var cur RateSample
	lastLog := time.Now()
	for off := uint64(0); off < n; off += w.block {
		if off/w.block%64 == 0 {
			if err := w.ctx.Err(); err != nil {
				return nil, err
			}
		}
		lat, err := w.d.WriteAt(w.buf, off)
		if err != nil {
			return nil, fmt.Errorf("sustained %s: %w", what, err)
		}
		cur.Bytes += w.block
		cur.Ns += int64(lat)
		cur.MaxWriteNs = max(cur.MaxWriteNs, int64(lat))
		p.Ns += int64(lat)
		p.MaxWriteNs = max(p.MaxWriteNs, int64(lat))
		if time.Duration(cur.Ns) >= w.sample || cur.Bytes >= bin || off+w.block >= n {
			cur.End = off + w.block
			cur.MBps = float64(cur.Bytes) / (float64(cur.Ns) / 1e9) / 1e6
			p.Samples = append(p.Samples, cur)
			cur = RateSample{}
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			s := p.Samples[len(p.Samples)-1]
			w.logf("sustained %s: %s of %s written, %.1f MB/s now, %.1f MB/s so far", what, formatSize(off+w.block), formatSize(n), s.MBps, float64(off+w.block)/(float64(p.Ns)/1e9)/1e6)
		}
	}
	p.Cliff, p.CliffAt, p.BurstMBps, p.AfterMBps = fitCliff(p.Samples)
	if !p.Cliff {
		p.BurstMBps = float64(p.Bytes) / (float64(p.Ns) / 1e9) / 1e6
	}
	w.logf("sustained %s: %s in %.1f s: %s", what, formatSize(n), float64(p.Ns)/1e9, passLine(p))
	return p, nil
}

func passLine(p *Pass) string {
	if !p.Cliff {
		return fmt.Sprintf("%.1f MB/s throughout, no cliff", p.BurstMBps)
	}
	return fmt.Sprintf("%.1f MB/s for %s, then %.1f MB/s", p.BurstMBps, formatSize(p.CliffAt), p.AfterMBps)
}

// fitCliff finds the first cache cliff of a pass: the first drop of the write rate to under
// 80 % of what it was. It fits two straight lines to the writes' cumulative time against the
// position (fitTwo) over ever longer starts of the pass (16 samples, 32, 64 ... all of them)
// and keeps the first that shows a cliff: a pass may slow again later (a card filling up has
// fewer free blocks for its cache), and a fit over all of it would put its one break between
// the two. The cumulative time averages out the stalls a card makes while it folds its cache,
// which single samples do not.
func fitCliff(s []RateSample) (cliff bool, at uint64, burst, after float64) {
	for l := min(16, len(s)); ; l = min(2*l, len(s)) {
		if c, at, b, a := fitTwo(s[:l], l == len(s)); c {
			return c, at, b, a
		}
		if l == len(s) {
			return false, 0, 0, 0
		}
	}
}

// fitTwo fits the cumulative time against the position with two straight lines meeting at one
// sample's end, the break that leaves the least squared error, and returns it when the rate
// after it is under 80 % of the rate before it and the two lines fit at least twice better than
// one (see the conditions at its end). Unless whole (the fit is of the whole pass), the part after
// the break must be at least as long as the part before it: a short slow stretch at the end of a
// start of the pass (a stall of the host) is no cliff until the writes after it say so.
func fitTwo(s []RateSample, whole bool) (cliff bool, at uint64, burst, after float64) {
	n := len(s)
	if n < 4 {
		return false, 0, 0, 0
	}
	x := make([]float64, n+1)
	y := make([]float64, n+1)
	for i, v := range s {
		x[i+1] = float64(v.End)
		y[i+1] = y[i] + float64(v.Ns)/1e9
	}
	// Prefix sums of x, y, x², xy, y² over the points 0..n (point 0 is the origin), for
	// each segment's least-squares line in O(1).
	cx, cy, cxx, cxy, cyy := make([]float64, n+2), make([]float64, n+2), make([]float64, n+2), make([]float64, n+2), make([]float64, n+2)
	for i := 0; i <= n; i++ {
		cx[i+1] = cx[i] + x[i]
		cy[i+1] = cy[i] + y[i]
		cxx[i+1] = cxx[i] + x[i]*x[i]
		cxy[i+1] = cxy[i] + x[i]*y[i]
		cyy[i+1] = cyy[i] + y[i]*y[i]
	}
	seg := func(from, to int) (sse, slope float64) {
		k := float64(to - from + 1)
		sx, sy := cx[to+1]-cx[from], cy[to+1]-cy[from]
		sxx, sxy, syy := cxx[to+1]-cxx[from], cxy[to+1]-cxy[from], cyy[to+1]-cyy[from]
		vx := sxx - sx*sx/k
		if vx <= 0 {
			return 0, 0
		}
		slope = (sxy - sx*sy/k) / vx
		sse = syy - sy*sy/k - slope*(sxy-sx*sy/k)
		return math.Max(sse, 0), slope
	}
	one, _ := seg(0, n)
	best, bk := math.Inf(1), -1
	var b1, b2 float64
	for k := 1; k < n; k++ { // segments [0, k] and [k, n], each at least two points
		e1, s1 := seg(0, k)
		e2, s2 := seg(k, n)
		if e1+e2 < best {
			best, bk, b1, b2 = e1+e2, k, s1, s2
		}
	}
	if bk < 0 || b1 <= 0 || b2 <= 0 {
		return false, 0, 0, 0
	}
	burst, after = 1/b1/1e6, 1/b2/1e6
	// A cliff: the rate after the break under 80 % of the rate before it; at least four
	// writes before it (an eMMC's RAM cache takes its first megabyte faster: not the cache
	// sought); four in five samples before it faster than the rate after it by a quarter (the
	// burst is a burst, though a busy host may stall in it); at least eight samples after it; and
	// the two lines fitting at least twice better than one.
	rates := make([]float64, bk)
	for i, v := range s[:bk] {
		rates[i] = v.MBps
	}
	slices.Sort(rates)
	slowest := rates[bk/5]
	if after >= 0.8*burst || bk < 4 || slowest < 1.25*after || best*2 > one || n-bk < 8 || (!whole && n-bk < bk) {
		return false, 0, burst, after
	}
	return true, uint64(x[bk]), burst, after
}

// fillIncompressible fills b with a xorshift stream: a card that compresses or deduplicates
// would otherwise write less than it is given.
func fillIncompressible(b []byte, seed uint64) {
	x := seed | 1
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i], b[i+1], b[i+2], b[i+3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
		b[i+4], b[i+5], b[i+6], b[i+7] = byte(x>>32), byte(x>>40), byte(x>>48), byte(x>>56)
	}
}
