package trace

import (
	"fmt"
	"iter"
	"math"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/flash"
)

// Requests converts t's requests, in issue order, into the flash model's requests:
// read → read, write → write (with FUA), discard and secure erase → discard, flush → flush.
// A write with FlagPreflush becomes a flush followed by the write, which is what the flag
// asks of the device. OpOther requests (write-zeroes) become writes: an SD card or eMMC has
// no write-zeroes command the kernel uses, so the block layer writes the zeroes.
func Requests(t *Trace) []flash.Request {
	out := make([]flash.Request, 0, len(t.Requests))
	for q := range FlashRequests(t) {
		out = append(out, q)
	}
	return out
}

// FlashRequests yields what Requests returns, one at a time: a replay through several card
// models converts each request again instead of holding the converted trace (tens of
// thousands of requests for a read test) beside the trace itself.
func FlashRequests(t *Trace) iter.Seq[flash.Request] {
	return func(yield func(flash.Request) bool) {
		for _, r := range t.Requests {
			if r.Flags&FlagPreflush != 0 {
				if !yield(flash.Request{Op: flash.OpFlush}) {
					return
				}
			}
			q := flash.Request{Off: r.Off(), Len: r.Len(), FUA: r.Flags&FlagFUA != 0}
			switch r.Op {
			case OpRead:
				q.Op = flash.OpRead
			case OpWrite, OpOther:
				q.Op = flash.OpWrite
			case OpDiscard, OpSecureErase:
				q.Op = flash.OpDiscard
			case OpFlush:
				if r.Flags&FlagPreflush != 0 {
					continue // already yielded
				}
				q = flash.Request{Op: flash.OpFlush}
			}
			if q.Op != flash.OpFlush && q.Len == 0 {
				continue
			}
			if !yield(q) {
				return
			}
		}
	}
}

// Replay feeds t's requests, in issue order, through a fresh (empty, all-erased) model of a
// card of the given profile and size and returns its counters: flash pages programmed, blocks
// erased, in-card write amplification, modelled device time (BusyNs). It is offline and
// deterministic: the same trace gives the same counters.
func Replay(t *Trace, p flash.Profile, size uint64) (flash.Counters, error) {
	m, err := flash.NewModel(p, size)
	if err != nil {
		return flash.Counters{}, fmt.Errorf("replaying trace of %s: %w", t.Device, err)
	}
	i := 0
	for q := range FlashRequests(t) {
		if _, err := m.Do(q); err != nil {
			return flash.Counters{}, fmt.Errorf("replaying trace of %s on %s (%s), request %d: %w (use a card size at least the traced device's)", t.Device, p.Name, bytesize.Format(size), i, err)
		}
		i++
	}
	return m.Counters(), nil
}

// Lifetime estimates how many years a card of profile p and the given size lasts when the
// workload whose replay gave c runs perDay times a day. It returns +Inf when the run
// programs nothing.
func Lifetime(c flash.Counters, p flash.Profile, size uint64, perDay float64) (years float64, assumptions string) {
	eb := uint64(p.EraseBlock)
	blocks := c.EraseBlocks
	blockSrc := "the model's physical erase blocks, spares included"
	if blocks == 0 && eb > 0 {
		blocks = size / eb
		blockSrc = "card size ÷ erase block"
	}
	// A replay starts on an all-erased card, so its first writes need no erase: on a card in
	// use every programmed block was erased first. Count at least one erase per erase block
	// of flash programmed, which is the steady state.
	erases := float64(c.BlocksErased)
	programmed := 0.0
	if eb > 0 {
		programmed = float64(c.FlashBytesWrite) / float64(eb)
	}
	perRun := math.Max(erases, programmed)
	var a strings.Builder
	fmt.Fprintf(&a, "card %s (%s), %d erase blocks of %s (%s), endurance %d P/E cycles each; ",
		p.Name, bytesize.Format(size), blocks, bytesize.Format(eb), blockSrc, p.Endurance)
	fmt.Fprintf(&a, "per run %.1f block erases (the larger of the %d erases the replay counted and the %.1f erase blocks' worth of flash it programmed, since a used card erases before it programs); ",
		perRun, c.BlocksErased, programmed)
	fmt.Fprintf(&a, "perfect wear levelling (every block wears at the same rate; real cards do worse, static data is not moved); the workload runs %g times a day, 365.25 days a year; the card fails when its blocks reach the rated endurance (data retention and read disturb ignored)", perDay)
	if perRun == 0 || perDay <= 0 {
		return math.Inf(1), a.String()
	}
	runs := float64(blocks) * float64(p.Endurance) / perRun
	return runs / perDay / 365.25, a.String()
}
