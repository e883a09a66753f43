package trace

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// event is one parsed trace_pipe line of a block_rq_* event.
type event struct {
	kind    string // "issue", "complete", "requeue"
	ts      uint64 // nanoseconds of the trace clock
	sector  uint64
	sectors uint64
	op      Op
	flags   Flags
	err     bool
}

// parseRWBS decodes the kernel's rwbs string (blk_fill_rwbs): an optional "F" for
// REQ_PREFLUSH, then the operation (W, D, DE, F, R, N), then modifiers F (FUA), A
// (readahead), S (sync), M (metadata). The leading F is ambiguous only in appearance: an
// operation letter always follows it, so "FF" is a preflush + flush (what the flush
// machinery issues) and "FS" a sync flush.
func parseRWBS(s string) (Op, Flags, error) {
	var f Flags
	if len(s) > 1 && s[0] == 'F' && strings.IndexByte("WDFRN", s[1]) >= 0 {
		f |= FlagPreflush
		s = s[1:]
	}
	if s == "" {
		return 0, 0, fmt.Errorf("empty rwbs")
	}
	var op Op
	switch s[0] {
	case 'R':
		op = OpRead
	case 'W':
		op = OpWrite
	case 'D':
		op = OpDiscard
		if len(s) > 1 && s[1] == 'E' {
			op = OpSecureErase
			s = s[1:]
		}
	case 'F':
		op = OpFlush
	case 'N':
		op = OpOther
	default:
		return 0, 0, fmt.Errorf("unknown operation %q in rwbs", s[0])
	}
	for _, c := range s[1:] {
		switch c {
		case 'F':
			f |= FlagFUA
		case 'A':
			f |= FlagReadahead
		case 'S':
			f |= FlagSync
		case 'M':
			f |= FlagMeta
		default:
			return 0, 0, fmt.Errorf("unknown modifier %q in rwbs", c)
		}
	}
	return op, f, nil
}

// parseLine parses one line of trace_pipe. It returns ok == false for lines that are not
// block_rq_* events; lost reports a "CPU:N [LOST M EVENTS]" line.
//
// The text format (print fmt of events/block/block_rq_*/format on 6.x kernels):
//
//	dd-23095 [001] .N... 2942.149451: block_rq_issue: 7,2 WS 524288 () 0 + 1024 be,0,4 [dd]
//	ksoftirqd/1-22 [001] ..s.. 2942.151581: block_rq_complete: 7,2 WS () 0 + 1024 be,0,4 [0]
//
// The task name may contain spaces and colons, so the line is split at ": block_rq_". The
// "(...)" is the command of passthrough requests (SCSI CDBs as hex bytes with spaces), empty
// for filesystem I/O. Timestamps have microsecond resolution: trace_pipe prints no more.
//
// It allocates nothing for a good line (a read test sends tens of thousands of requests, two
// lines each), and the event it returns holds no part of line, so the caller may pass a line
// whose bytes it reuses.
func parseLine(line string) (ev event, ok bool, lost uint64, err error) {
	var fb [16]string // the fields of the payload, on the stack
	if i := strings.Index(line, "[LOST "); i >= 0 && strings.HasPrefix(line, "CPU:") {
		// "CPU:1 [LOST 42 EVENTS]"; a line cut after "[LOST " has no count.
		f := fields(fb[:0], line[i+len("[LOST "):])
		if len(f) == 0 {
			return ev, false, 0, fmt.Errorf("bad LOST line %q", line)
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return ev, false, 0, fmt.Errorf("bad LOST line %q", line)
		}
		return ev, false, n, nil
	}
	i := strings.Index(line, ": block_rq_")
	if i < 0 {
		return ev, false, 0, nil
	}
	head, rest := line[:i], line[i+len(": block_rq_"):]
	j := strings.Index(rest, ": ")
	if j < 0 {
		return ev, false, 0, fmt.Errorf("no payload in %q", line)
	}
	kind := rest[:j]
	rest = rest[j+2:]
	switch kind { // the constants, not a piece of line
	case "issue":
		ev.kind = "issue"
	case "complete":
		ev.kind = "complete"
	case "requeue":
		ev.kind = "requeue"
	default:
		return ev, false, 0, nil
	}
	if k := strings.LastIndexByte(head, ' '); k >= 0 {
		head = head[k+1:]
	}
	if ev.ts, err = parseTimestamp(head); err != nil {
		return ev, false, 0, fmt.Errorf("%w in %q", err, line)
	}
	// dev rwbs [bytes] (cmd) sector + nr_sector ioprio [comm|error]
	f := fields(fb[:0], rest)
	if len(f) < 2 {
		return ev, false, 0, fmt.Errorf("short payload in %q", line)
	}
	if ev.op, ev.flags, err = parseRWBS(f[1]); err != nil {
		return ev, false, 0, fmt.Errorf("%w in %q", err, line)
	}
	open := strings.Index(rest, " (")
	cl := strings.Index(rest, ") ")
	if open < 0 || cl < open {
		return ev, false, 0, fmt.Errorf("no (cmd) in %q", line)
	}
	g := fields(fb[:0], rest[cl+2:])
	if len(g) < 3 || g[1] != "+" {
		return ev, false, 0, fmt.Errorf("no sector + length in %q", line)
	}
	// A flush's completion reports sector (sector_t)-1 (blk_rq_pos of a request without
	// data), its issue reports 0: ParseUint accepts both, and flushes are matched by
	// operation only.
	if ev.sector, err = strconv.ParseUint(g[0], 10, 64); err != nil {
		return ev, false, 0, fmt.Errorf("bad sector in %q", line)
	}
	if ev.sectors, err = strconv.ParseUint(g[2], 10, 32); err != nil {
		return ev, false, 0, fmt.Errorf("bad length in %q", line)
	}
	// No device has 2^55 sectors (16 EiB); beyond that, byte offsets (sector × 512) would
	// overflow a uint64 and the trace could not be stored (Request.check refuses it).
	if ev.sectors > 0 && ev.sector >= maxSector-ev.sectors {
		return ev, false, 0, fmt.Errorf("sector %d + %d out of range in %q", ev.sector, ev.sectors, line)
	}
	if ev.kind == "complete" && len(g) >= 5 {
		ev.err = strings.Trim(g[len(g)-1], "[]") != "0"
	}
	return ev, true, 0, nil
}

// fields appends the fields of s, split as strings.Fields splits them, to dst and returns it.
// For ASCII text it allocates nothing beyond dst's growth.
func fields(dst []string, s string) []string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return append(dst, strings.Fields(s)...) // unicode spaces: as strings.Fields does
		}
	}
	for i := 0; i < len(s); {
		for i < len(s) && asciiSpace(s[i]) {
			i++
		}
		j := i
		for j < len(s) && !asciiSpace(s[j]) {
			j++
		}
		if j > i {
			dst = append(dst, s[i:j])
		}
		i = j
	}
	return dst
}

// asciiSpace is unicode.IsSpace for an ASCII byte.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// parseTimestamp turns "2942.149451" (seconds.microseconds) into nanoseconds.
func parseTimestamp(s string) (uint64, error) {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) == 0 || len(frac) > 9 {
		return 0, fmt.Errorf("bad timestamp %q", s)
	}
	a, err := strconv.ParseUint(sec, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad timestamp %q", s)
	}
	b, err := strconv.ParseUint(frac, 10, 64)
	if err != nil || a > (1<<62)/1_000_000_000 {
		return 0, fmt.Errorf("bad timestamp %q", s)
	}
	for range 9 - len(frac) { // the fraction's digits, as nanoseconds
		b *= 10
	}
	return a*1e9 + b, nil
}

// assembler pairs issues with completions into Requests.
type assembler struct {
	base      uint64 // trace-clock time of the capture start
	offset    uint64 // partition start in sectors, subtracted from every sector
	reqs      []Request
	pending   []int // indexes into reqs of requests in flight, oldest first
	unmatched uint64
	lost      uint64
}

// add applies one event.
//
// Matching: the block layer identifies requests by pointer, which the tracepoints do not
// print, so a completion is paired with the oldest in-flight request of the same operation
// whose range contains the completed range. A driver may complete a request in parts
// (block_rq_complete then reports each part's start and length); the request is done when
// its last sector completes. Zero-length requests (flushes) are matched by operation only,
// because the issue reports sector 0 and the completion sector (sector_t)-1. When the flush
// machinery handles an empty REQ_PREFLUSH write for the device, the write itself is never
// issued but is completed ("WS () 0 + 0"): it finds no zero-length write in flight and is
// counted in Unmatched. A requeued request is issued again: its first issue is dropped.
func (a *assembler) add(ev event) {
	if ev.sectors > 0 {
		ev.sector -= min(ev.sector, a.offset)
	} else {
		ev.sector = 0
	}
	ts := uint64(0)
	if ev.ts > a.base {
		ts = ev.ts - a.base
	}
	switch ev.kind {
	case "issue":
		a.reqs = append(a.reqs, Request{Issue: durationNs(ts), Sector: ev.sector, Sectors: ev.sectors, Op: ev.op, Flags: ev.flags})
		a.pending = append(a.pending, len(a.reqs)-1)
	case "complete", "requeue":
		for k, idx := range a.pending {
			r := &a.reqs[idx]
			if r.Op != ev.op || (r.Sectors == 0) != (ev.sectors == 0) {
				continue
			}
			if ev.sectors > 0 && (ev.sector < r.Sector || ev.sector+ev.sectors > r.Sector+r.Sectors) {
				continue
			}
			a.pending = append(a.pending[:k], a.pending[k+1:]...)
			if ev.kind == "requeue" {
				r.Op = numOps // dropped in requests()
				return
			}
			if ev.err {
				r.Flags |= FlagError
			}
			if ev.sectors > 0 && ev.sector+ev.sectors < r.Sector+r.Sectors {
				// A partial completion: the rest is still in flight, keep its place.
				a.pending = append(a.pending[:k], append([]int{idx}, a.pending[k:]...)...)
				return
			}
			r.Done = true
			r.Latency = durationNs(ts) - r.Issue
			if r.Latency < 0 {
				r.Latency = 0 // cross-CPU clock skew of the trace clock
			}
			return
		}
		if ev.kind == "complete" {
			a.unmatched++
		}
	}
}

// requests returns the requests in issue order, and hands them over: the assembler's own
// slice, filtered in place, rather than a copy of a slice that can hold tens of thousands of
// requests. trace_pipe merges the per-CPU buffers by timestamp as it reads, but an event
// committed late on one CPU can follow an already read later one from another, hence the
// sort.
func (a *assembler) requests() []Request {
	out := a.reqs[:0]
	for _, r := range a.reqs {
		if r.Op != numOps {
			out = append(out, r)
		}
	}
	a.reqs, a.pending = nil, nil
	sortByIssue(out)
	return out
}
