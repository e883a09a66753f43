package results

import (
	"maps"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/cardid"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/trace"
)

// The types below are parts of results.json that other packages compute: the device's sysfs
// identity (blockdev), the simulated card's counters (flash), a block trace's summary (trace)
// and a cell's median and range (stats). results.json embedded those packages' structs until
// schema v1, so that renaming a field there, or adding one, silently changed the file format.
// results owns them now, with the same JSON names and shapes (testdata/schema_v1.golden.json
// holds every field), and the From functions copy the producers' values at the edge: a field
// added to a producer's struct reaches the file only when it is added here too.

// DeviceIdentity is the block device a run wrote to, as sysfs describes it.
type DeviceIdentity struct {
	Name      string `json:"name"`       // kernel name, e.g. "loop3"
	Path      string `json:"path"`       // device node, e.g. "/dev/loop3"
	SizeBytes uint64 `json:"size_bytes"` // from <dev>/size (512-byte sectors)
	// Queue holds the request-queue settings sysfs has (rotational, logical_block_size,
	// scheduler, ...); for a partition they are the whole disk's.
	Queue map[string]string `json:"queue"`
	// Device holds what the hardware says about itself: model and vendor, and for SD/eMMC
	// cards the CID fields and the erase geometry the card reports.
	Device map[string]string `json:"device,omitempty"`
	// Loop is set for a bound loop device (or a partition of one).
	Loop *Loop `json:"loop,omitempty"`
}

// Loop is the state of a bound loop device.
type Loop struct {
	BackingFile string `json:"backing_file"`
	DirectIO    bool   `json:"direct_io"` // what the kernel does, not what was asked
	Autoclear   bool   `json:"autoclear"`
}

// FromIdentity converts the identity blockdev read from sysfs; nil for nil.
func FromIdentity(id *blockdev.Identity) *DeviceIdentity {
	if id == nil {
		return nil
	}
	// A card's serial number (in serial, and in cid's PSN field) is kept only as a hash.
	d := &DeviceIdentity{Name: id.Name, Path: id.Path, SizeBytes: id.SizeBytes,
		Queue: maps.Clone(id.Queue), Device: cardid.ScrubSerials(id.Device)}
	if l := id.Loop; l != nil {
		d.Loop = &Loop{BackingFile: l.BackingFile, DirectIO: l.DirectIO, Autoclear: l.Autoclear}
	}
	return d
}

// CardState is the simulated card's cumulative flash counters at the end of a run, with its
// wear histogram.
type CardState struct {
	Reads              uint64 `json:"reads"`
	Writes             uint64 `json:"writes"`
	Discards           uint64 `json:"discards"`
	Flushes            uint64 `json:"flushes"`
	HostBytesRead      uint64 `json:"host_bytes_read"`
	HostBytesWritten   uint64 `json:"host_bytes_written"`
	HostBytesDiscarded uint64 `json:"host_bytes_discarded"`
	PagesRead          uint64 `json:"pages_read"`          // page reads, including read-modify-write of partial pages
	PagesProgrammed    uint64 `json:"pages_programmed"`    // all page programs, copies included
	PagesCopied        uint64 `json:"pages_copied"`        // programs that moved still-valid data (AU merges, GC)
	BlocksErased       uint64 `json:"blocks_erased"`       // erase-block erases
	AUMerges           uint64 `json:"au_merges"`           // AU closes that had to copy (or finish a page)
	GCCollections      uint64 `json:"gc_collections"`      // page-mapped blocks reclaimed by garbage collection
	BusyNs             uint64 `json:"busy_ns"`             // modelled busy time, sum of request latencies
	PageSize           uint64 `json:"page_size"`           // to turn pages into bytes
	FlashBytesWritten  uint64 `json:"flash_bytes_written"` // PagesProgrammed × PageSize
	// WriteAmplification is flash bytes programmed ÷ host bytes written (0 when nothing was
	// written).
	WriteAmplification float64 `json:"write_amplification"`
	// Wear is the erase-count histogram over all physical erase blocks.
	Wear        []WearBucket `json:"wear"`
	MaxErases   uint32       `json:"max_erases"`
	Endurance   uint64       `json:"endurance"`
	WornOut     uint64       `json:"worn_out_blocks"` // blocks at or past Endurance erases
	EraseBlocks uint64       `json:"erase_blocks"`    // physical erase blocks modelled
}

// WearBucket is the number of erase blocks erased a given number of times.
type WearBucket struct {
	Erases uint32 `json:"erases"`
	Blocks uint64 `json:"blocks"`
}

// FromCounters converts the flash model's counters (a snapshot, with its wear histogram).
func FromCounters(c flash.Counters) *CardState {
	s := &CardState{
		Reads: c.Reads, Writes: c.Writes, Discards: c.Discards, Flushes: c.Flushes,
		HostBytesRead: c.HostBytesRead, HostBytesWritten: c.HostBytesWritten, HostBytesDiscarded: c.HostBytesDiscard,
		PagesRead: c.PagesRead, PagesProgrammed: c.PagesProgrammed, PagesCopied: c.PagesCopied,
		BlocksErased: c.BlocksErased, AUMerges: c.AUMerges, GCCollections: c.GCCollections, BusyNs: c.BusyNs,
		PageSize: c.PageSize, FlashBytesWritten: c.FlashBytesWrite, WriteAmplification: c.WriteAmplification,
		MaxErases: c.MaxErases, Endurance: c.Endurance, WornOut: c.WornOut, EraseBlocks: c.EraseBlocks,
	}
	// nil stays nil: the file says "wear": null for a card that reported no histogram.
	if c.Wear != nil {
		s.Wear = make([]WearBucket, len(c.Wear))
		for i, b := range c.Wear {
			s.Wear[i] = WearBucket{Erases: b.Erases, Blocks: b.Blocks}
		}
	}
	return s
}

// TraceSummary is what a block-request trace says about a test's workload.
type TraceSummary struct {
	Requests   uint64   `json:"requests"`
	Read       TraceDir `json:"read"`
	Write      TraceDir `json:"write"`
	Discard    TraceDir `json:"discard"`    // discards and secure erases
	Other      TraceDir `json:"other"`      // rwbs "N": write-zeroes and the like
	Flushes    uint64   `json:"flushes"`    // cache-flush requests
	Preflushes uint64   `json:"preflushes"` // data requests carrying REQ_PREFLUSH
	FUA        uint64   `json:"fua"`        // writes with forced unit access
	Sync       uint64   `json:"sync"`
	Meta       uint64   `json:"meta"` // requests flagged as filesystem metadata
	Errors     uint64   `json:"errors"`
	// Sizes is the request-size histogram (data requests only), smallest bucket first.
	Sizes          []SizeBucket `json:"sizes"`
	Aligned4K      Alignment    `json:"aligned_4k"`
	AlignedPage    Alignment    `json:"aligned_page"`
	AlignedAU      Alignment    `json:"aligned_au"`
	FlushLatency   Latency      `json:"flush_latency"`
	BusyNs         uint64       `json:"busy_ns"` // union of the issue→completion intervals
	SpanNs         uint64       `json:"span_ns"` // first issue to last completion
	Incomplete     uint64       `json:"incomplete"`
	Lost           uint64       `json:"lost_events"`
	UnmatchedCompl uint64       `json:"unmatched_completions"`
}

// TraceDir counts the requests of one direction.
type TraceDir struct {
	Requests uint64 `json:"requests"`
	Bytes    uint64 `json:"bytes"`
}

// Latency is a latency distribution in nanoseconds (nearest-rank percentiles).
type Latency struct {
	Count uint64 `json:"count"`
	P50Ns uint64 `json:"p50_ns"`
	P99Ns uint64 `json:"p99_ns"`
	MaxNs uint64 `json:"max_ns"`
}

// SizeBucket is the requests whose size is in [Bytes, 2×Bytes).
type SizeBucket struct {
	Bytes        uint64  `json:"bytes"`
	Reads        uint64  `json:"reads"`
	Writes       uint64  `json:"writes"`
	Discards     uint64  `json:"discards"` // discards and secure erases
	ReadLatency  Latency `json:"read_latency"`
	WriteLatency Latency `json:"write_latency"`
}

// Alignment counts the writes that cover only whole multiples of Unit.
type Alignment struct {
	Unit    uint64  `json:"unit"`
	Writes  uint64  `json:"writes"`
	Bytes   uint64  `json:"bytes"`
	Share   float64 `json:"share"`    // of write requests (0 when there are none)
	ByBytes float64 `json:"by_bytes"` // of written bytes
}

// FromTraceSummary converts a trace's summary.
func FromTraceSummary(s trace.Summary) TraceSummary {
	out := TraceSummary{
		Requests: s.Requests,
		Read:     fromDir(s.Read), Write: fromDir(s.Write), Discard: fromDir(s.Discard), Other: fromDir(s.Other),
		Flushes: s.Flushes, Preflushes: s.Preflushes, FUA: s.FUA, Sync: s.Sync, Meta: s.Meta, Errors: s.Errors,
		Aligned4K: fromAlignment(s.Aligned4K), AlignedPage: fromAlignment(s.AlignedPage), AlignedAU: fromAlignment(s.AlignedAU),
		FlushLatency: fromLatency(s.FlushLatency),
		BusyNs:       s.BusyNs, SpanNs: s.SpanNs, Incomplete: s.Incomplete, Lost: s.Lost, UnmatchedCompl: s.UnmatchedCompl,
	}
	// nil stays nil ("sizes": null), as for a trace without data requests.
	if s.Sizes != nil {
		out.Sizes = make([]SizeBucket, len(s.Sizes))
		for i, b := range s.Sizes {
			out.Sizes[i] = SizeBucket{Bytes: b.Bytes, Reads: b.Reads, Writes: b.Writes, Discards: b.Discards,
				ReadLatency: fromLatency(b.ReadLatency), WriteLatency: fromLatency(b.WriteLatency)}
		}
	}
	return out
}

func fromDir(d trace.DirStats) TraceDir { return TraceDir{Requests: d.Requests, Bytes: d.Bytes} }

func fromLatency(l trace.Latency) Latency {
	return Latency{Count: l.Count, P50Ns: l.P50Ns, P99Ns: l.P99Ns, MaxNs: l.MaxNs}
}

func fromAlignment(a trace.Alignment) Alignment {
	return Alignment{Unit: a.Unit, Writes: a.Writes, Bytes: a.Bytes, Share: a.Share, ByBytes: a.ByBytes}
}

// Stats is the median, minimum and maximum of a cell's figures over N repetitions.
type Stats struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// fromStats converts the summary stats computes.
func fromStats(s stats.Summary) Stats {
	return Stats{N: s.N, Median: s.Median, Min: s.Min, Max: s.Max}
}
