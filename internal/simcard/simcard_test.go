package simcard

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsbench/fsbench/internal/flash"
)

func newTestCard(t *testing.T, scale float64) *Card {
	t.Helper()
	p, err := flash.Lookup("sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCard(p, 16<<20, filepath.Join(t.TempDir(), "card.img"), scale)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCardDataAndCounters(t *testing.T) {
	c := newTestCard(t, 0)
	want := bytes.Repeat([]byte("flash!"), 2048)[:8192]
	if n, err := c.Do(flash.Request{Op: flash.OpWrite, Off: 12 << 20, Len: 8192}, want); err != nil || n != 8192 {
		t.Fatalf("write: %d, %v", n, err)
	}
	got := make([]byte, 8192)
	if n, err := c.Do(flash.Request{Op: flash.OpRead, Off: 12 << 20, Len: 8192}, got); err != nil || n != 8192 || !bytes.Equal(got, want) {
		t.Fatalf("read back: %d, %v, equal %v", n, err, bytes.Equal(got, want))
	}
	if _, err := c.Do(flash.Request{Op: flash.OpDiscard, Off: 12 << 20, Len: 4 << 20}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(flash.Request{Op: flash.OpRead, Off: 12 << 20, Len: 8192}, got); err != nil || !bytes.Equal(got, make([]byte, 8192)) {
		t.Fatalf("after discard: %v, zero %v", err, bytes.Equal(got, make([]byte, 8192)))
	}
	// A read running past the end is cut short; a write past the end is an error.
	if n, err := c.Do(flash.Request{Op: flash.OpRead, Off: 16<<20 - 4096, Len: 8192}, got); err != nil || n != 4096 {
		t.Errorf("read across the end: %d, %v; want 4096, nil", n, err)
	}
	if _, err := c.Do(flash.Request{Op: flash.OpWrite, Off: 16<<20 - 4096, Len: 8192}, make([]byte, 8192)); err == nil {
		t.Error("write across the end accepted")
	}
	st := c.Stats()
	if st.Counters.Writes != 1 || st.Counters.Reads != 3 || st.Counters.Discards != 1 || st.Errors != 1 {
		t.Errorf("counters %+v errors %d; want 1 write, 3 reads, 1 discard, 1 error", st.Counters, st.Errors)
	}
	if st.WriteSizes[8192] != 1 || st.ReadSizes[8192] != 2 || st.ReadSizes[4096] != 1 {
		t.Errorf("sizes: reads %v writes %v", st.ReadSizes, st.WriteSizes)
	}
	var buf bytes.Buffer
	if err := WriteStats(&buf, st); err != nil {
		t.Fatal(err)
	}
	var back Stats
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Counters.HostBytesWritten != 8192 {
		t.Errorf("stats JSON round trip: %v, %+v", err, back.Counters)
	}
}

// TestCardWaitsModelledTime: requests wait their scaled latency, and concurrent requests
// queue behind each other (the card does one thing at a time).
func TestCardWaitsModelledTime(t *testing.T) {
	const scale = 0.5
	c := newTestCard(t, scale)
	buf := make([]byte, 1<<20)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Do(flash.Request{Op: flash.OpWrite, Off: uint64(8+i) << 20, Len: 1 << 20}, buf); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	busy := time.Duration(c.Stats().Counters.BusyNs)
	want := time.Duration(float64(busy) * scale)
	t.Logf("4 concurrent 1 MiB writes: modelled %v, scaled %v, took %v", busy, want, elapsed)
	if elapsed < want || elapsed > want+want/2+20*time.Millisecond {
		t.Errorf("took %v, want about %v (the sum of the scaled latencies)", elapsed, want)
	}
}

func TestNewCardRejectsNegativeScale(t *testing.T) {
	p, _ := flash.Lookup("sd-typical")
	if _, err := NewCard(p, 16<<20, filepath.Join(t.TempDir(), "x"), -1); err == nil {
		t.Error("negative time scale accepted")
	}
}

// stream is a seeded mix of reads, writes, discards and flushes over a card of size bytes.
func stream(seed uint64, n int, size uint64) []flash.Request {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out []flash.Request
	for i := 0; i < n; i++ {
		off := rng.Uint64N(size/4096) * 4096
		l := min((1+rng.Uint64N(64))*4096, size-off)
		op := []flash.Op{flash.OpRead, flash.OpWrite, flash.OpWrite, flash.OpWrite, flash.OpDiscard, flash.OpFlush}[rng.IntN(6)]
		out = append(out, flash.Request{Op: op, Off: off, Len: l})
	}
	return out
}

// TestBusyTimeDependsOnRequestsOnly: modelled device time (Counters.BusyNs) and every other
// counter are a function of the request sequence alone. The same stream gives identical
// counters through the bare model, through a Card replying at once (time scale 0), and
// through a Card that waits its deadlines with a path offset, with random pauses between the
// requests and a goroutine keeping a CPU busy meanwhile: neither the time between
// requests nor host load reaches the model (it has no clock and no idle-time work).
func TestBusyTimeDependsOnRequestsOnly(t *testing.T) {
	const size = 64 << 20
	for _, profile := range flash.Builtins() {
		t.Run(profile, func(t *testing.T) {
			p, err := flash.Lookup(profile)
			if err != nil {
				t.Fatal(err)
			}
			reqs := stream(42, 300, size)
			m, err := flash.NewModel(p, size)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reqs {
				if _, err := m.Do(r); err != nil {
					t.Fatal(err)
				}
			}
			want := m.Counters()

			run := func(scale float64, offset time.Duration, load bool) flash.Counters {
				c, err := NewCard(p, size, filepath.Join(t.TempDir(), "card.img"), scale)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetPathOffset(offset, "test")
				stop := make(chan struct{})
				var hogs sync.WaitGroup
				if load {
					// One spinning goroutine: with two it holds every P of a 2-core machine and
					// each request waits a preemption slice (10 ms) to run at all.
					for i := 0; i < 1; i++ {
						hogs.Add(1)
						go func() {
							defer hogs.Done()
							for x := 0; ; x++ {
								select {
								case <-stop:
									return
								default:
								}
							}
						}()
					}
				}
				rng := rand.New(rand.NewPCG(7, 7))
				buf := make([]byte, 64*4096)
				for _, r := range reqs {
					if load {
						time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
					}
					if _, err := c.Do(r, buf); err != nil {
						t.Fatal(err)
					}
				}
				close(stop)
				hogs.Wait()
				return c.Stats().Counters
			}
			for _, v := range []struct {
				name   string
				scale  float64
				offset time.Duration
				load   bool
			}{
				{"card, time scale 0", 0, 0, false},
				{"card, time scale 0.001, path offset, pauses, CPU load", 0.001, 40 * time.Microsecond, true},
			} {
				got := run(v.scale, v.offset, v.load)
				if got.BusyNs != want.BusyNs {
					t.Errorf("%s: busy %v, the model alone %v", v.name, time.Duration(got.BusyNs), time.Duration(want.BusyNs))
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s: counters differ from the model's (-model +card):\n%s", v.name, diff)
				}
			}
			if want.BusyNs == 0 || want.PagesProgrammed == 0 {
				t.Errorf("the stream did nothing: %+v", want)
			}
		})
	}
}

// TestCardDeadline: a request completes at max(arrival − path offset, end of the previous
// request) + its modelled latency, with the offset capped by the fastest recent round trip
// of the tool; a request whose deadline passed before its reply was ready is counted late,
// by how much.
func TestCardDeadline(t *testing.T) {
	c := newTestCard(t, 1)
	buf := make([]byte, 4096)
	read := flash.Request{Op: flash.OpRead, Off: 12 << 20, Len: 4096} // sd-typical: 100 + 600 µs
	const lat = 700 * time.Microsecond

	// Arrived 10 ms ago (a server that fell behind): the deadline has passed; no wait.
	if _, err := c.DoAt(time.Now().Add(-10*time.Millisecond), read, buf); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.LateRequests != 1 || time.Duration(st.LateNs) < 9*time.Millisecond || st.MaxLateNs != st.LateNs {
		t.Errorf("late %d, by %v (max %v); want 1 request about 9.3 ms late", st.LateRequests, time.Duration(st.LateNs), time.Duration(st.MaxLateNs))
	}
	if st.ServerTime.Count != 1 || st.ServerTime.P50Ns == 0 {
		t.Errorf("server time %+v, want one request", st.ServerTime)
	}

	// The rest of the rules are TestCardSchedule's, without the host's timing. Here only
	// what load cannot break: a request never completes before its arrival plus its latency
	// less the offset, and, right after another, never before its full latency.
	c.SetPathOffset(300*time.Microsecond, "test")
	time.Sleep(time.Millisecond) // the card is idle
	start := time.Now()
	if _, err := c.DoAt(start, read, buf); err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)
	start2 := time.Now()
	if _, err := c.DoAt(start2, read, buf); err != nil {
		t.Fatal(err)
	}
	second := time.Since(start2)
	t.Logf("idle card, offset 300 µs: %v; right after: %v (modelled %v)", first, second, lat)
	if first < lat-300*time.Microsecond {
		t.Errorf("first request took %v, want at least 400 µs (its latency less the offset)", first)
	}
	if second < lat-20*time.Microsecond {
		t.Errorf("second request took %v, want at least its full %v: it started before the card was free", second, lat)
	}
}

// TestCardSchedule follows the card's clock on synthetic arrival and reply times: requests
// start at arrival − offset on an idle card, never before the previous one completes, and
// the offset is capped at the median of the last gapWindow idle gaps.
func TestCardSchedule(t *testing.T) {
	us := time.Microsecond
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	c := newTestCard(t, 1)
	c.SetPathOffset(50*us, "test")
	steps := []struct {
		what           string
		arrival, reply time.Duration // reply: when the server's reply leaves (replied)
		busy           time.Duration
		deadline       time.Duration
		capped         uint64
	}{
		{"first request: idle card, starts 50 µs before arrival", 0, 650 * us, 700 * us, 650 * us, 0},
		{"80 µs after the reply (a round trip of 80 µs): offset kept", 730 * us, 1380 * us, 700 * us, 1380 * us, 0},
		{"30 µs after the reply: the lower median of 80 and 30 is below the offset, capped to 30 µs", 1410 * us, 2080 * us, 700 * us, 2080 * us, 1},
		{"idle 1 ms: the median of 80, 30 and 1000 µs is 80, offset kept", 3080 * us, 3730 * us, 700 * us, 3730 * us, 1},
		{"20 µs after the reply: the median of 80, 30, 1000 and 20 is 30, capped", 3750 * us, 4430 * us, 700 * us, 4430 * us, 2},
		{"one fast round trip among slow ones does not cap: median of 5 gaps is 80", 5430 * us, 6080 * us, 700 * us, 6080 * us, 2},
	}
	for _, s := range steps {
		c.mu.Lock()
		d := c.schedule(at(s.arrival), s.busy)
		c.replied(at(s.reply))
		capped := c.stats.PathOffsetCapped
		c.mu.Unlock()
		if got := d.Sub(t0); got != s.deadline || capped != s.capped {
			t.Errorf("%s: deadline %v, capped %d; want %v, %d", s.what, got, capped, s.deadline, s.capped)
		}
	}
	// Overlapping requests (queue depth 2): the second waits for the first; the gap to an
	// earlier reply while a request is in flight is no round trip and is not recorded.
	c.mu.Lock()
	d1 := c.schedule(at(10*time.Millisecond), 700*us)
	d2 := c.schedule(at(10*time.Millisecond+10*us), 700*us)
	n := c.nGaps
	c.replied(d1)
	c.replied(d2)
	c.mu.Unlock()
	if d1.Sub(t0) != 10*time.Millisecond-50*us+700*us || d2.Sub(d1) != 700*us || n != 6 {
		t.Errorf("overlapping: deadlines %v and %v, %d gaps; want 10.65 ms, 700 µs later, 6 gaps (the first request had no reply before it)", d1.Sub(t0), d2.Sub(t0), n)
	}
}
