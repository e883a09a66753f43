package simcard

import (
	"sync"
	"time"
)

// The card takes its requests in the order the host sent them.
//
// With FUSE's asynchronous direct I/O (queueThrough) up to MaxQueue of the loop device's
// requests are in the server at once, each handled on a goroutine of its own, and they raced
// for the model: a write stream the host sent in order reached the card shuffled. A card's
// FTL is not indifferent to that: an AU card merges an AU written out of order, so that the
// served sd-typical wrote 15 % more flash and erased 31 % more blocks than the same day's block
// requests replayed in order (ext4, the Bootlin write tests on 256 MiB; video_write alone 39
// AU merges against 14), and wore out in two thirds of the rounds the wear line predicted. A
// real host's driver hands the card its requests in the block layer's order, and a card
// without a command queue takes them one at a time in that order; one with a queue receives
// them in that order too, and reorders them only as its queue model says.
//
// The kernel numbers every FUSE request as it queues it for the server (the request's
// unique id, in steps of FUSE_REQ_ID_STEP, 2): the gate lets the card's requests into the
// model (the model step of doAt, a few microseconds; the modelled wait that follows is not
// ordered, so that requests still overlap there) one at a time, in the order of their ids. A
// request whose id follows the last one let in (by at most idStep) goes in at once; one with
// a gap before it waits up to orderWindow for the requests with the ids in between, which may
// still be on their way through another of the server's goroutines (or may be none of the
// card's: a stat of the stats file). A request that comes after one with a higher id went in
// goes in at once: it cannot be put back in order, and Stats.OutOfOrder counts it.
type orderGate struct {
	mu      sync.Mutex
	busy    bool   // a request is in the model step
	last    uint64 // the id of the last request let in (0: none yet)
	waiting []*orderTicket
	timer   *time.Timer
	overdue bool   // the first waiting request's window ran out while the model was busy
	late    uint64 // requests let in after a higher id (Stats.OutOfOrder)
	gaps    uint64 // requests let in after a gap in the ids had been waited out (Stats.OrderWaits)
}

// orderTicket is one request's place in the order: the kernel's id of its FUSE request.
type orderTicket struct {
	id      uint64
	in      chan struct{} // closed when the request may go in
	entered bool
}

// idStep is the step between the ids of two requests the kernel queued one after the other.
const idStep = 2

// orderWindow is how long a request waits for the requests whose ids come before its own:
// the time another of the server's goroutines takes from reading a request to handing it
// to the card, some microseconds, up to a scheduler's time slice on a loaded host.
var orderWindow = 2 * time.Millisecond

// enter waits until the request may go into the model. A nil ticket (a request that did not
// come through FUSE) goes in when no other is in the model step.
func (g *orderGate) enter(t *orderTicket) {
	if t == nil {
		t = &orderTicket{}
	}
	g.mu.Lock()
	if !g.busy && len(g.waiting) == 0 && g.next(t.id) {
		g.let(t)
		g.mu.Unlock()
		return
	}
	t.in = make(chan struct{})
	i := 0
	for i < len(g.waiting) && g.waiting[i].id <= t.id {
		i++
	}
	g.waiting = append(g.waiting, nil)
	copy(g.waiting[i+1:], g.waiting[i:])
	g.waiting[i] = t
	g.admit(false)
	g.mu.Unlock()
	<-t.in
}

// leave ends the model step of the request let in last: the next may go in.
func (g *orderGate) leave() {
	g.mu.Lock()
	g.busy = false
	g.admit(false)
	g.mu.Unlock()
}

// next reports whether id may go in without waiting: it follows the last id let in, or no id
// is known (0: not through FUSE; or the first request), or it comes after a higher id already.
func (g *orderGate) next(id uint64) bool {
	if id == 0 || g.last == 0 || id <= g.last+idStep {
		return true
	}
	return false
}

// let lets t in; g.mu is held.
func (g *orderGate) let(t *orderTicket) {
	g.busy = true
	t.entered = true
	if t.id != 0 {
		if t.id < g.last {
			g.late++
		}
		g.last = max(g.last, t.id)
	}
	if t.in != nil {
		close(t.in)
	}
}

// admit lets the first waiting request in when the model is free and its turn has come, or
// its window ran out (force, from the window's timer; overdue, when the timer found the model
// busy); otherwise it arms the window. g.mu is held.
func (g *orderGate) admit(force bool) {
	if g.busy || len(g.waiting) == 0 {
		return
	}
	t := g.waiting[0]
	if !force && !g.overdue && !g.next(t.id) {
		if g.timer == nil {
			g.timer = time.AfterFunc(orderWindow, func() {
				g.mu.Lock()
				g.timer = nil
				g.overdue = true
				g.admit(true)
				g.mu.Unlock()
			})
		}
		return
	}
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	if !g.next(t.id) {
		g.gaps++
	}
	g.overdue = false
	g.waiting = g.waiting[1:]
	g.let(t)
}

// counts returns the requests let in out of order and after a waited-out gap.
func (g *orderGate) counts() (late, gaps uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.late, g.gaps
}
