// Package measure takes the figures of one test: wall time, CPU time, the block device's I/O
// counters, and kernel memory. A Span brackets exactly the work being measured, so set-up
// (remounts, cache drops) stays outside it.
package measure

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/blockdev"
)

// Sample is what one Span measured.
type Sample struct {
	Wall time.Duration
	// User and Sys are the CPU time of fsbench itself plus that of the children it waited for
	// during the span (mkfs, mksquashfs, modprobe). Work the kernel does in its own threads
	// (writeback, btrfs/f2fs compression workers, the loop device's worker) is not in either.
	User, Sys time.Duration
	// Dev is the change of the device's /sys/block/<dev>/stat counters over the span.
	Dev blockdev.Stat
}

// Meter makes Spans for one block device. Its hooks are replaceable so that the arithmetic is
// unit-tested without a device.
type Meter struct {
	now    func() time.Time
	cpu    func() (user, sys time.Duration, err error)
	device func() (blockdev.Stat, error)
}

// NewMeter returns a Meter for the device dev (e.g. "loop3") under the sysfs root (normally
// "/sys").
func NewMeter(sysfs, dev string) *Meter {
	return &Meter{
		now:    time.Now,
		cpu:    processCPU,
		device: func() (blockdev.Stat, error) { return blockdev.ReadStat(sysfs, dev) },
	}
}

// NewCPUMeter returns a Meter for work that has no block device to count (raw flash: an MTD
// device has no I/O statistics in sysfs); its samples carry wall and CPU time only.
func NewCPUMeter() *Meter {
	return &Meter{now: time.Now, cpu: processCPU, device: func() (blockdev.Stat, error) { return blockdev.Stat{}, nil }}
}

// Span is a measurement in progress.
type Span struct {
	m         *Meter
	start     time.Time
	user, sys time.Duration
	dev       blockdev.Stat
}

// Start reads the counters; everything until Stop is measured.
func (m *Meter) Start() (*Span, error) {
	s := &Span{m: m}
	var err error
	if s.dev, err = m.device(); err != nil {
		return nil, fmt.Errorf("reading device counters: %w", err)
	}
	if s.user, s.sys, err = m.cpu(); err != nil {
		return nil, fmt.Errorf("reading CPU time: %w", err)
	}
	// Time is read last at the start and first at the stop so that the counter reads are not
	// in the wall time.
	s.start = m.now()
	return s, nil
}

// Stop ends the span and returns its deltas.
func (s *Span) Stop() (Sample, error) {
	wall := s.m.now().Sub(s.start)
	user, sys, err := s.m.cpu()
	if err != nil {
		return Sample{}, fmt.Errorf("reading CPU time: %w", err)
	}
	dev, err := s.m.device()
	if err != nil {
		return Sample{}, fmt.Errorf("reading device counters: %w", err)
	}
	return Sample{Wall: wall, User: user - s.user, Sys: sys - s.sys, Dev: dev.Sub(s.dev)}, nil
}

// processCPU is the CPU time of this process and of its waited-for children.
func processCPU() (user, sys time.Duration, err error) {
	var self, children unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &self); err != nil {
		return 0, 0, err
	}
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &children); err != nil {
		return 0, 0, err
	}
	user = tv(self.Utime) + tv(children.Utime)
	sys = tv(self.Stime) + tv(children.Stime)
	return user, sys, nil
}

func tv(t unix.Timeval) time.Duration {
	// Sec and Usec are int32 on 32-bit ARM: widen before multiplying.
	return time.Duration(int64(t.Sec))*time.Second + time.Duration(int64(t.Usec))*time.Microsecond
}

// PeakRSS is the largest resident set size this process has had, in bytes.
func PeakRSS() uint64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return uint64(ru.Maxrss) * 1024 // Linux reports KiB
}

// DropCaches writes dirty data back and empties the page, dentry and inode caches, so that the
// next read has to reach the device. Both steps are needed: drop_caches only drops clean pages.
func DropCaches() error {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
		return fmt.Errorf("dropping caches (needs root): %w", err)
	}
	return nil
}
