package trace

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rwbs writes op and flags as the kernel's blk_fill_rwbs does: preflush, operation, then
// FUA, readahead, sync and metadata.
func rwbs(op Op, f Flags) string {
	var b strings.Builder
	if f&FlagPreflush != 0 {
		b.WriteByte('F')
	}
	b.WriteString([numOps]string{"R", "W", "D", "DE", "F", "N"}[op])
	for _, m := range []struct {
		flag Flags
		c    byte
	}{{FlagFUA, 'F'}, {FlagReadahead, 'A'}, {FlagSync, 'S'}, {FlagMeta, 'M'}} {
		if f&m.flag != 0 {
			b.WriteByte(m.c)
		}
	}
	return b.String()
}

// kernelLine prints ev as trace_pipe does on 6.x kernels (see parseLine).
func kernelLine(ev event) string {
	ts := fmt.Sprintf("%d.%09d", ev.ts/1e9, ev.ts%1e9)
	switch ev.kind {
	case "issue":
		return fmt.Sprintf("  dd-1 [000] ..... %s: block_rq_issue: 7,2 %s %d () %d + %d be,0,4 [dd]",
			ts, rwbs(ev.op, ev.flags), ev.sectors*SectorSize, ev.sector, ev.sectors)
	default:
		status := "0"
		if ev.err {
			status = "-5"
		}
		return fmt.Sprintf("  ksoftirqd/1-22 [001] ..s.. %s: block_rq_%s: 7,2 %s () %d + %d be,0,4 [%s]",
			ts, ev.kind, rwbs(ev.op, ev.flags), ev.sector, ev.sectors, status)
	}
}

// traceLines prints the issue and completion lines of tr's requests, in time order, as
// trace_pipe would have shown them while capturing it.
func traceLines(tr *Trace) string {
	type line struct {
		ts   uint64
		text string
	}
	var ls []line
	for _, r := range tr.Requests {
		op, flags := r.Op, r.Flags&^FlagError
		issue := uint64(r.Issue) + 1e9 // the trace clock is never 0 at the start of a capture
		ls = append(ls, line{issue, kernelLine(event{kind: "issue", ts: issue, sector: r.Sector, sectors: r.Sectors, op: op, flags: flags})})
		if r.Done {
			sector := r.Sector
			if r.Sectors == 0 {
				sector = 1<<64 - 1 // a flush completes at (sector_t)-1
			}
			done := issue + uint64(r.Latency)
			ls = append(ls, line{done, kernelLine(event{kind: "complete", ts: done, sector: sector, sectors: r.Sectors,
				op: op, flags: flags, err: r.Flags&FlagError != 0})})
		}
	}
	// Stable: an issue stays before its completion at the same time.
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].ts < ls[j-1].ts; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

// FuzzParseLines feeds trace_pipe text through Capture.consume, the code a capture runs on
// what it reads, and checks what it makes of it:
//   - every event parseLine accepts prints back (kernelLine) to a line that parses to the
//     same event: no field is misread;
//   - the requests are in issue order, have a valid operation and flags, a latency only
//     when complete and never a negative one, a flush (no data) at sector 0, and a byte
//     range (Off, Len) that fits a uint64;
//   - the trace is one the binary format stores: WriteTo accepts it and Read returns it;
//   - no more requests than issue lines, no more completions than completion lines.
func FuzzParseLines(f *testing.F) {
	// The binary sample, printed as the kernel would have shown its requests.
	b, err := os.ReadFile("testdata/sample.trace")
	if err != nil {
		f.Fatal(err)
	}
	tr, err := Read(bytes.NewReader(b))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(traceLines(tr)), uint64(0))
	f.Add([]byte(traceLines(sample())), uint64(2048))
	for _, s := range []string{
		" dd-1 [001] ..... 100.000010: block_rq_issue: 7,2 WS 524288 () 0 + 1024 be,0,4 [dd]\n" +
			" ks-2 [001] ..s.. 100.000500: block_rq_complete: 7,2 WS () 0 + 512 be,0,4 [0]\n" +
			" ks-2 [001] ..s.. 100.000600: block_rq_complete: 7,2 WS () 512 + 512 be,0,4 [0]\n" +
			" kw-3 [000] ..... 100.000700: block_rq_issue: 7,2 FF 0 () 0 + 0 none,0,0 [kworker]\n" +
			" ks-2 [001] ..s.. 100.000800: block_rq_complete: 7,2 FF () 18446744073709551615 + 0 none,0,0 [0]\n" +
			" ks-2 [001] d.s1. 100.000801: block_rq_complete: 7,2 WS () 0 + 0 be,0,4 [0]\n" +
			" dd-1 [001] ..... 100.001200: block_rq_issue: 7,2 W 4096 () 8 + 8 be,0,4 [dd]\n" +
			" dd-1 [001] ..... 100.001300: block_rq_requeue: 7,2 W () 8 + 8 be,0,4 [0]\n" +
			" dd-1 [001] ..... 100.001500: block_rq_issue: 7,2 W 4096 () 8 + 8 be,0,4 [dd]\n" +
			" ks-2 [001] ..s.. 100.001600: block_rq_complete: 7,2 W () 8 + 8 be,0,4 [-5]\n",
		"  kworker/u8:2 my task-9 [000] ..... 10.000001: block_rq_complete: 179,0 WFS (12 00 ab) 64 + 8 none,0,0 [-5]\n",
		"CPU:1 [LOST 42 EVENTS]\n# tracer: nop\n  dd-1 [000] ..... 5.5: block_rq_insert: 7,2 W 4096 () 8 + 8 be,0,4 [dd]\n",
	} {
		f.Add([]byte(s), uint64(0))
	}

	f.Fuzz(func(t *testing.T, data []byte, offset uint64) {
		var issues, completes uint64
		for _, l := range strings.Split(string(data), "\n") {
			ev, ok, lost, err := parseLine(l)
			if err != nil || !ok {
				if ok {
					t.Fatalf("parseLine(%q) returned an event with the error %v", l, err)
				}
				if lost > 0 && !strings.HasPrefix(l, "CPU:") {
					t.Fatalf("parseLine(%q) counted %d lost events", l, lost)
				}
				continue
			}
			switch ev.kind {
			case "issue":
				issues++
			case "complete":
				completes++
			}
			again := kernelLine(ev)
			ev2, ok, _, err := parseLine(again)
			if err != nil || !ok || ev2 != ev {
				t.Fatalf("parseLine(%q) = %+v, printed back as %q, parsed again as %+v, %v, %v", l, ev, again, ev2, ok, err)
			}
		}

		c := &Capture{asm: assembler{offset: offset}}
		c.consume(data)
		tr := &Trace{Device: "loop0", Lost: c.asm.lost, Unmatched: c.asm.unmatched, Requests: c.asm.requests()}
		if n := uint64(len(tr.Requests)); n > issues {
			t.Fatalf("%d requests from %d issue lines", n, issues)
		}
		if tr.Unmatched > completes {
			t.Fatalf("%d unmatched completions of %d", tr.Unmatched, completes)
		}
		var done uint64
		for i, r := range tr.Requests {
			switch {
			case i > 0 && r.Issue < tr.Requests[i-1].Issue:
				t.Fatalf("request %d issued at %v, before request %d at %v", i, r.Issue, i-1, tr.Requests[i-1].Issue)
			case r.Op >= numOps || r.Flags&^allFlags != 0:
				t.Fatalf("request %d: operation %v, flags %v", i, r.Op, r.Flags)
			case r.Latency < 0 || !r.Done && r.Latency != 0:
				t.Fatalf("request %d: latency %v, done %v", i, r.Latency, r.Done)
			case r.Sectors == 0 && r.Sector != 0:
				t.Fatalf("request %d: no data, at sector %d", i, r.Sector)
			case r.Len()/SectorSize != r.Sectors || r.Off()/SectorSize != r.Sector || r.Off()+r.Len() < r.Off():
				t.Fatalf("request %d: sectors %d+%d give bytes %d+%d", i, r.Sector, r.Sectors, r.Off(), r.Len())
			}
			if r.Done {
				done++
			}
		}
		if done+tr.Unmatched > completes {
			t.Fatalf("%d completed requests and %d unmatched completions from %d completion lines", done, tr.Unmatched, completes)
		}

		var buf bytes.Buffer
		if _, err := tr.WriteTo(&buf); err != nil {
			t.Fatalf("the parsed trace cannot be stored: %v", err)
		}
		back, err := Read(&buf)
		if err != nil {
			t.Fatalf("the stored trace cannot be read: %v", err)
		}
		if tr.Requests == nil {
			tr.Requests = []Request{}
		}
		if d := cmp.Diff(tr, back); d != "" {
			t.Fatalf("stored and read back (-parsed +read):\n%s", d)
		}
		Summarize(tr, 16<<10, 4<<20) // must not panic either
	})
}
