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
	return f
}
