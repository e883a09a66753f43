package powercut

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A live power cut switches a real board off while the workload runs on its card. Nothing the
// board keeps can be trusted after that, so the promises stay off the card: the workload on the
// board streams each operation to the host before it writes (its file and the version it will
// leave: an Intent) and each acknowledgement as it happens (an Ack), and waits for the host's
// go before each operation. The host alone decides what had to survive: what it received
// before it switched the power off. An acknowledgement that was given on the board but never
// reached the host counts as not given (its operation is in flight), and an operation whose
// intent the host did not answer never started, so that nothing the host does not know of can
// be on the card.
//
// The stream is line-based JSON, board to host (Event), and "go N" lines, host to board.

// Event kinds of the board's stream.
const (
	EventReady  = "ready"  // the filesystem is mounted and the workload starts
	EventIntent = "intent" // operation N is about to write Path (Version), or to syncfs
	EventAck    = "ack"    // operation N's fsync, fdatasync or syncfs returned
	EventEnd    = "end"    // the workload finished; the board waits, mounted, for the power to go
)

// Event is one line the board's workload streams to the host.
type Event struct {
	E    string   `json:"e"`
	N    int      `json:"n,omitempty"`
	Path string   `json:"path,omitempty"`
	V    *Version `json:"v,omitempty"`
	// Note carries what the board says beside the events (the mount's options, an error).
	Note string `json:"note,omitempty"`
}

// StreamObserver is the board's side: each intent is written to W and answered by a "go N"
// line on R before the operation starts; each acknowledgement is written as it happens.
type StreamObserver struct {
	W  io.Writer
	R  *bufio.Reader
	mu sync.Mutex
}

// Send writes one event line.
func (o *StreamObserver) Send(e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, err = o.W.Write(append(b, '\n'))
	return err
}

// Intent sends the intent and waits for the host's go.
func (o *StreamObserver) Intent(n int, path string, v Version) error {
	if err := o.Send(Event{E: EventIntent, N: n, Path: path, V: &v}); err != nil {
		return err
	}
	for {
		line, err := o.R.ReadString('\n')
		if err != nil {
			return fmt.Errorf("waiting for the host's go for operation %d: %w", n, err)
		}
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "go" {
			if got, err := strconv.Atoi(f[1]); err == nil && got == n {
				return nil
			}
		}
		// Anything else (a keep-alive newline) is not the go.
	}
}

// Acked sends the acknowledgement.
func (o *StreamObserver) Acked(n int) error { return o.Send(Event{E: EventAck, N: n}) }

// Promises is the host's side: the manifest of what the board's workload was promised, built
// from the events the host received, with the host's own positions: each event received
// advances the position by one, an intent's version Started at the position before it, an
// acknowledgement's Ack at the position it brought. A cut at the position reached when the
// host switched the power off then asks of each file what Manifest.Verify asks on the
// simulated card: the version acknowledged by then, or one in flight.
type Promises struct {
	mu      sync.Mutex
	m       Manifest
	files   map[string]*File
	pos     uint64
	start   time.Time
	pending map[int]pendingOp // intents not acknowledged yet, by operation
	frozen  bool
	// InFlight is filled by Freeze: the operations whose intent was received and whose
	// acknowledgement was not, when the power went.
	inFlight int
	ended    bool
}

type pendingOp struct {
	file    *File // nil for a syncfs
	version int
	acked   bool // an unsynced operation never is: its intent is its whole story
	syncs   bool // the operation is acknowledged (not large or unsynced)
}

// NewPromises starts an empty manifest for a workload of seed.
func NewPromises(seed uint64) *Promises {
	return &Promises{m: Manifest{Seed: seed}, files: map[string]*File{}, start: time.Now(), pending: map[int]pendingOp{}}
}

// Receive takes one event from the board, unless the power was already switched off (Freeze):
// what comes after that is ignored. It returns whether the intent (if it was one) may go ahead.
func (p *Promises) Receive(e Event) (goAhead bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		return false, nil
	}
	switch e.E {
	case EventIntent:
		if e.V == nil {
			return false, fmt.Errorf("intent %d without a version", e.N)
		}
		v := *e.V
		v.Ack, v.Started, v.At = 0, p.pos, time.Since(p.start)
		p.pos++
		op := pendingOp{syncs: v.Op != OpLarge && v.Op != OpUnsynced}
		if v.Op != OpSyncfs {
			f, ok := p.files[e.Path]
			if !ok {
				f = &File{Path: e.Path}
				p.files[e.Path] = f
				p.m.Files = append(p.m.Files, f)
			}
			f.Versions = append(f.Versions, v)
			op.file, op.version = f, len(f.Versions)-1
		}
		p.pending[e.N] = op
		return true, nil
	case EventAck:
		op, ok := p.pending[e.N]
		if !ok {
			return false, fmt.Errorf("acknowledgement of operation %d, whose intent never came", e.N)
		}
		delete(p.pending, e.N)
		p.pos++
		at := time.Since(p.start)
		p.m.Acks = append(p.m.Acks, Ack{Pos: p.pos, At: at})
		if op.file == nil {
			// A syncfs: everything written before it is durable now.
			for _, f := range p.m.Files {
				for j := range f.Versions {
					if f.Versions[j].Ack == 0 && f.Versions[j].Started < p.pos {
						f.Versions[j].Ack = p.pos
					}
				}
			}
			for n, o := range p.pending {
				if !o.syncs {
					delete(p.pending, n) // an unsynced write before the syncfs is acknowledged by it
				}
			}
			return false, nil
		}
		op.file.Versions[op.version].Ack = p.pos
		return false, nil
	case EventEnd:
		p.ended = true
	}
	return false, nil
}

// Freeze fixes the promises at the moment the host switches the power off: nothing received
// later counts. It returns the cut's position.
func (p *Promises) Freeze() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen = true
		for _, o := range p.pending {
			if o.syncs {
				p.inFlight++
			}
		}
		p.m.End = p.pos
	}
	return p.pos
}

// Manifest is the promises as they stand (after Freeze: as they stood at the cut).
func (p *Promises) Manifest() *Manifest {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.m
	return &m
}

// InFlight is how many operations that acknowledge (all but large and unsynced writes) had
// started and not been acknowledged to the host when the power went: one at most with the
// workload's one operation at a time, or none when the cut fell between two.
func (p *Promises) InFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inFlight
}

// Acks is how many acknowledgements the host received before the cut.
func (p *Promises) Acks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m.Acks)
}

// Ended reports whether the workload finished before the cut.
func (p *Promises) Ended() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended
}

// Ops is how many operations' intents the host received.
func (p *Promises) Ops() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, f := range p.m.Files {
		n += len(f.Versions)
	}
	return n
}

// Follow reads the board's stream from r until it ends, hands each event to p and answers
// each intent p lets go ahead with "go N" on w. onEvent, when set, sees each event first (the
// campaign starts its cut timer on an intent); lines that are not events go to log.
func Follow(r io.Reader, w io.Writer, p *Promises, onEvent func(Event), log func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // an intent carries a version's block hashes
	for sc.Scan() {
		line := sc.Text()
		var e Event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.E == "" {
			if log != nil && strings.TrimSpace(line) != "" {
				log(line)
			}
			continue
		}
		if onEvent != nil {
			onEvent(e)
		}
		ok, err := p.Receive(e)
		if err != nil {
			return err
		}
		if ok {
			if _, err := fmt.Fprintf(w, "go %d\n", e.N); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}
