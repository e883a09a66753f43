// Package probe measures the geometry of a flash device (SD card, eMMC, USB stick) the way
// Arnd Bergmann's flashbench does, from the outside, by timing I/O:
//
//   - a read sweep: O_DIRECT reads at block sizes 512 B ... 64 MiB, time per read and MB/s;
//   - the alignment test (flashbench -a): reads of one small block just before, across and
//     just after boundaries of each power-of-two alignment. A read crossing a boundary of the
//     card's pages, or of its allocation units (AUs, the unit the FTL maps and erases), costs
//     more than one that does not; the alignments where that extra cost steps up reveal the
//     page size and the AU size;
//   - with writes allowed (destructive): a write sweep by block size (the page size is where
//     writes reach full speed), the open-AU test (flashbench -O: how many AUs can be written
//     in turn before throughput collapses) and the FAT-area test (flashbench -f: are small
//     random writes faster in the first AUs?).
//
// Every estimate carries its evidence and a confidence; Result is written as probe.json
// (schema fsbench.probe/v1) with SVG charts beside it.
package probe

import (
	"context"
	"fmt"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/measure"
)

// Schema is the version tag of probe.json. A change that breaks readers gets a new version.
const Schema = "fsbench.probe/v1"

// Options says what to measure. Zero values take the defaults documented per field.
type Options struct {
	// Write enables the destructive tests. The caller must have checked the device (for a
	// block device: target.CheckDevice with --destroy).
	Write bool
	// MaxReadBlock is the largest block of the read sweep (default 64 MiB; capped at the size).
	MaxReadBlock uint64
	// MaxAlign is the largest alignment tested (default 64 MiB; capped so that at least two
	// boundaries of it lie inside the device).
	MaxAlign uint64
	// AlignPositions is how many boundaries are read per alignment (default 64) and
	// AlignTries how often each read is repeated, keeping the fastest (default 4): the
	// minimum strips the delays the host adds (scheduling, interrupts), which only ever add.
	AlignPositions, AlignTries int
	// MaxOpenAUs is the largest number of AUs written in turn by the open-AU test (default 8).
	MaxOpenAUs int
	// Log receives one line per step (nil: silent).
	Log func(format string, args ...any)
	// Sentinel, when set, watches the machine during the FAT-area test: that test reads a
	// ratio of two write rates, which host overhead compresses toward 1 (and noise can invert),
	// so "no FAT area" is only concluded with confidence from a quiet span. nil: not watched.
	Sentinel *measure.Sentinel
}

func (o *Options) defaults() {
	if o.MaxReadBlock == 0 {
		o.MaxReadBlock = 64 << 20
	}
	if o.MaxAlign == 0 {
		o.MaxAlign = 64 << 20
	}
	if o.AlignPositions == 0 {
		o.AlignPositions = 64
	}
	if o.AlignTries == 0 {
		o.AlignTries = 6
	}
	if o.MaxOpenAUs == 0 {
		o.MaxOpenAUs = 8
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// Result is everything a probe found: probe.json.
type Result struct {
	Schema string    `json:"schema"`
	Device string    `json:"device"` // the path probed
	Kind   string    `json:"kind"`   // "disk", "partition" or "file"
	Start  time.Time `json:"start"`
	// DurationNs is the wall time of the whole probe.
	DurationNs int64 `json:"duration_ns"`
	// Identity is sysfs's description (absent for an image file).
	Identity *blockdev.Identity `json:"identity,omitempty"`
	// PartitionStart is the partition's first byte on its disk: every offset the probe uses
	// is relative to it, so boundaries are found relative to it too.
	PartitionStart uint64  `json:"partition_start,omitempty"`
	USB            USBInfo `json:"usb"`
	EMMC           EMMC    `json:"emmc"`
	SizeBytes      uint64  `json:"size_bytes"`
	BlockSize      uint64  `json:"block_size"` // logical block size used for alignment
	DirectIO       bool    `json:"direct_io"`
	Write          bool    `json:"write"` // whether the destructive tests ran
	Warnings       []string

	ReadSweep []SweepPoint `json:"read_sweep"`
	Align     AlignTest    `json:"align"`
	// WriteSweep is the sequential write sweep, GappedSweep the same sizes written one block
	// then one block skipped (see Estimates.Page).
	WriteSweep  []SweepPoint  `json:"write_sweep,omitempty"`
	GappedSweep []SweepPoint  `json:"gapped_write_sweep,omitempty"`
	OpenAU      []OpenAUPoint `json:"open_au,omitempty"`
	FATArea     []FATPoint    `json:"fat_area,omitempty"`
	// DiscardWorks is whether BLKDISCARD succeeded during the write tests ("" not tried).
	DiscardWorks string `json:"discard_works,omitempty"`

	Estimates Estimates `json:"estimates"`
}

// Confidence levels of an estimate.
const (
	High   = "high"
	Medium = "medium"
	Low    = "low"
	None   = "none" // not found: Value is 0
)

// Estimate is one figure the probe derived, with how sure it is and why.
type Estimate struct {
	// Value is the estimate: bytes for sizes, a count for open AUs; 0 when not found.
	Value uint64 `json:"value"`
	// AtLeast marks a lower bound: the test could not go far enough to see the end.
	AtLeast    bool   `json:"at_least,omitempty"`
	Confidence string `json:"confidence"`
	// Method names the measurement, Evidence gives the figures it rests on.
	Method   string `json:"method"`
	Evidence string `json:"evidence"`
}

// Estimates are the probe's conclusions.
type Estimates struct {
	AU       Estimate `json:"au"`        // allocation unit / erase block, bytes (alignment test)
	ReadPage Estimate `json:"read_page"` // page size from the alignment test, bytes
	Page     Estimate `json:"page"`      // page size from the write sweep, bytes (--write)
	OpenAUs  Estimate `json:"open_aus"`  // AUs the card keeps open, count (--write)
	FATArea  Estimate `json:"fat_area"`  // size of the fast area at the start, bytes (--write)
}

// SweepPoint is one block size of a sweep.
type SweepPoint struct {
	BlockSize uint64  `json:"block_size"`
	Count     int     `json:"count"`     // requests timed
	TotalNs   int64   `json:"total_ns"`  // their summed time
	MedianNs  int64   `json:"median_ns"` // median time per request
	MBps      float64 `json:"mb_per_s"`  // bytes ÷ total time, 10^6 bytes per second
}

// Run probes dev. It reads everywhere and, with opts.Write, writes to the device (whose
// data is then lost). The identity fields of the result are the caller's to fill (Identify).
func Run(ctx context.Context, dev Device, opts Options) (*Result, error) {
	opts.defaults()
	start := time.Now()
	r := &Result{Schema: Schema, Start: start.UTC(), SizeBytes: dev.Size(), BlockSize: dev.BlockSize(),
		DirectIO: dev.Direct(), Write: opts.Write}
	if !dev.Direct() {
		r.Warnings = append(r.Warnings, "O_DIRECT is not available for this file: the host page cache takes part and the timings say nothing about flash")
	}
	maxBuf := max(opts.MaxReadBlock, 4<<20)
	maxBuf = min(maxBuf, dev.Size())
	buf, free, err := alignedBuffer(int(maxBuf))
	if err != nil {
		return nil, err
	}
	defer free()
	fillPattern(buf)

	opts.Log("read sweep: block sizes %s ... %s", formatSize(dev.BlockSize()), formatSize(min(opts.MaxReadBlock, dev.Size())))
	if r.ReadSweep, err = readSweep(ctx, dev, buf, opts); err != nil {
		return r, fmt.Errorf("read sweep: %w", err)
	}
	opts.Log("alignment test")
	if r.Align, err = alignTest(ctx, dev, buf, opts); err != nil {
		return r, fmt.Errorf("alignment test: %w", err)
	}
	r.Estimates.AU, r.Estimates.ReadPage = analyzeAlign(&r.Align)

	if opts.Write {
		if err := writeTests(ctx, dev, buf, opts, r); err != nil {
			return r, err
		}
	}
	r.DurationNs = int64(time.Since(start))
	return r, nil
}

// fillPattern fills b with a xorshift sequence: data that no controller can compress or
// deduplicate, so that writes of it cost what writes of real data cost.
func fillPattern(b []byte) {
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for j := 0; j < 8; j++ {
			b[i+j] = byte(x >> (8 * j))
		}
	}
}

// formatSize is bytesize.Format under the short name the probe's many log and report lines
// use: "16 KiB", "4 MiB".
func formatSize(n uint64) string { return bytesize.Format(n) }
