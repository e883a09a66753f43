package trace

import (
	"fmt"
	"iter"

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
