package capacity

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Cost is what a capacity check will cost, said before it writes (Estimate): what the card sees
// written and read, the undo log on the host, and the time, for a genuine card (the common
// case, and the one whose cost is known in advance) and at most (a counterfeit whose cache
// makes every round write past it).
type Cost struct {
	Written    uint64 `json:"written_bytes"`
	WrittenMax uint64 `json:"written_max_bytes"`
	// Copied is the part of Written that writes back what the card held (the volume written
	// past a cache): not restored at the end.
	Copied     uint64 `json:"copied_bytes"`
	Read       uint64 `json:"read_bytes"`
	UndoLog    uint64 `json:"undo_log_bytes"`
	UndoLogMax uint64 `json:"undo_log_max_bytes"`
	// Seconds and SecondsMax are at WriteMBps and ReadMBps.
	Seconds    float64 `json:"seconds"`
	SecondsMax float64 `json:"seconds_max"`
	WriteMBps  float64 `json:"write_mbps"`
	ReadMBps   float64 `json:"read_mbps"`
	Reset      bool    `json:"reset"`
	NoUndo     bool    `json:"no_undo,omitempty"`
	MaxCache   uint64  `json:"max_cache_bytes,omitempty"`
}

// The rates a time estimate assumes: an SD Speed Class 10 card writes at least 10 MB/s
// (sequentially, on an empty card), and cards read faster than they write.
const (
	assumedWriteMBps = 10
	assumedReadMBps  = 20
)

// Estimate says what a check of a card of size bytes will cost with opt's settings (after
// Probe's defaults: block b, fanout, resolution and cache bound), reset telling whether the
// card can be reset.
func estimate(size, b uint64, fanout int, resol, maxCache uint64, reset, noUndo bool) Cost {
	c := Cost{WriteMBps: assumedWriteMBps, ReadMBps: assumedReadMBps, Reset: reset, NoUndo: noUndo}
	// A genuine card: the reference block, one round over the whole card (every block kept:
	// the search ends), the wrap's reads (one block per power of two from 2 MiB), and the
	// round read back once per cache volume tried.
	probe := (1 + uint64(fanout)) * b
	wrapReads := uint64(0)
	for k := uint64(2 * mib); mib+k+b <= size; k *= 2 {
		wrapReads++
	}
	// Rounds of a counterfeit: each narrows the doubt (fanout+1)-fold until it is resol wide,
	// plus the first and one more for a block straddling the end.
	rounds := 2 + int(math.Ceil(math.Log(float64(size)/float64(max(resol, 1)))/math.Log(float64(fanout+1))))
	var flush uint64
	tries := uint64(1)
	if !reset {
		c.MaxCache = maxCache
		for v := uint64(firstFlush); v <= maxCache; v *= 2 {
			flush = v
			tries++
		}
	}
	if flush > 0 {
		// The volume skips the probe's own blocks that lie in it (the round's, over the card).
		flush -= min(uint64(fanout)*flush/size+1, uint64(fanout)) * b
	}
	c.Copied = flush
	reads := (1+wrapReads)*b + tries*probe
	if noUndo {
		c.Written = probe + flush
		c.WrittenMax = uint64(rounds)*probe + uint64(rounds)*flush
		c.Read = reads
	} else {
		// Everything written is read and saved first; the probe's own blocks are written back.
		c.Written = 2*probe + flush
		c.WrittenMax = 2*uint64(rounds)*probe + uint64(rounds)*flush
		c.Read = reads + probe + flush
		c.UndoLog = undoSize(probe+flush, b)
		c.UndoLogMax = undoSize(uint64(rounds)*(probe+flush), b)
	}
	readMax := c.Read + uint64(rounds-1)*(probe+flush)
	c.Seconds = seconds(c.Written, c.Read)
	c.SecondsMax = seconds(c.WrittenMax, readMax)
	return c
}

// undoSize is the undo log holding n bytes saved in records of at most 1 MiB (the probe's
// blocks are b each: one record apiece).
func undoSize(n, b uint64) uint64 { return n + (n/min(b, mib)+1)*recHeader }

func seconds(written, read uint64) float64 {
	return float64(written)/(assumedWriteMBps*1e6) + float64(read)/(assumedReadMBps*1e6)
}

// String is the announcement before the check writes.
func (c Cost) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the capacity check will write %s to the card if it is genuine", size(c.Written))
	if c.Copied > 0 {
		fmt.Fprintf(&b, " (%s of it past any write cache of up to %s, each block written back with what it held)", size(c.Copied), size(c.MaxCache))
	}
	fmt.Fprintf(&b, ", read %s", size(c.Read))
	if c.NoUndo {
		b.WriteString(", and keep no undo log (the card's data is destroyed next: what it overwrites is not put back)")
	} else {
		fmt.Fprintf(&b, ", and keep an undo log of %s on this host until it has put the card back", size(c.UndoLog))
	}
	fmt.Fprintf(&b, "; about %v at %g MB/s writing and %g MB/s reading (an SD Speed Class 10 card's least)", dur(c.Seconds), c.WriteMBps, c.ReadMBps)
	if c.WrittenMax > c.Written {
		fmt.Fprintf(&b, "; a counterfeit whose cache makes each round write past it: up to %s written", size(c.WrittenMax))
		if !c.NoUndo {
			fmt.Fprintf(&b, ", an undo log of %s", size(c.UndoLogMax))
		}
		fmt.Fprintf(&b, ", %v", dur(c.SecondsMax))
	}
	return b.String()
}

func dur(s float64) time.Duration {
	d := time.Duration(s * float64(time.Second))
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
