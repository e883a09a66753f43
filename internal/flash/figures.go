package flash

import (
	"math/rand/v2"
	"time"
)

// Figures are the headline numbers of a profile as the model produces them, for comparing
// with a card's datasheet or with dd/fio run against a served card.
type Figures struct {
	SeqWriteMBps  float64 `json:"seq_write_mbps"`  // 512 KiB sequential writes (MB = 10^6 bytes)
	SeqReadMBps   float64 `json:"seq_read_mbps"`   // 512 KiB sequential reads
	RandReadIOPS  float64 `json:"rand_read_iops"`  // 4 KiB random reads over the card
	RandWriteIOPS float64 `json:"rand_write_iops"` // 4 KiB random writes over the card
	RandWriteWA   float64 `json:"rand_write_wa"`   // write amplification of those random writes
	// With an SLC cache (SLCCache): its size on this fresh card, and the sequential write rate
	// once it is full (SeqWriteMBps is then the rate into the cache, the burst).
	SLCCacheBytes     uint64  `json:"slc_cache_bytes,omitempty"`
	SeqWriteAfterMBps float64 `json:"seq_write_after_mbps,omitempty"`
}

// Measure runs fixed, seeded request patterns against fresh copies of m's card (m itself is
// only used for its profile and size) and returns the modelled figures.
func Measure(m *Model, seed uint64) Figures {
	fresh := func() *Model {
		n, err := NewModel(m.p, m.size)
		if err != nil {
			panic(err) // m was built from the same profile and size
		}
		return n
	}
	var f Figures
	const big = 512 << 10
	// Sequential: up to 64 MiB from the start of the AU-mapped part (the FAT area would
	// flatter an AU card), in whole requests.
	seq := fresh()
	start := seq.pmPages * seq.ps
	if seq.p.FTL == FTLPage {
		start = 0
	}
	end := min(seq.size, start+64<<20)
	if seq.slc != nil {
		// The burst: inside the cache (half of it, so that no fold is near).
		f.SLCCacheBytes = seq.slc.max * seq.ps
		end = min(end, start+max(f.SLCCacheBytes/2/big*big, big))
	}
	var wt, rt time.Duration
	var bytes uint64
	for off := start; off+big <= end; off += big {
		d, _ := seq.Do(Request{Op: OpWrite, Off: off, Len: big})
		wt += d
		bytes += big
	}
	d, _ := seq.Do(Request{Op: OpFlush})
	wt += d
	for off := start; off+big <= end; off += big {
		d, _ := seq.Do(Request{Op: OpRead, Off: off, Len: big})
		rt += d
	}
	f.SeqWriteMBps = float64(bytes) / wt.Seconds() / 1e6
	f.SeqReadMBps = float64(bytes) / rt.Seconds() / 1e6

	const n, small = 1000, 4 << 10
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var rr time.Duration
	for i := 0; i < n; i++ {
		d, _ := seq.Do(Request{Op: OpRead, Off: rng.Uint64N(seq.size/small) * small, Len: small})
		rr += d
	}
	f.RandReadIOPS = n / rr.Seconds()

	rw := fresh()
	var wr time.Duration
	for i := 0; i < n; i++ {
		d, _ := rw.Do(Request{Op: OpWrite, Off: rng.Uint64N(rw.size/small) * small, Len: small})
		wr += d
	}
	d, _ = rw.Do(Request{Op: OpFlush})
	wr += d
	f.RandWriteIOPS = n / wr.Seconds()
	f.RandWriteWA = rw.Counters().WriteAmplification
	if seq.slc != nil {
		f.SeqWriteAfterMBps = afterCacheMBps(fresh(), big)
	}
	return f
}

// afterCacheMBps fills a fresh card's SLC cache with sequential writes of big bytes and returns
// the rate of the next 64 MiB (or what the card has left): the sustained rate once the cache is
// full, fold stalls included.
func afterCacheMBps(m *Model, big uint64) float64 {
	off := uint64(0)
	for ; off+big <= m.size && m.slc.used+big/m.ps <= m.slcCapacity(); off += big {
		m.Do(Request{Op: OpWrite, Off: off, Len: big})
	}
	var t time.Duration
	var n uint64
	for ; off+big <= m.size && n < 64<<20; off += big {
		d, _ := m.Do(Request{Op: OpWrite, Off: off, Len: big})
		t += d
		n += big
	}
	if t == 0 {
		return 0
	}
	return float64(n) / t.Seconds() / 1e6
}
