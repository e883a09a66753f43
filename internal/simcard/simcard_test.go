package simcard

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

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
