package blockdev

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// SectorSize is the unit of the sector fields of /sys/block/<dev>/stat and of
// /sys/block/<dev>/size. It is always 512 bytes, whatever the device's logical block size
// (Documentation/block/stat.rst: "the standard UNIX 512-byte sectors").
const SectorSize = 512

// Stat is one reading of /sys/block/<dev>/stat (Documentation/block/stat.rst). Kernels print
// 11 fields (< 4.18), 15 (discard fields, 4.18+) or 17 (flush fields, 5.5+); fields the
// kernel did not print are zero.
type Stat struct {
	ReadIOs, ReadMerges, ReadSectors, ReadTicksMs             uint64
	WriteIOs, WriteMerges, WriteSectors, WriteTicksMs         uint64
	InFlight, IOTicksMs, TimeInQueueMs                        uint64
	DiscardIOs, DiscardMerges, DiscardSectors, DiscardTicksMs uint64
	FlushIOs, FlushTicksMs                                    uint64
	Fields                                                    int // how many fields the kernel printed
}

// fields returns pointers to the counters in the order the kernel prints them.
func (s *Stat) fields() []*uint64 {
	return []*uint64{
		&s.ReadIOs, &s.ReadMerges, &s.ReadSectors, &s.ReadTicksMs,
		&s.WriteIOs, &s.WriteMerges, &s.WriteSectors, &s.WriteTicksMs,
		&s.InFlight, &s.IOTicksMs, &s.TimeInQueueMs,
		&s.DiscardIOs, &s.DiscardMerges, &s.DiscardSectors, &s.DiscardTicksMs,
		&s.FlushIOs, &s.FlushTicksMs,
	}
}

// ParseStat parses the contents of a /sys/block/<dev>/stat file: 11, 15 or 17 decimal
// numbers separated by any amount of white space. More than 17 fields are accepted (a future
// kernel appending counters must not break old binaries): the first 17 are parsed, the rest
// are checked to be numbers and ignored, and Fields says how many there were.
func ParseStat(b []byte) (Stat, error) {
	var s Stat
	words := bytes.Fields(b)
	n := len(words)
	switch {
	case n == 11, n == 15, n >= 17:
	default:
		return Stat{}, fmt.Errorf("parse block device stat: %d fields, want 11, 15 or 17", n)
	}
	dst := s.fields()
	for i, w := range words {
		v, err := strconv.ParseUint(string(w), 10, 64)
		if err != nil {
			return Stat{}, fmt.Errorf("parse block device stat: field %d: %w", i+1, err)
		}
		if i < len(dst) {
			*dst[i] = v
		}
	}
	s.Fields = n
	return s, nil
}

// ReadStat reads and parses <sysfs>/class/block/<dev>/stat. sysfs is normally "/sys"; dev is
// a kernel name such as "loop3" or "mmcblk0p2" (partitions have their own counters).
func ReadStat(sysfs, dev string) (Stat, error) {
	dir, err := devDir(sysfs, dev)
	if err != nil {
		return Stat{}, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Stat{}, fmt.Errorf("read counters of %s: %w", dev, err)
	}
	s, err := ParseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("%s: %w", dev, err)
	}
	return s, nil
}

// Sub returns the counters accumulated between before and s. InFlight is a gauge, not a
// counter: it is taken from s, not subtracted. Fields is the smaller of the two readings'.
//
// A counter that went backwards is taken to have wrapped at 32 bits when both readings fit in
// 32 bits: the kernel keeps the tick fields as unsigned int on every architecture and the I/O
// and merge counts as unsigned long, which is 32 bits on 32-bit ARM, so these do wrap on
// long-running boards. A counter above 32 bits that went backwards can only mean the device
// was reset between the readings; the delta is then counted from zero (the value of s).
func (s Stat) Sub(before Stat) Stat {
	var d Stat
	a, b, out := s.fields(), before.fields(), d.fields()
	for i := range out {
		*out[i] = delta(*a[i], *b[i])
	}
	d.InFlight = s.InFlight
	d.Fields = min(s.Fields, before.Fields)
	return d
}

func delta(after, before uint64) uint64 {
	switch {
	case after >= before:
		return after - before
	case before <= math.MaxUint32:
		return uint64(uint32(after - before))
	default:
		return after
	}
}

// ReadBytes is ReadSectors in bytes.
func (s Stat) ReadBytes() uint64 { return s.ReadSectors * SectorSize }

// WriteBytes is WriteSectors in bytes.
func (s Stat) WriteBytes() uint64 { return s.WriteSectors * SectorSize }

// DiscardBytes is DiscardSectors in bytes.
func (s Stat) DiscardBytes() uint64 { return s.DiscardSectors * SectorSize }
