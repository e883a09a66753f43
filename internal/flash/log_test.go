package flash

import (
	"fmt"
	"testing"
	"time"
)

// tinyLogCard is a hand-checkable AU card with a random-write log: 16 KiB pages, 64 KiB erase
// blocks (4 pages), 256 KiB AUs (16 pages), one open AU written in order, and a log of 4 erase
// blocks of which 1 (4 pages) may hold mapped pages (logSlack(4) = 3).
const tinyLogCard = `
name = "tiny-log"
description = "test card"
ftl = "au"
page_size = "16KiB"
erase_block = "64KiB"
au_size = "256KiB"
open_aus = 1
write_order = "%s"
overprovision = 0.07
rw_log_size = "256KiB"
rw_log_max_write = "16KiB"
command_time = "100us"
read_page_time = "600us"
program_page_time = "1ms"
copy_page_time = "500us"
au_close_time = "10ms"
erase_time = "2ms"
endurance = 3000
`

func tinyModel(t *testing.T, order string) *Model {
	t.Helper()
	p, err := Parse("tiny.toml", []byte(fmt.Sprintf(tinyLogCard, order)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(p, 1*MiB) // AUs 0-3
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRandomWriteLog follows the log by hand: small writes that do not continue the open AU
// go to the log at a page's program time instead of an AU merge each; when the log holds its
// 4 pages, the AU with the most pages in it is merged out (au_close_time + a copy per valid
// page) before the next write goes in.
func TestRandomWriteLog(t *testing.T) {
	m := tinyModel(t, OrderSequential)
	us := time.Microsecond
	au := func(i, page uint64) uint64 { return i*256*KiB + page*16*KiB }
	steps := []struct {
		what   string
		r      Request
		want   time.Duration
		merges uint64
	}{
		{"AU 0 written whole", Request{Op: OpWrite, Off: au(0, 0), Len: 256 * KiB}, 100*us + 16*1000*us, 0},
		{"a page at AU 1's start opens AU 1 (a stream entering it); AU 0 closes complete, free", Request{Op: OpWrite, Off: au(1, 0), Len: 16 * KiB}, 1100 * us, 0},
		{"a page in the middle of AU 0, full and not open: into the log", Request{Op: OpWrite, Off: au(0, 5), Len: 16 * KiB}, 1100 * us, 0},
		{"the same page again: the log's copy is replaced", Request{Op: OpWrite, Off: au(0, 5), Len: 16 * KiB}, 1100 * us, 0},
		{"AU 0 page 6: log", Request{Op: OpWrite, Off: au(0, 6), Len: 16 * KiB}, 1100 * us, 0},
		{"AU 0 page 7: log", Request{Op: OpWrite, Off: au(0, 7), Len: 16 * KiB}, 1100 * us, 0},
		{"AU 0 page 8: the log's 4th page", Request{Op: OpWrite, Off: au(0, 8), Len: 16 * KiB}, 1100 * us, 0},
		// The log is full: AU 0 (4 pages in it) is merged into a fresh physical AU, its 16
		// valid pages copied (10 ms + 16 × 500 us), then page 9 goes into the emptied log.
		{"AU 0 page 9: the log is full, AU 0 merges out first", Request{Op: OpWrite, Off: au(0, 9), Len: 16 * KiB}, 100*us + 10000*us + 16*500*us + 1000*us, 1},
		// A 4 KiB write into a page holding data reads it first (read-modify-write), log or not.
		{"4 KiB into AU 2 (empty, not open): opening it costs nothing later, so no log", Request{Op: OpWrite, Off: au(2, 3), Len: 4 * KiB}, 1100 * us, 0},
		{"32 KiB (above rw_log_max_write) into AU 0: opens it, copying pages 0-1", Request{Op: OpWrite, Off: au(0, 2), Len: 32 * KiB}, 100*us + 2*500*us + 2*1000*us, 0},
	}
	var merges uint64
	for _, s := range steps {
		got := do(t, m, s.r)
		merges += s.merges
		if got != s.want {
			t.Errorf("%s: latency %v, want %v", s.what, got, s.want)
		}
		if c := m.Counters(); c.AUMerges != merges {
			t.Errorf("%s: %d AU merges in all, want %d", s.what, c.AUMerges, merges)
		}
	}
	if n := m.log.n; n != 1 {
		t.Errorf("log holds %d pages at the end, want 1 (AU 0 page 9; page 2 and 3 went to the open AU)", n)
	}
}

// TestAnyOrderStreamRewritesItsTailPage: in an AU written in any order, a stream of 4 KiB
// appends writes each 16 KiB page four times; the page the last write ended in is written
// again in place of a merge, as in order (a 4-write stream into a full AU's first page costs a
// read-modify-write each, and no merge).
func TestAnyOrderStreamRewritesItsTailPage(t *testing.T) {
	m := tinyModel(t, OrderAny)
	do(t, m, Request{Op: OpWrite, Off: 0, Len: 256 * KiB})         // AU 0 whole
	do(t, m, Request{Op: OpWrite, Off: 256 * KiB, Len: 256 * KiB}) // AU 1 whole: AU 0 closes complete
	for i := uint64(0); i < 4; i++ {
		got := do(t, m, Request{Op: OpWrite, Off: i * 4 * KiB, Len: 4 * KiB})
		if want := 100*time.Microsecond + 600*time.Microsecond + time.Millisecond; got != want {
			t.Errorf("append %d: latency %v, want %v (command, read-modify-write, program)", i, got, want)
		}
	}
	if c := m.Counters(); c.AUMerges != 0 {
		t.Errorf("%d AU merges, want none", c.AUMerges)
	}
	// A page written before that is not the stream's tail still cannot be written in place:
	// the small write goes to the log instead of a merge.
	do(t, m, Request{Op: OpWrite, Off: 64 * KiB, Len: 16 * KiB}) // page 4
	do(t, m, Request{Op: OpWrite, Off: 0, Len: 16 * KiB})        // page 0 again
	if c := m.Counters(); c.AUMerges != 0 || m.log.n != 1 {
		t.Errorf("rewrite of page 0: %d merges, %d log pages; want 0 and 1", c.AUMerges, m.log.n)
	}
}
