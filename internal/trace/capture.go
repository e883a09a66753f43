package trace

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/mountinfo"
)

// ErrUnavailable is wrapped by the errors of Available and Start when this machine cannot
// trace block requests; the caller then keeps only the /sys/block/<dev>/stat deltas.
var ErrUnavailable = errors.New("block-request tracing unavailable (only the /sys/block/<dev>/stat deltas are recorded)")

// Paths, replaceable in tests.
var (
	mountinfoPath = "/proc/self/mountinfo"
	sysClassBlock = "/sys/class/block"
)

// standardTracefs is where the kernel documentation and every distribution put tracefs.
const standardTracefs = "/sys/kernel/tracing"

// bufferKB is the per-CPU ring buffer of the private instance. The reader drains it every
// pollInterval; block requests are ~150 bytes of ring buffer per issue+complete pair, so
// this holds ~14000 requests per CPU, ~14 s of 4 KiB requests at 1000 IOPS even if the
// reader is not scheduled.
const (
	bufferKB     = 2048
	pollInterval = 20 * time.Millisecond
)

var instanceSeq atomic.Uint64

// Available reports whether block requests can be traced here: nil, or an error wrapping
// ErrUnavailable that says why (not root, no tracefs, no block tracepoints). It mounts
// tracefs at /sys/kernel/tracing when it is not mounted anywhere (see mountTracefs).
func Available() error {
	_, err := tracefsRoot()
	return err
}

// tracefsRoot finds (or mounts) tracefs and checks the block events are there.
func tracefsRoot() (string, error) {
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%w: tracefs needs root (run fsbench with sudo)", ErrUnavailable)
	}
	root, err := findTracefs(mountinfoPath)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if root == "" {
		if root, err = mountTracefs(); err != nil {
			return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	for _, e := range []string{"block_rq_issue", "block_rq_complete"} {
		if _, err := os.Stat(filepath.Join(root, "events/block", e, "format")); err != nil {
			return "", fmt.Errorf("%w: this kernel has no %s tracepoint (CONFIG_BLOCK tracepoints / CONFIG_FTRACE missing): %v", ErrUnavailable, e, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "instances")); err != nil {
		return "", fmt.Errorf("%w: tracefs at %s has no instances directory (kernel older than 3.16?): %v", ErrUnavailable, root, err)
	}
	return root, nil
}

// findTracefs returns the mount point of tracefs from a mountinfo file, or "" when it is not
// mounted. A tracefs automounted under debugfs (/sys/kernel/debug/tracing) counts too.
func findTracefs(path string) (string, error) {
	ms, err := mountinfo.Read(path)
	if err != nil {
		return "", err
	}
	var found string
	for _, m := range ms {
		if m.FSType != "tracefs" {
			continue
		}
		if m.MountPoint == standardTracefs {
			return m.MountPoint, nil
		}
		if found == "" {
			found = m.MountPoint
		}
	}
	return found, nil
}

// mountTracefs mounts tracefs at /sys/kernel/tracing, the system's standard location, and
// leaves it mounted: systemd mounts it there at boot on most distributions (this machine's
// init does not), other tools expect it there, and unmounting it could break a concurrent
// user. The mount holds no state of fsbench's: the trace instances are removed by Stop.
func mountTracefs() (string, error) {
	if err := fs.MountKernelFS("nodev", standardTracefs, "tracefs", 0); err != nil {
		return "", fmt.Errorf("tracefs is not mounted and mounting it at %s failed (kernel without CONFIG_TRACING?): %w", standardTracefs, err)
	}
	return standardTracefs, nil
}

// devInfo is what the tracepoint filter needs to know about a block device.
type devInfo struct {
	major, minor   uint32 // the device's own number
	diskMajor      uint32 // the whole disk's number: the tracepoints report that one
	diskMinor      uint32
	start, sectors uint64 // a partition's range on the disk, in sectors (0, 0: whole disk)
}

// lookupDev reads /sys/class/block/<dev>. A partition's requests reach the tracepoints
// remapped to the whole disk with disk-absolute sectors, so the filter is on the disk's
// number and the partition's sector range.
func lookupDev(dev string) (devInfo, error) {
	var d devInfo
	dir := filepath.Join(sysClassBlock, dev)
	read := func(dir, name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b)), err
	}
	num, err := read(dir, "dev")
	if err != nil {
		return d, fmt.Errorf("block device %q: %w (give a name from /sys/class/block, e.g. loop3)", dev, err)
	}
	if d.major, d.minor, err = parseDevNum(num); err != nil {
		return d, fmt.Errorf("block device %q: %w", dev, err)
	}
	d.diskMajor, d.diskMinor = d.major, d.minor
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return d, fmt.Errorf("block device %q: %w", dev, err)
		}
		disk := filepath.Dir(real)
		if num, err = read(disk, "dev"); err != nil {
			return d, fmt.Errorf("disk of partition %q: %w", dev, err)
		}
		if d.diskMajor, d.diskMinor, err = parseDevNum(num); err != nil {
			return d, fmt.Errorf("disk of partition %q: %w", dev, err)
		}
		for _, f := range []struct {
			name string
			p    *uint64
		}{{"start", &d.start}, {"size", &d.sectors}} {
			s, err := read(dir, f.name)
			if err == nil {
				*f.p, err = strconv.ParseUint(s, 10, 64)
			}
			if err != nil {
				return d, fmt.Errorf("partition %q %s: %w", dev, f.name, err)
			}
		}
	}
	return d, nil
}

func parseDevNum(s string) (uint32, uint32, error) {
	a, b, ok := strings.Cut(s, ":")
	ma, err1 := strconv.ParseUint(a, 10, 32)
	mi, err2 := strconv.ParseUint(b, 10, 32)
	if !ok || err1 != nil || err2 != nil || mi >= 1<<20 || ma >= 1<<12 {
		return 0, 0, fmt.Errorf("bad device number %q", s)
	}
	return uint32(ma), uint32(mi), nil
}

// filter is the tracepoint filter selecting d's requests. The events' dev field is the
// kernel-internal dev_t, major<<20 | minor (MINORBITS = 20), not the userspace encoding
// stat(2) returns. Zero-length requests (flushes) of a partition's disk are kept: a flush
// has no sector and empties the cache for every partition.
func (d devInfo) filter() string {
	f := fmt.Sprintf("dev == %d", uint64(d.diskMajor)<<20|uint64(d.diskMinor))
	if d.sectors > 0 {
		f += fmt.Sprintf(" && ((sector >= %d && sector < %d) || nr_sector == 0)", d.start, d.start+d.sectors)
	}
	return f
}

// Capture is a trace in progress.
type Capture struct {
	dev      string
	info     devInfo
	dir      string // the private instance
	pipe     int    // trace_pipe, non-blocking
	start    time.Time
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex // guards asm and readErr while the reader runs
	asm      assembler
	readErr  error
	stopOnce sync.Once
	trace    *Trace // what Stop returned, for a second call
	stopErr  error
}

var events = []string{"block_rq_issue", "block_rq_complete", "block_rq_requeue"}

// Start begins tracing the requests of the block device dev (a name under /sys/class/block:
// "loop3", "mmcblk0", "mmcblk0p2") in a private tracefs instance, so that concurrent
// captures and other users of the global trace buffer do not disturb each other. Stop must
// be called to remove the instance.
func Start(dev string) (*Capture, error) {
	root, err := tracefsRoot()
	if err != nil {
		return nil, err
	}
	info, err := lookupDev(dev)
	if err != nil {
		return nil, err
	}
	c := &Capture{dev: dev, info: info, pipe: -1, stop: make(chan struct{}), done: make(chan struct{})}
	c.dir = filepath.Join(root, "instances", fmt.Sprintf("fsbench-%d-%d", os.Getpid(), instanceSeq.Add(1)))
	if err := os.Mkdir(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: creating trace instance %s: %v", ErrUnavailable, c.dir, err)
	}
	if err := c.setup(); err != nil {
		c.teardown()
		return nil, err
	}
	go c.read()
	return c, nil
}

func (c *Capture) write(name, value string) error {
	if err := os.WriteFile(filepath.Join(c.dir, name), []byte(value), 0); err != nil {
		return fmt.Errorf("setting %s to %q in trace instance %s: %w", name, value, c.dir, err)
	}
	return nil
}

func (c *Capture) setup() error {
	// "mono" (CLOCK_MONOTONIC) is comparable across CPUs, unlike the default "local": an
	// issue and its completion are often traced on different CPUs.
	if err := c.write("trace_clock", "mono"); err != nil {
		return err
	}
	if err := c.write("buffer_size_kb", strconv.Itoa(bufferKB)); err != nil {
		return err
	}
	for _, e := range events {
		if err := c.write(filepath.Join("events/block", e, "filter"), c.info.filter()); err != nil {
			return err
		}
	}
	fd, err := unix.Open(filepath.Join(c.dir, "trace_pipe"), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("opening trace_pipe of %s: %w", c.dir, err)
	}
	c.pipe = fd
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fmt.Errorf("reading the monotonic clock: %w", err)
	}
	c.start = time.Now()
	c.asm.base = uint64(ts.Nano())
	c.asm.offset = c.info.start
	for _, e := range events {
		if err := c.write(filepath.Join("events/block", e, "enable"), "1"); err != nil {
			return err
		}
	}
	return c.write("tracing_on", "1")
}

// read drains trace_pipe until Stop. The pipe is non-blocking and polled: a blocking read
// of trace_pipe cannot be interrupted by closing the file from another goroutine.
//
// One buffer serves the whole capture: the complete lines of each read are parsed in place
// and an unfinished last line is moved to the front for the next read to complete. (A read
// test's trace is tens of MB of text; a buffer per read, a string per line and a slice of
// fields per line made the capture fsbench's largest allocator.)
func (c *Capture) read() {
	defer close(c.done)
	buf := make([]byte, 64<<10)
	fill := 0 // buf[:fill] is the start of a line not yet complete
	stopping := false
	for {
		if fill == len(buf) {
			buf = append(buf, make([]byte, len(buf))...) // a line longer than the buffer
		}
		n, err := unix.Read(c.pipe, buf[fill:])
		if n > 0 {
			fill += n
			if last := bytes.LastIndexByte(buf[:fill], '\n'); last >= 0 {
				c.consume(buf[:last+1])
				fill = copy(buf, buf[last+1:fill])
			}
			continue
		}
		if err != nil && err != unix.EAGAIN && err != unix.EINTR {
			c.mu.Lock()
			c.readErr = fmt.Errorf("reading %s/trace_pipe: %w", c.dir, err)
			c.mu.Unlock()
			return
		}
		if err == unix.EINTR {
			continue
		}
		if stopping {
			// Events are disabled and the buffer is empty: everything is read.
			if fill > 0 {
				c.consume(append(buf[:fill], '\n'))
			}
			return
		}
		select {
		case <-c.stop:
			stopping = true
		case <-time.After(pollInterval):
		}
	}
}

// consume parses whole lines. Each line is handed to parseLine as a string over data's
// bytes, without a copy: parseLine keeps nothing of it.
func (c *Capture) consume(data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1] // as bufio.ScanLines does
		}
		if len(line) == 0 {
			continue
		}
		ev, ok, lost, err := parseLine(unsafe.String(&line[0], len(line)))
		if err != nil {
			if c.readErr == nil {
				c.readErr = fmt.Errorf("parsing trace_pipe (kernel with another block_rq format?): %w", err)
			}
			continue
		}
		c.asm.lost += lost
		if ok {
			c.asm.add(ev)
		}
	}
}

// Stop ends the capture, removes the trace instance and returns the trace. The trace is
// returned even with an error when only the parsing of some lines failed.
func (c *Capture) Stop() (*Trace, error) {
	c.stopOnce.Do(func() {
		var errs []error
		// Disable first so that the drain terminates, then let the reader empty the buffer.
		if err := c.write("tracing_on", "0"); err != nil {
			errs = append(errs, err)
		}
		close(c.stop)
		<-c.done
		overrun, err := c.overruns()
		if err != nil {
			errs = append(errs, err)
		}
		c.mu.Lock()
		c.asm.lost = max(c.asm.lost, overrun)
		if c.readErr != nil {
			errs = append(errs, c.readErr)
		}
		c.trace = &Trace{
			Device: c.dev, Major: c.info.major, Minor: c.info.minor, Start: c.start,
			Lost: c.asm.lost, Unmatched: c.asm.unmatched, Requests: c.asm.requests(),
		}
		c.mu.Unlock()
		if err := c.teardown(); err != nil {
			errs = append(errs, err)
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.trace, c.stopErr
}

// overruns sums the events the kernel dropped, from per_cpu/cpu*/stats: "overrun" (the
// ring buffer wrapped over unread events) and "dropped events" (could not be written).
func (c *Capture) overruns() (uint64, error) {
	files, err := filepath.Glob(filepath.Join(c.dir, "per_cpu/cpu*/stats"))
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return total, fmt.Errorf("reading %s: %w", f, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok || (k != "overrun" && k != "dropped events") {
				continue
			}
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
				total += n
			}
		}
	}
	return total, nil
}

// teardown disables the events, closes the pipe and removes the instance (rmdir of an
// instance fails with EBUSY while one of its files is open).
func (c *Capture) teardown() error {
	var errs []error
	for _, e := range events {
		// Ignore errors: the instance may be half set up.
		_ = os.WriteFile(filepath.Join(c.dir, "events/block", e, "enable"), []byte("0"), 0)
	}
	if c.pipe >= 0 {
		if err := unix.Close(c.pipe); err != nil {
			errs = append(errs, fmt.Errorf("closing trace_pipe: %w", err))
		}
		c.pipe = -1
	}
	if err := unix.Rmdir(c.dir); err != nil && err != unix.ENOENT {
		errs = append(errs, fmt.Errorf("removing trace instance %s (remove it with rmdir): %w", c.dir, err))
	}
	return errors.Join(errs...)
}

func durationNs(ns uint64) time.Duration { return time.Duration(min(ns, 1<<62)) }

func sortByIssue(rs []Request) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Issue < rs[j].Issue })
}
