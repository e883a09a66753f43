// Package trace records what a filesystem test really sends to the flash: the block requests
// of one device, captured from the kernel's block_rq_issue and block_rq_complete tracepoints
// (tracefs, no blktrace binary). A Trace is stored in a compact binary format, summarised
// (sizes, alignment, flushes, busy time, latencies) and replayed offline through the flash
// model to estimate in-card write amplification and card lifetime.
package trace

import (
	"fmt"
	"strings"
	"time"
)

// SectorSize is the unit of the tracepoints' sector and nr_sector fields: always 512 bytes,
// whatever the device's logical block size.
const SectorSize = 512

// maxSector bounds sector numbers so that byte offsets (sector × 512) never overflow a uint64.
const maxSector = 1 << 55

// Op is the operation of a request, from the first letters of the kernel's rwbs string.
type Op uint8

// Operations. OpOther is any other request the block layer sends to the device (rwbs "N":
// write-zeroes, zone management, driver-private requests).
const (
	OpRead        Op = iota // R
	OpWrite                 // W
	OpDiscard               // D
	OpSecureErase           // DE
	OpFlush                 // F: a cache flush (REQ_OP_FLUSH), no data
	OpOther                 // N
	numOps
)

var opNames = [numOps]string{"read", "write", "discard", "secure-erase", "flush", "other"}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", uint8(o))
}

// Flags are the modifiers of a request, from the rest of the rwbs string.
type Flags uint8

// Request flags.
const (
	// FlagPreflush: the device is asked to flush its cache before this request (the leading
	// "F" of rwbs). Devices with a volatile cache normally see the flush as a separate
	// OpFlush request instead, because the block layer's flush machinery splits it off.
	FlagPreflush  Flags = 1 << iota
	FlagFUA             // forced unit access: the data must reach stable storage
	FlagSync            // S: someone waits for it
	FlagMeta            // M: filesystem metadata
	FlagReadahead       // A: speculative read
	FlagError           // block_rq_complete reported an error
	numFlags      = 6
	allFlags      = 1<<numFlags - 1
)

var flagNames = [numFlags]string{"preflush", "fua", "sync", "meta", "readahead", "error"}

func (f Flags) String() string {
	var s []string
	for i, n := range flagNames {
		if f&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	if f&^allFlags != 0 {
		s = append(s, fmt.Sprintf("0x%x", uint8(f&^allFlags)))
	}
	return strings.Join(s, "|")
}

// Request is one block request as the device saw it (after merging and splitting). The
// fields are ordered so that it takes 40 bytes, not 48: a read test's trace holds tens of
// thousands.
type Request struct {
	// Issue is when the request was handed to the driver, since the trace's Start.
	Issue time.Duration
	// Latency is issue to completion; meaningful only when Done.
	Latency time.Duration
	// Sector and Sectors are the start and length in 512-byte sectors, relative to the
	// traced device (a partition's start is subtracted). Flushes have 0, 0.
	Sector, Sectors uint64
	// Done says a completion was seen (a request still in flight when the capture stopped,
	// or whose completion was lost, has none).
	Done  bool
	Op    Op
	Flags Flags
}

// Off is the request's byte offset.
func (r Request) Off() uint64 { return r.Sector * SectorSize }

// Len is the request's length in bytes.
func (r Request) Len() uint64 { return r.Sectors * SectorSize }

// Trace is the requests of one device over one capture, in issue order.
type Trace struct {
	Device       string    // e.g. "loop3", "mmcblk0p2"
	Major, Minor uint32    // the traced device's number (for a partition, the partition's)
	Start        time.Time // wall-clock time when the capture started
	// Lost is the number of trace events the kernel dropped (ring-buffer overruns): when
	// it is not 0 the trace misses requests and its figures are lower bounds.
	Lost uint64
	// Unmatched counts completions without a traced issue: requests already in flight at
	// Start, and the empty "original" requests the flush machinery completes without ever
	// issuing them (see parse.go).
	Unmatched uint64
	Requests  []Request
}

// Shift moves every request by bytes (a whole number of sectors), so that a trace of a
// partition (or of a loop device over part of a card) reads as the card sees it: the kernel's
// own block tracepoints report a partition's requests at the disk's sectors the same way.
func (t *Trace) Shift(bytes uint64) {
	if bytes == 0 {
		return
	}
	for i := range t.Requests {
		if t.Requests[i].Sectors > 0 {
			t.Requests[i].Sector += bytes / SectorSize
		}
	}
}
