// Package simcard serves a simulated SD card or eMMC: a FUSE filesystem with one file, card,
// whose reads and writes are stored in a sparse backing file and timed by a flash.Model, so
// that dd, fio, flashbench or a loop device (and a filesystem on it) see a card's behaviour.
// A second file, stats, reads as the model's counters in JSON.
package simcard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/flash"
)

// File names inside the mount.
const (
	CardFile  = "card"
	StatsFile = "stats"
)

// Config says what to serve.
type Config struct {
	Profile flash.Profile
	Size    uint64 // card size in bytes, a multiple of the profile's AU size
	Dir     string // mount point; must exist
	// Backing is the sparse data file; empty: one in a new temporary directory, deleted at exit.
	Backing string
	// TimeScale multiplies every modelled latency before it is waited for (1 = real time,
	// 0.01 = a hundred times faster, 0 = no waiting). Counters are unaffected.
	TimeScale float64
	// UnmountTimeout bounds how long Serve retries a busy unmount (a loop device still
	// attached) before it detaches the mount lazily and reports the error.
	UnmountTimeout time.Duration
	// Log receives progress and problems (nil: discarded).
	Log io.Writer
	// EnduranceScale multiplies the endurance of every block of the card (0 or 1: as the
	// profile says; 0.01: it wears out after a hundredth of the erases), and WearSeed draws
	// the blocks' endurances (flash.Model.WithEndurance).
	EnduranceScale float64
	WearSeed       uint64
	// PathOffset says how the card's path offset is set (Card.SetPathOffset): "auto"
	// measures the FUSE round trip at start-up, "off" or "0" uses none, and a duration
	// ("40us") is used as given. Empty: the environment variable PathOffsetEnv, else
	// "auto" ("fsbench simcard serve" has no flag for it).
	PathOffset string
}

// PathOffsetEnv names the environment variable that sets Config.PathOffset when it is empty.
const PathOffsetEnv = "FSBENCH_SIMCARD_PATH_OFFSET"

// Stats is what the stats file holds, and what Serve returns at exit.
//
// Counters hold modelled card time (Counters.BusyNs): a function of the request sequence
// alone, which host load cannot bend. The fields after them are real (wall-clock) times of
// this host: what the server adds around the model, and whether it kept up with it.
type Stats struct {
	Profile   string         `json:"profile"`
	Size      uint64         `json:"size"`
	TimeScale float64        `json:"time_scale"`
	Backing   string         `json:"backing"`
	Counters  flash.Counters `json:"counters"`
	// WaitedNs is the real time requests spent waiting for their modelled completion
	// (about Counters.BusyNs × TimeScale, less the server's own time and the path offset,
	// when the host keeps up).
	WaitedNs uint64 `json:"waited_ns"`
	// ReadSizes and WriteSizes count the requests that reached the card by size in bytes:
	// what the loop device, the page cache or the tool above actually sent.
	ReadSizes  map[uint64]uint64 `json:"read_sizes"`
	WriteSizes map[uint64]uint64 `json:"write_sizes"`
	// Errors counts requests that failed (out of range, backing file errors).
	Errors uint64 `json:"errors"`

	// PathOffsetNs is how much earlier than a request's arrival in the server the card's
	// clock may start it, when the card is idle: the median round trip between a reader and
	// this server through the kernel's loop and FUSE path, measured at start-up (see
	// Card.SetPathOffset). 0: none. PathCalibration says how it was obtained.
	PathOffsetNs    uint64 `json:"path_offset_ns"`
	PathCalibration string `json:"path_calibration,omitempty"`
	// PathOffsetCapped counts the requests that started with less than PathOffsetNs because
	// the tool's recent round trips were typically faster than it (see Card.SetPathOffset).
	PathOffsetCapped uint64 `json:"path_offset_capped"`
	// ServerTime is, per request, the server's own time: from the request's arrival in the
	// FUSE handler to its reply being ready (queueing for the model, the model, the backing
	// file I/O), before any waiting for the deadline.
	ServerTime Distribution `json:"server_time"`
	// LateRequests counts the requests whose reply left after their modelled completion
	// (the deadline) by more than LateSlack: the server's own time, or a wake-up delayed by
	// host load, exceeded the card's. LateNs is the total by which they missed it, MaxLateNs
	// the worst. With a time scale of 0 every request is late by its server time.
	LateRequests uint64 `json:"late_requests"`
	LateNs       uint64 `json:"late_ns"`
	MaxLateNs    uint64 `json:"max_late_ns"`
	// Fake holds a counterfeit card's own counters (fake.go); nil for a genuine card.
	Fake *FakeStats `json:"fake,omitempty"`
	// Concurrency counts the requests by how many were in the server at once when each
	// arrived, itself included (key 1: it was alone): whether the host's queue reaches the
	// card as a queue (a loop device over FUSE does only with FUSE's asynchronous direct
	// I/O; see serve_fuse.go). MaxConcurrency is the largest key.
	Concurrency    map[int]uint64 `json:"concurrency,omitempty"`
	MaxConcurrency int            `json:"max_concurrency"`
	// OutOfOrder counts the requests the card took after one the host sent later (order.go:
	// they reached the card after the gate's window), OrderWaits the requests it let in after
	// waiting out a gap in the host's numbering (none of the card's requests were in it).
	OutOfOrder uint64 `json:"out_of_order,omitempty"`
	OrderWaits uint64 `json:"order_waits,omitempty"`
}

// LateSlack is how far past its deadline a reply may leave without counting as late: the
// spin that ends a wait returns within a microsecond or two of the deadline on an idle host.
const LateSlack = 5 * time.Microsecond

// Card is the served state: the model, the backing file and the device clock. All requests
// go through Do or DoAt, which are safe for concurrent use.
type Card struct {
	mu         sync.Mutex
	model      *flash.Model
	backing    *os.File
	scale      float64
	pathOffset time.Duration
	nextFree   time.Time // the modelled card is busy until then: it does one request at a time
	// queue is the card's command queue (nil: none, one request at a time), whose clock
	// starts at epoch.
	queue  *flash.Queue
	epoch  time.Time
	stats  Stats
	server hist
	// For the live check of the path offset: requests in the server, when the last reply
	// left, and the most recent gaps from a reply to the next request arriving at an idle
	// server.
	inFlight int
	lastDone time.Time
	gaps     [gapWindow]time.Duration
	nGaps    int
	// io is held shared by every request for its whole course and exclusively while the
	// powercut recording starts, so that the card's copy and the recorded stream fit.
	io sync.RWMutex
	pc powerCut
	// fake is a counterfeit card's address path (fake.go); nil for a genuine card.
	fake *fakeLayer
	// id is what the card's registers say (device.go).
	id identity
	// renewals counts the fresh cards put in (Renew); wearErr is why the last wear command
	// failed (wear.go).
	renewals int
	wearErr  string
	// order lets the requests into the model in the order the host sent them (order.go).
	order orderGate
}

// gapWindow is how many recent idle gaps bound the path offset: enough for their median to
// be a tool's typical round trip, few enough to follow a change of load within a second.
const gapWindow = 32

// NewCard makes the model and opens (creating, sparse, of the card's size) the backing file.
func NewCard(p flash.Profile, size uint64, backing string, scale float64) (*Card, error) {
	if scale < 0 {
		return nil, fmt.Errorf("time scale %g is negative", scale)
	}
	var fake *fakeLayer
	announced := size
	if p.Fake != nil {
		// A counterfeit: the model and the backing file hold only its real flash.
		l, err := newFakeLayer(p, size)
		if err != nil {
			return nil, err
		}
		fake, size = l, p.Fake.PhysicalSize(uint64(p.AUSize), uint64(p.PageMappedArea))
	}
	m, err := flash.NewModel(p, size)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(backing, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open backing file: %w", err)
	}
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, fmt.Errorf("size backing file %s: %w (is there room on its filesystem? it is sparse)", backing, err)
	}
	return &Card{model: m, backing: f, scale: scale, queue: flash.NewQueue(p), epoch: time.Now(), fake: fake, id: newIdentity(p, announced), stats: Stats{
		Profile: p.Name, Size: announced, TimeScale: scale, Backing: backing,
		ReadSizes: map[uint64]uint64{}, WriteSizes: map[uint64]uint64{}, Concurrency: map[int]uint64{},
	}}, nil
}

// Close closes the backing file.
func (c *Card) Close() error { return c.backing.Close() }

// SetPathOffset sets how much earlier than its arrival in the server a request may start on
// the card's clock, with a note on how the figure was obtained (see Stats.PathOffsetNs).
//
// Why: a tool on a loop device over the card waits for the kernel's loop and FUSE path on
// the way in and on the way out, about 50-150 µs per request on these machines, which a real
// card's host controller does not add and the model does not contain. Starting the card's
// clock that much earlier makes the reply reach the tool at about the time the modelled card
// would have completed the request, instead of that long after it. The offset is the typical
// (median) round trip measured at start-up (RoundTrip.Offset), so that over many requests a
// tool sees the model's time; one request may see its reply early by as much as its own round
// trip was faster than the typical one, and a slower one late by as much. It is taken only
// from time the card was idle (a request never starts before the previous one has
// completed), so a tool at queue depth 1 never gains more than its own round trip, and
// modelled busy time (Counters.BusyNs) does not depend on it at all.
//
// A calibration taken under load can still come out larger than the path is later, on a
// quieter host. So the Card also checks it against the live stream: when a request arrives
// at an idle server, the time since the last reply left is the tool's whole round trip plus
// its own think time, never less than the path. Each request starts with the offset capped
// at the median of the last gapWindow such gaps (the lower of the two middle ones when their
// number is even), so the offset never exceeds the round trip the tool typically makes
// (counted in Stats.PathOffsetCapped).
func (c *Card) SetPathOffset(d time.Duration, how string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pathOffset = max(d, 0)
	c.stats.PathOffsetNs = uint64(c.pathOffset)
	c.stats.PathCalibration = how
}

// Stats returns a snapshot of the counters.
func (c *Card) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Counters = c.model.Counters()
	s.ReadSizes = cloneMap(c.stats.ReadSizes)
	s.WriteSizes = cloneMap(c.stats.WriteSizes)
	s.Concurrency = cloneMap(c.stats.Concurrency)
	s.ServerTime = c.server.distribution()
	s.Fake = c.fakeStats()
	s.OutOfOrder, s.OrderWaits = c.order.counts()
	return s
}

func cloneMap[K comparable](m map[K]uint64) map[K]uint64 {
	out := make(map[K]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Do runs one request that arrives now: DoAt(time.Now(), r, buf).
func (c *Card) Do(r flash.Request, buf []byte) (int, error) {
	return c.DoAt(time.Now(), r, buf)
}

// DoAt runs one request that arrived in the server at arrival through the model and the
// backing file, and returns when the modelled card completes it. buf is the data for writes
// and the destination for reads; it returns the bytes transferred (reads stop at the end of
// the card).
//
// The card's latencies are applied by deadline: the modelled card starts the request at
// max(arrival − path offset, when it completed the previous one) and completes it the scaled
// modelled latency later. The server's own work (the backing file I/O) runs inside that time
// instead of being added to it; only the remainder is waited for. When the work outlasts
// the deadline the reply leaves late, and Stats counts it (LateRequests, LateNs).
func (c *Card) DoAt(arrival time.Time, r flash.Request, buf []byte) (int, error) {
	return c.DoAtInOrder(0, arrival, r, buf)
}

// DoAtInOrder is DoAt for a request the host numbered id as it sent it (the kernel's id of
// its FUSE request): the card takes its requests in the order of their ids (order.go). id 0:
// none.
func (c *Card) DoAtInOrder(id uint64, arrival time.Time, r flash.Request, buf []byte) (int, error) {
	t := &orderTicket{id: id}
	if c.fake != nil {
		return c.fakeDo(t, arrival, r, buf)
	}
	return c.doAt(t, arrival, r, buf)
}

// doAt is DoAt at a physical address of the card's flash. The request goes into the model in
// its turn (t: order.go; nil, or a ticket already used, goes in when the model is free).
func (c *Card) doAt(t *orderTicket, arrival time.Time, r flash.Request, buf []byte) (int, error) {
	size := c.model.Size()
	if r.Op == flash.OpRead && r.Off < size && r.Len > size-r.Off {
		r.Len = size - r.Off // a read past the end is short, as on a block device file
	}
	if r.Op == flash.OpRead && r.Off >= size {
		return 0, nil
	}
	c.io.RLock()
	defer c.io.RUnlock()
	// Under c.io: a power-off (live.go) holds it exclusively, so that no request crosses it.
	if err := c.offErr(); err != nil {
		return 0, err
	}
	if t != nil && t.entered {
		t = nil // a counterfeit card's later pieces of the request
	}
	c.order.enter(t)
	c.mu.Lock()
	if gap := arrival.Sub(c.nextFree); !c.nextFree.IsZero() && gap > 0 {
		// The card was left alone since it completed the last request: a card with an SLC
		// cache folds it then. In real time, unscaled: how long the host left it alone (a
		// scaled gap would turn the host's own path, 0.1 ms a request, into seconds of rest
		// at small time scales).
		c.model.Idle(gap)
	}
	lat, err := c.model.Do(r)
	if err == nil {
		// In the model's order, which is the order the card received them.
		err = c.record(r, buf)
	}
	if err != nil {
		c.stats.Errors++
		c.mu.Unlock()
		c.order.leave()
		return 0, err
	}
	var wrong []flash.Span
	if r.Op == flash.OpRead {
		wrong = c.model.Corrupt(r.Off, r.Len) // a worn card's pages that read back wrong (wear.go)
	}
	switch r.Op {
	case flash.OpRead:
		c.stats.ReadSizes[r.Len]++
	case flash.OpWrite:
		c.stats.WriteSizes[r.Len]++
	}
	deadline := c.book(arrival, r, lat)
	c.mu.Unlock()
	c.order.leave()

	n, err := c.data(r, buf)
	garble(buf, r.Off, wrong)
	ready := time.Now()
	if err != nil {
		c.mu.Lock()
		c.stats.Errors++
		c.server.add(ready.Sub(arrival))
		c.replied(ready)
		c.mu.Unlock()
		return n, err
	}
	waited := waitUntil(deadline)
	done := time.Now()
	late := done.Sub(deadline)
	c.mu.Lock()
	c.replied(done)
	c.stats.WaitedNs += uint64(waited)
	c.server.add(ready.Sub(arrival))
	if late > LateSlack {
		c.stats.LateRequests++
		c.stats.LateNs += uint64(late)
		c.stats.MaxLateNs = max(c.stats.MaxLateNs, uint64(late))
	}
	c.mu.Unlock()
	return n, nil
}

// book returns the deadline of request r, whose modelled latency is lat, arriving at arrival:
// through the card's command queue when its profile has one (flash.Queue: requests overlap),
// else one at a time (schedule). c.mu is held; replied must follow.
func (c *Card) book(arrival time.Time, r flash.Request, lat time.Duration) time.Time {
	if c.queue == nil {
		return c.schedule(arrival, time.Duration(float64(lat)*c.scale))
	}
	start := c.arrive(arrival)
	done := c.queue.Schedule(start.Sub(c.epoch), r, lat, c.scale, uint64(c.model.Profile().PageSize))
	return c.epoch.Add(done)
}

// schedule books the modelled card for a request that arrived at arrival and keeps it busy
// for d (already scaled) and returns the request's deadline: it starts at arrival less the
// path offset, capped by the recent idle gaps, or when the card completes the previous
// request, whichever is later. c.mu is held; replied must follow.
func (c *Card) schedule(arrival time.Time, d time.Duration) time.Time {
	start := c.arrive(arrival)
	if start.Before(c.nextFree) {
		start = c.nextFree // the card is still busy with earlier requests
	}
	c.nextFree = start.Add(d)
	return c.nextFree
}

// arrive notes a request's arrival in the server and returns the earliest time the card's
// clock may start it: arrival less the path offset, capped by the recent idle gaps. c.mu is
// held.
func (c *Card) arrive(arrival time.Time) time.Time {
	offset := c.pathOffset
	if c.inFlight == 0 && !c.lastDone.IsZero() {
		copy(c.gaps[1:], c.gaps[:gapWindow-1])
		c.gaps[0] = arrival.Sub(c.lastDone)
		c.nGaps = min(c.nGaps+1, gapWindow)
	}
	if offset > 0 && c.nGaps > 0 {
		if g := c.typicalGap(); g < offset {
			offset = max(g, 0)
			c.stats.PathOffsetCapped++
		}
	}
	c.inFlight++
	c.stats.Concurrency[c.inFlight]++
	c.stats.MaxConcurrency = max(c.stats.MaxConcurrency, c.inFlight)
	return arrival.Add(-offset)
}

// typicalGap is the median of the recent idle gaps, the lower middle one of an even number;
// c.mu is held.
func (c *Card) typicalGap() time.Duration {
	var g [gapWindow]time.Duration
	n := copy(g[:], c.gaps[:c.nGaps])
	slices.Sort(g[:n])
	return g[(n-1)/2]
}

// replied notes that a request's reply leaves at t; c.mu is held.
func (c *Card) replied(t time.Time) {
	c.inFlight--
	if t.After(c.lastDone) {
		c.lastDone = t
	}
}

func (c *Card) data(r flash.Request, buf []byte) (int, error) {
	switch r.Op {
	case flash.OpRead:
		n, err := c.backing.ReadAt(buf[:r.Len], int64(r.Off))
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return n, err
	case flash.OpWrite:
		return c.backing.WriteAt(buf[:r.Len], int64(r.Off))
	case flash.OpDiscard:
		// Discarded data reads back as zeroes (the card's behaviour is unspecified; zero is
		// what most do and what the kernel's discard_zeroes_data used to promise).
		err := unix.Fallocate(int(c.backing.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(r.Off), int64(r.Len))
		if err != nil {
			return 0, fmt.Errorf("punch hole in backing file: %w", err)
		}
		return 0, nil
	case flash.OpFlush:
		// The model decides what a flush costs; the backing file's durability does not
		// matter for a simulation that is thrown away.
		return 0, nil
	}
	return 0, fmt.Errorf("unknown op %v", r.Op)
}

// spinBelow is where waiting switches from sleeping to spinning: a little more than the
// kernel timer's overshoot measured here (~80-100 µs), so that the deadline is met by the spin.
const spinBelow = 150 * time.Microsecond

// waitUntil blocks until t and returns how long it waited.
func waitUntil(t time.Time) time.Duration {
	start := time.Now()
	for {
		d := time.Until(t)
		if d <= 0 {
			return time.Since(start)
		}
		if d > spinBelow {
			// Not time.Sleep: on these machines the Go runtime rounds it up to ~1 ms steps
			// (measured with go1.26: a 50 µs sleep took 1.08 ms, 700 µs took 1.10 ms), which
			// erased the model's 50-300 µs boundary costs that flashbench looks for. The
			// kernel's high-resolution timer overshoots by a steady ~80-100 µs instead, which
			// the spin below absorbs. It blocks this OS thread, which is what a busy card does.
			ts := unix.NsecToTimespec((d - spinBelow).Nanoseconds())
			unix.ClockNanosleep(unix.CLOCK_MONOTONIC, 0, &ts, nil)
			continue
		}
		// spin
	}
}

// WriteStats writes stats as indented JSON.
func WriteStats(w io.Writer, s Stats) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}
