package simcard

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// TestOrderGate: requests that reach the gate in the reverse of the host's order go into the
// model in the host's order; a gap in the ids (none of the card's requests) is waited out for
// orderWindow, then the request goes in; a request whose turn is past goes in at once.
func TestOrderGate(t *testing.T) {
	defer func(w time.Duration) { orderWindow = w }(orderWindow)
	orderWindow = 500 * time.Millisecond
	var g orderGate
	var mu sync.Mutex
	var order []uint64
	run := func(id uint64, wg *sync.WaitGroup) {
		defer wg.Done()
		g.enter(&orderTicket{id: id})
		mu.Lock()
		order = append(order, id)
		mu.Unlock()
		g.leave()
	}
	var wg sync.WaitGroup
	wg.Add(1)
	run(2, &wg)
	for id := uint64(40); id >= 4; id -= 2 {
		wg.Add(1)
		go run(id, &wg)
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	want := []uint64{}
	for id := uint64(2); id <= 40; id += 2 {
		want = append(want, id)
	}
	if !slices.Equal(order, want) {
		t.Errorf("let in %v, want %v", order, want)
	}
	if late, gaps := g.counts(); late != 0 || gaps != 0 {
		t.Errorf("%d late, %d gaps; want none", late, gaps)
	}

	// A gap: 42 and 44 never come; 46 goes in once the window ran out.
	start := time.Now()
	wg.Add(1)
	run(46, &wg)
	if d := time.Since(start); d < orderWindow {
		t.Errorf("46 went in after %v, before the window (%v) ran out", d, orderWindow)
	}
	// Late: 44 after 46 goes in at once.
	start = time.Now()
	wg.Add(1)
	run(44, &wg)
	if d := time.Since(start); d > orderWindow/2 {
		t.Errorf("44, past its turn, waited %v", d)
	}
	if late, gaps := g.counts(); late != 1 || gaps != 1 {
		t.Errorf("%d late, %d gaps; want 1 and 1", late, gaps)
	}
}
