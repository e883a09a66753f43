package flash

import (
	"math/rand/v2"
	"slices"
	"time"
)

// Queue is a card's command queue (SD 6.0's command queueing, eMMC 5.1's CMDQ), in use by the
// host: up to Profile.QueueDepth tasks are in the card at once, and the card overlaps their
// flash work. Without it (a card without a queue, or a host that does not use it, as every
// Linux SD host but a Raspberry Pi 5 with a card it trusts) a card takes one command at a
// time, whatever the host has queued: the Model's latencies then simply add up.
//
// How a request's modelled latency (Model.Do) is spread over time: its first part, the
// command time (Profile.CommandTime: the command, its transfer on the bus and the controller's
// own work), is serial: the bus and the controller do one request at a time. The rest, the
// flash work (page reads and programs, merges, garbage collection), runs on one of the card's
// Profile.QueueLanes lanes (dies or planes that work independently), or on several: a request
// of n pages takes min(n, lanes) of them, since the profiles' per-page times are those of a
// card that already spreads one large request over its dies. A flush or a discard takes every
// lane. With QueueDepth tasks already in the card, a further request waits for the first of
// them to complete.
//
// The state of the card (which pages hold what) still changes in the order requests arrive,
// as the Model applies them one by one; only their timing overlaps. So the counters and the
// card's modelled busy time (Counters.BusyNs, the sum of the latencies) do not depend on the
// queue, and a trace replay (which is sequential) gives the card without its queue.
//
// What the queue stands for on a real A2 card: its command queue and its cache, both of which
// the host must turn on (SD 6.0; Raspberry Pi's kernel uses the queue on a Pi 5 since
// raspberrypi/linux PR 6046). The cache is what lets the card acknowledge a write before
// programming it and so overlap programs; the model does not tell the two apart.
type Queue struct {
	depth  int
	serial time.Duration // Profile.CommandTime
	bus    time.Duration // the bus and controller are free from then on
	lanes  []time.Duration
	tasks  []time.Duration // completion times of the tasks in the card
}

// NewQueue returns the command queue of a card with profile p, or nil when the card has none
// (QueueDepth 0 or 1): its requests then run one at a time.
func NewQueue(p Profile) *Queue {
	if p.QueueDepth <= 1 {
		return nil
	}
	return &Queue{depth: p.QueueDepth, serial: time.Duration(p.CommandTime), lanes: make([]time.Duration, max(p.QueueLanes, 1))}
}

// Depth is how many tasks the card holds at once.
func (q *Queue) Depth() int { return q.depth }

// Schedule books a request r whose modelled latency is lat (as Model.Do returned it, unscaled)
// and which reaches the card at arrival, on the queue's clock (any origin; the same for every
// call), and returns when the card completes it. scale multiplies every modelled time, as the
// served card's time scale does.
func (q *Queue) Schedule(arrival time.Duration, r Request, lat time.Duration, scale float64, pageSize uint64) time.Duration {
	// Tasks completed by now have left the card; with a full queue the request waits for
	// the first to complete.
	live := q.tasks[:0]
	for _, t := range q.tasks {
		if t > arrival {
			live = append(live, t)
		}
	}
	q.tasks = live
	if len(q.tasks) >= q.depth {
		first := slices.Min(q.tasks)
		arrival = max(arrival, first)
		q.tasks = slices.DeleteFunc(q.tasks, func(t time.Duration) bool { return t <= arrival })
	}
	serial := min(q.serial, lat)
	work := lat - serial
	busStart := max(arrival, q.bus)
	q.bus = busStart + scaled(serial, scale)
	k := len(q.lanes)
	if r.Op == OpRead || r.Op == OpWrite {
		pages := (r.Off+r.Len+pageSize-1)/pageSize - r.Off/pageSize
		k = int(min(uint64(k), max(pages, 1)))
	}
	// The k lanes that free up first; the work starts when the last of them is free.
	slices.Sort(q.lanes)
	start := max(q.bus, q.lanes[k-1])
	done := start + scaled(work, scale)
	for i := 0; i < k; i++ {
		q.lanes[i] = done
	}
	q.tasks = append(q.tasks, done)
	return done
}

func scaled(d time.Duration, scale float64) time.Duration { return time.Duration(float64(d) * scale) }

// QueuedIOPS is the model's 4 KiB random read and write rate with depth requests always in
// flight (each completion sends the next at once, as fio's iodepth does), over the first area
// bytes of a fresh card of size bytes written sequentially first, n requests each: the
// figure a command queue in use gives, without any host in the way. Depth 1, or a card
// without a queue, gives the requests one at a time.
func QueuedIOPS(p Profile, size, area uint64, depth, n int, seed uint64) (read, write float64, err error) {
	m, err := NewModel(p, size)
	if err != nil {
		return 0, 0, err
	}
	area = min(area, size)
	const fill = 4 << 20
	for off := uint64(0); off+fill <= area; off += fill {
		if _, err := m.Do(Request{Op: OpWrite, Off: off, Len: fill}); err != nil {
			return 0, 0, err
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0x9d))
	run := func(op Op) (float64, error) {
		q := NewQueue(p)
		if depth <= 1 {
			q = nil
		}
		const small = 4 << 10
		inflight := make([]time.Duration, 0, depth) // completion times
		var now, last time.Duration
		for i := 0; i < n; i++ {
			if len(inflight) >= max(depth, 1) {
				// The next request leaves when the first in flight completes.
				j := 0
				for k := range inflight {
					if inflight[k] < inflight[j] {
						j = k
					}
				}
				now = max(now, inflight[j])
				inflight = slices.Delete(inflight, j, j+1)
			}
			r := Request{Op: op, Off: rng.Uint64N(area/small) * small, Len: small}
			lat, err := m.Do(r)
			if err != nil {
				return 0, err
			}
			var done time.Duration
			if q != nil {
				done = q.Schedule(now, r, lat, 1, m.ps)
			} else {
				done = max(now, last) + lat
			}
			last = max(last, done)
			inflight = append(inflight, done)
		}
		return float64(n) / last.Seconds(), nil
	}
	if read, err = run(OpRead); err != nil {
		return 0, 0, err
	}
	write, err = run(OpWrite)
	return read, write, err
}
