package simcard

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The path offset (Card.SetPathOffset) is calibrated at start-up, before the card file
// appears, on a hidden calibration file (CalibrationFile in the mount): each read of it
// spends CalibrationHold in the server's handler and returns, in its first 8 bytes, the time
// it spent there, so a reader anywhere above (the FUSE file itself, or a loop device over it)
// can tell its round trip through the kernel from the server's share. The server measures
// the FUSE path itself ("auto"); with "external" it waits for a client (target.StartSimcard)
// to measure the path it will really use, a loop device over the file, and to write the
// result back (CalibrationMessage).
const (
	CalibrationFile = ".calibrate"
	calibSize       = 1 << 20
	calibWarm       = 20  // round trips not counted: page faults, first allocations, wake-ups
	calibReads      = 200 // round trips measured
	// CalibrationHold is how long a calibration read spends in the handler: about a small
	// card read, so that the reader's CPU goes idle meanwhile as it does in use, and its
	// wake-up cost is part of what is measured.
	CalibrationHold = 300 * time.Microsecond
	// calibExternalWait bounds the wait for an external calibration; then the server
	// calibrates the FUSE path itself.
	calibExternalWait = 30 * time.Second
)

// RoundTrip is what MeasureRoundTrip found: the round trips of a reader through the kernel
// to the server's handler and back, the handler's own time taken out.
type RoundTrip struct {
	Reads                 int
	Best, Median, Slowest time.Duration
	Through               string // what was read: the FUSE file, a loop device
}

// Offset is the path offset the round trips justify: the median one, the time the path
// typically adds to a request, so that a tool sees, on average, the modelled card's time
// (see Card.SetPathOffset). The fastest round trip was used before: every request then
// carried the rest of its round trip on top of the model, 75-130 µs on these machines, which
// put a quarter of the figures a tool measures at requests of 550 µs or less outside 15 % of
// the model.
func (r RoundTrip) Offset() time.Duration { return max(r.Median, 0) }

// String says how the offset was obtained, for Stats.PathCalibration.
func (r RoundTrip) String() string {
	return fmt.Sprintf("median of %d round trips through %s (O_DIRECT 4 KiB reads at start-up; fastest %v, slowest %v)",
		r.Reads, r.Through, r.Best.Round(100*time.Nanosecond), r.Slowest.Round(time.Microsecond))
}

// MeasureRoundTrip reads 4 KiB with O_DIRECT from the start of path, which must be the
// calibration file of a running server or a device over it, and times each read.
func MeasureRoundTrip(path, through string) (RoundTrip, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return RoundTrip{}, fmt.Errorf("open %s for calibration: %w", path, err)
	}
	defer f.Close()
	// O_DIRECT wants an aligned buffer: an anonymous mapping is page-aligned.
	buf, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return RoundTrip{}, fmt.Errorf("calibration buffer: %w", err)
	}
	defer unix.Munmap(buf)
	fd := int(f.Fd())
	trips := make([]time.Duration, 0, calibReads)
	for i := 0; i < calibWarm+calibReads; i++ {
		t0 := time.Now()
		n, err := unix.Pread(fd, buf, 0)
		rt := time.Since(t0)
		if err != nil {
			return RoundTrip{}, fmt.Errorf("calibration read of %s: %w", path, err)
		}
		held := time.Duration(binary.LittleEndian.Uint64(buf))
		if n < 8 || held < CalibrationHold || held > time.Second {
			return RoundTrip{}, fmt.Errorf("calibration read of %s: %d bytes, handler time %v: not a calibration file", path, n, held)
		}
		if i >= calibWarm {
			trips = append(trips, rt-held)
		}
	}
	slices.Sort(trips)
	return RoundTrip{Reads: len(trips), Best: trips[0], Median: trips[len(trips)/2], Slowest: trips[len(trips)-1], Through: through}, nil
}

// CalibrationMessage is what an external calibrator writes to the calibration file: the
// offset to use and how it was obtained. "auto" instead asks the server to calibrate itself.
func CalibrationMessage(offset time.Duration, how string) string {
	return fmt.Sprintf("offset_ns %d\n%s\n", offset.Nanoseconds(), strings.TrimSpace(how))
}

// parseCalibration reads a CalibrationMessage; auto is true for "auto".
func parseCalibration(msg string) (off time.Duration, how string, auto bool, err error) {
	first, rest, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	if first == "auto" {
		return 0, "", true, nil
	}
	v, ok := strings.CutPrefix(first, "offset_ns ")
	if !ok {
		return 0, "", false, fmt.Errorf("calibration message %q: want \"offset_ns N\" or \"auto\"", first)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || ns < 0 || ns > int64(10*time.Millisecond) {
		return 0, "", false, fmt.Errorf("calibration message: offset %q is not between 0 and 10 ms in ns", v)
	}
	return time.Duration(ns), strings.TrimSpace(rest), false, nil
}
