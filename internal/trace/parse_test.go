package trace

import (
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func TestParseRWBS(t *testing.T) {
	tests := []struct {
		in    string
		op    Op
		flags Flags
		bad   bool
	}{
		{in: "WS", op: OpWrite, flags: FlagSync},
		{in: "FWFSM", op: OpWrite, flags: FlagPreflush | FlagFUA | FlagSync | FlagMeta},
		{in: "FF", op: OpFlush, flags: FlagPreflush},
		{in: "F", op: OpFlush},
		{in: "FS", op: OpFlush, flags: FlagSync},
		{in: "RA", op: OpRead, flags: FlagReadahead},
		{in: "RM", op: OpRead, flags: FlagMeta},
		{in: "DS", op: OpDiscard, flags: FlagSync},
		{in: "DE", op: OpSecureErase},
		{in: "N", op: OpOther},
		{in: "", bad: true},
		{in: "X", bad: true},
		{in: "WQ", bad: true},
	}
	for _, tt := range tests {
		op, f, err := parseRWBS(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("parseRWBS(%q) accepted", tt.in)
			}
			continue
		}
		if err != nil || op != tt.op || f != tt.flags {
			t.Errorf("parseRWBS(%q) = %v, %v, %v; want %v, %v", tt.in, op, f, err, tt.op, tt.flags)
		}
	}
}

func TestParseLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		ev   event
		lost uint64
		bad  bool
	}{
		{line: "              dd-23095   [001] .N...  2942.149451: block_rq_issue: 7,2 WS 524288 () 0 + 1024 be,0,4 [dd]",
			ok: true, ev: event{kind: "issue", ts: 2942149451000, sector: 0, sectors: 1024, op: OpWrite, flags: FlagSync}},
		{line: "     ksoftirqd/1-22      [001] ..s..  2942.153421: block_rq_complete: 7,2 FF () 18446744073709551615 + 0 none,0,0 [0]",
			ok: true, ev: event{kind: "complete", ts: 2942153421000, sector: 1<<64 - 1, op: OpFlush, flags: FlagPreflush}},
		{line: "  kworker/u8:2 my task-9 [000] ..... 10.000001: block_rq_complete: 179,0 WFS (12 00 ab) 64 + 8 none,0,0 [-5]",
			ok: true, ev: event{kind: "complete", ts: 10000001000, sector: 64, sectors: 8, op: OpWrite, flags: FlagFUA | FlagSync, err: true}},
		{line: "  dd-1 [000] ..... 5.5: block_rq_requeue: 7,2 W () 8 + 8 be,0,4 [0]",
			ok: true, ev: event{kind: "requeue", ts: 5500000000, sector: 8, sectors: 8, op: OpWrite}},
		{line: "  dd-1 [000] ..... 5.5: block_rq_insert: 7,2 W 4096 () 8 + 8 be,0,4 [dd]"},
		{line: "# tracer: nop"},
		{line: "CPU:1 [LOST 42 EVENTS]", lost: 42},
		{line: "CPU:1 [LOST ", bad: true},
		{line: "CPU:1 [LOST x EVENTS]", bad: true},
		{line: "  dd-1 [000] ..... 5.5: block_rq_issue: 7,2 WS 4096 () 8 - 8 [dd]", bad: true},
		{line: "  dd-1 [000] ..... 5.5: block_rq_issue: 7,2 QS 4096 () 8 + 8 [dd]", bad: true},
		{line: "  dd-1 [000] ..... 5x5: block_rq_issue: 7,2 WS 4096 () 8 + 8 [dd]", bad: true},
		{line: "  dd-1 [000] ..... 5.5: block_rq_issue: 7,2 W 4096 () 36028797018963960 + 8 be,0,4 [dd]", bad: true},
		{line: "  dd-1 [000] ..... 5.5: block_rq_issue: 7,2 W 4096 () 36028797018963959 + 8 be,0,4 [dd]",
			ok: true, ev: event{kind: "issue", ts: 5500000000, sector: 1<<55 - 9, sectors: 8, op: OpWrite}},
	}
	for _, tt := range tests {
		ev, ok, lost, err := parseLine(tt.line)
		if (err != nil) != tt.bad || ok != tt.ok || lost != tt.lost || (ok && ev != tt.ev) {
			t.Errorf("parseLine(%q) = %+v, %v, %d, %v; want %+v, %v, %d, error %v", tt.line, ev, ok, lost, err, tt.ev, tt.ok, tt.lost, tt.bad)
		}
	}
}

// TestAssemble feeds lines as this kernel (6.18) prints them for a loop device: writes that
// complete out of order, a flush (issue sector 0, completion sector -1), the flush
// machinery's never-issued empty write, a partial completion, a requeue and a request still
// in flight at the end.
func TestAssemble(t *testing.T) {
	lines := `
 dd-1 [001] ..... 100.000010: block_rq_issue: 7,2 WS 524288 () 0 + 1024 be,0,4 [dd]
 dd-1 [001] ..... 100.000020: block_rq_issue: 7,2 WS 524288 () 1024 + 1024 be,0,4 [dd]
 ks-2 [001] ..s.. 100.000500: block_rq_complete: 7,2 WS () 1024 + 1024 be,0,4 [0]
 ks-2 [000] ..s.. 100.000600: block_rq_complete: 7,2 WS () 0 + 1024 be,0,4 [0]
 kw-3 [000] ..... 100.000700: block_rq_issue: 7,2 FF 0 () 0 + 0 none,0,0 [kworker]
 ks-2 [001] ..s.. 100.000800: block_rq_complete: 7,2 FF () 18446744073709551615 + 0 none,0,0 [0]
 ks-2 [001] d.s1. 100.000801: block_rq_complete: 7,2 WS () 0 + 0 be,0,4 [0]
 dd-1 [001] ..... 100.001000: block_rq_issue: 7,2 R 16384 () 4096 + 32 be,0,4 [dd]
 ks-2 [001] ..s.. 100.001100: block_rq_complete: 7,2 R () 4096 + 16 be,0,4 [0]
 dd-1 [001] ..... 100.001200: block_rq_issue: 7,2 W 4096 () 8 + 8 be,0,4 [dd]
 dd-1 [001] ..... 100.001300: block_rq_requeue: 7,2 W () 8 + 8 be,0,4 [0]
 ks-2 [001] ..s.. 100.001400: block_rq_complete: 7,2 R () 4112 + 16 be,0,4 [-5]
 dd-1 [001] ..... 100.001500: block_rq_issue: 7,2 W 4096 () 8 + 8 be,0,4 [dd]
 ks-2 [001] ..s.. 100.001600: block_rq_complete: 7,2 W () 8 + 8 be,0,4 [0]
 dd-1 [001] ..... 100.002000: block_rq_issue: 7,2 DS 4096 () 64 + 8 be,0,4 [dd]
 ks-2 [001] ..s.. 100.002100: block_rq_complete: 7,2 W () 999 + 8 be,0,4 [0]
`
	a := assembler{base: 100_000_000_000}
	for _, l := range strings.Split(lines, "\n") {
		ev, ok, _, err := parseLine(l)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			a.add(ev)
		}
	}
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	want := []Request{
		{Issue: us(10), Latency: us(590), Done: true, Sector: 0, Sectors: 1024, Op: OpWrite, Flags: FlagSync},
		{Issue: us(20), Latency: us(480), Done: true, Sector: 1024, Sectors: 1024, Op: OpWrite, Flags: FlagSync},
		{Issue: us(700), Latency: us(100), Done: true, Op: OpFlush, Flags: FlagPreflush},
		{Issue: us(1000), Latency: us(400), Done: true, Sector: 4096, Sectors: 32, Op: OpRead, Flags: FlagError},
		{Issue: us(1500), Latency: us(100), Done: true, Sector: 8, Sectors: 8, Op: OpWrite},
		{Issue: us(2000), Sector: 64, Sectors: 8, Op: OpDiscard, Flags: FlagSync},
	}
	if d := cmp.Diff(want, a.requests()); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	// The empty preflush write and the completion at sector 999.
	if a.unmatched != 2 {
		t.Errorf("unmatched = %d, want 2", a.unmatched)
	}
}

func TestAssemblePartition(t *testing.T) {
	a := assembler{base: 0, offset: 2048}
	a.add(event{kind: "issue", ts: 5, sector: 2048 + 16, sectors: 8, op: OpWrite})
	a.add(event{kind: "issue", ts: 6, op: OpFlush})
	a.add(event{kind: "complete", ts: 9, sector: 2048 + 16, sectors: 8, op: OpWrite})
	want := []Request{
		{Issue: 5, Latency: 4, Done: true, Sector: 16, Sectors: 8, Op: OpWrite},
		{Issue: 6, Op: OpFlush},
	}
	if d := cmp.Diff(want, a.requests()); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
}

// TestParseLineAllocates nothing for the lines a capture is made of: a read test sends tens
// of thousands of requests, two lines each, and an allocation per line made the capture
// fsbench's largest allocator.
func TestParseLineAllocates(t *testing.T) {
	lines := []string{
		"dd-23095 [001] .N... 2942.149451: block_rq_issue: 7,2 WS 524288 () 0 + 1024 be,0,4 [dd]",
		"ksoftirqd/1-22 [001] ..s.. 2942.151581: block_rq_complete: 7,2 WS () 0 + 1024 be,0,4 [0]",
		"CPU:1 [LOST 42 EVENTS]",
	}
	for _, l := range lines {
		if n := testing.AllocsPerRun(100, func() {
			if _, _, _, err := parseLine(l); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("parseLine(%q): %.0f allocations, want 0", l, n)
		}
	}
	if s := unsafe.Sizeof(Request{}); s > 40 {
		t.Errorf("Request takes %d bytes, want at most 40", s)
	}
}
