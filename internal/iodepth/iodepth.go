// Package iodepth does O_DIRECT reads or writes, random or sequential, with a given number of
// requests always in flight: fio's iodepth, for the SD application classes' conditions (fio
// with libaio at iodepth 32, as Raspberry Pi's card test runs it) without cgo or fio.
//
// Depth 1 is pread(2)/pwrite(2), one request at a time, as fio's psync engine. Depth N > 1 is
// Linux's native asynchronous I/O through its raw system calls (io_setup, io_submit,
// io_getevents), as fio's libaio engine: one thread submits N requests, and each time some
// complete, submits as many new ones. What the block layer sees is what it sees under fio
// --ioengine=libaio --iodepth=N: N requests of the job's size outstanding from one task, the
// completed ones replaced in one io_submit (fio's iodepth_batch_complete_min=1; fio submits
// its replacements one call each by default, which the block layer's plugging then merges the
// same way). Native AIO is asynchronous only with O_DIRECT; the caller opens the file so.
package iodepth

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Job says what to do.
type Job struct {
	Write  bool
	Random bool
	// Block is the size of each request; Offset and Size the region of the file they fall in
	// (Size a multiple of Block).
	Block, Offset, Size uint64
	// Depth is how many requests are in flight at once (0: 1).
	Depth int
	// Runtime stops the job after that long (0: no limit); Bytes after that many bytes (0:
	// Size). A sequential job wraps around at the end of its region.
	Runtime time.Duration
	Bytes   uint64
	// Seed makes a random job's offsets repeatable.
	Seed uint64
	// Observe, when set, receives each request's latency (submission to completion).
	Observe func(time.Duration)
}

// Result is what a job did.
type Result struct {
	Engine  string        `json:"engine"` // "psync" (depth 1) or "libaio"
	Depth   int           `json:"depth"`
	Ops     int           `json:"ops"`
	Bytes   uint64        `json:"bytes"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Latencies of the requests, submission to completion: median, 99th percentile, longest.
	P50, P99, Max time.Duration
}

// IOPS is requests completed per second.
func (r Result) IOPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// MBps is 10^6 bytes per second.
func (r Result) MBps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds()
}

// ErrNoAIO says the kernel has no native asynchronous I/O (CONFIG_AIO off, or io_setup
// refused): queue depths above 1 cannot be measured, by fsbench or by fio's libaio engine.
var ErrNoAIO = errors.New("this kernel has no native asynchronous I/O (io_setup failed; CONFIG_AIO, or /proc/sys/fs/aio-max-nr): a queue depth above 1 cannot be measured")

// maxSamples bounds the latencies kept for the percentiles (4 bytes each).
const maxSamples = 1 << 20

// offsets yields the job's request offsets.
type offsets struct {
	j    Job
	rng  *rand.Rand
	next uint64
}

func (o *offsets) take() uint64 {
	if o.j.Random {
		return o.j.Offset + o.rng.Uint64N(o.j.Size/o.j.Block)*o.j.Block
	}
	off := o.j.Offset + o.next
	o.next += o.j.Block
	if o.next+o.j.Block > o.j.Size {
		o.next = 0
	}
	return off
}

// Run does the job on the open descriptor fd (opened with O_DIRECT; j.Block a multiple of
// its logical block size).
func Run(ctx context.Context, fd int, j Job) (Result, error) {
	if j.Block == 0 || j.Size < j.Block {
		return Result{}, fmt.Errorf("a region of %d bytes holds no request of %d", j.Size, j.Block)
	}
	if j.Depth <= 0 {
		j.Depth = 1
	}
	// One buffer per request in flight, outside the Go heap (mmap: page-aligned, as
	// O_DIRECT needs, and never moved or freed while the kernel holds its address).
	mem, err := unix.Mmap(-1, 0, j.Depth*int(j.Block), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return Result{}, fmt.Errorf("allocate %d buffers of %d bytes: %w", j.Depth, j.Block, err)
	}
	defer unix.Munmap(mem)
	alloc := func(i int) []byte { return mem[i*int(j.Block) : (i+1)*int(j.Block) : (i+1)*int(j.Block)] }
	if j.Bytes == 0 {
		j.Bytes = j.Size
	}
	o := &offsets{j: j, rng: rand.New(rand.NewPCG(j.Seed, 0x10de9))}
	lat := make([]uint32, 0, 4096)
	var r Result
	if j.Depth == 1 {
		r, err = runSync(ctx, fd, j, o, alloc, &lat)
	} else {
		r, err = runAIO(ctx, fd, j, o, alloc, &lat)
	}
	r.Depth = j.Depth
	if len(lat) > 0 {
		slices.Sort(lat)
		us := func(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }
		r.P50, r.P99, r.Max = us(lat[len(lat)/2]), us(lat[len(lat)*99/100]), us(lat[len(lat)-1])
	}
	return r, err
}

func (j Job) record(lat *[]uint32, d time.Duration) {
	if j.Observe != nil {
		j.Observe(d)
	}
	if len(*lat) < maxSamples {
		*lat = append(*lat, uint32(min(d.Microseconds(), 1<<32-1)))
	}
}

// done says whether the job has done enough.
func (j Job) done(r *Result, start time.Time) bool {
	return r.Bytes >= j.Bytes || (j.Runtime > 0 && time.Since(start) >= j.Runtime)
}

func runSync(ctx context.Context, fd int, j Job, o *offsets, alloc func(i int) []byte, lat *[]uint32) (Result, error) {
	r := Result{Engine: "psync"}
	buf := alloc(0)
	fillRandom(buf, j.Seed)
	start := time.Now()
	last := start
	for !j.done(&r, start) {
		if r.Ops%64 == 0 && ctx.Err() != nil {
			return r, ctx.Err()
		}
		off := o.take()
		var n int
		var err error
		for {
			if j.Write {
				buf[0]++
				n, err = unix.Pwrite(fd, buf, int64(off))
			} else {
				n, err = unix.Pread(fd, buf, int64(off))
			}
			if err != unix.EINTR {
				break
			}
		}
		if err == nil && n != len(buf) {
			err = fmt.Errorf("%d of %d bytes", n, len(buf))
		}
		if err != nil {
			return r, fmt.Errorf("%s at %d: %w", op(j.Write), off, err)
		}
		now := time.Now()
		j.record(lat, now.Sub(last))
		last = now
		r.Ops++
		r.Bytes += j.Block
	}
	r.Elapsed = last.Sub(start)
	return r, nil
}

func op(write bool) string {
	if write {
		return "write"
	}
	return "read"
}

// fillRandom fills b with incompressible bytes, so that a card cannot compress or deduplicate
// what it is given.
func fillRandom(b []byte, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := 0; i+8 <= len(b); i += 8 {
		v := rng.Uint64()
		for k := 0; k < 8; k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
}

// iocb is the kernel's struct iocb (include/uapi/linux/aio_abi.h): 64 bytes on every
// architecture, pointers carried in 64-bit fields. aio_key and aio_rw_flags swap places on
// big-endian machines; both are 0 here, so the order does not matter.
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   uint32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const (
	iocbCmdPread  = 0
	iocbCmdPwrite = 1
)

// runAIO keeps j.Depth requests in flight with native AIO. The kernel copies each iocb at
// io_submit and keeps only the buffer's address (outside the Go heap, see Run).
func runAIO(ctx context.Context, fd int, j Job, o *offsets, alloc func(i int) []byte, lat *[]uint32) (Result, error) {
	r := Result{Engine: "libaio"}
	var aioCtx uintptr
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, uintptr(j.Depth), uintptr(unsafe.Pointer(&aioCtx)), 0); e != 0 {
		return r, fmt.Errorf("%w: %v", ErrNoAIO, e)
	}
	defer unix.Syscall(unix.SYS_IO_DESTROY, aioCtx, 0, 0)

	a := newAIORun(aioCtx, fd, j, o, alloc)
	start := time.Now()
	first := make([]int, 0, j.Depth)
	for i := 0; i < j.Depth && a.queued+uint64(len(first))*j.Block < j.Bytes; i++ {
		first = append(first, i)
	}
	if err := a.submit(first); err != nil {
		return r, err
	}
	var last time.Time
	var failed error
	again := make([]int, 0, j.Depth)
	// Completions are waited for at most this long at a time, so that a cancelled context
	// is noticed even while the device holds every request.
	timeout := unix.NsecToTimespec(int64(200 * time.Millisecond))
	for a.inFlight > 0 {
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, aioCtx, 1, uintptr(len(a.events)), uintptr(unsafe.Pointer(&a.events[0])), uintptr(unsafe.Pointer(&timeout)), 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return r, fmt.Errorf("io_getevents: %w", e)
		}
		now := time.Now()
		again = again[:0]
		stop := failed != nil || ctx.Err() != nil || (j.Runtime > 0 && now.Sub(start) >= j.Runtime)
		for _, ev := range a.events[:n] {
			a.inFlight--
			i := int(ev.data)
			if ev.res != int64(j.Block) {
				if failed == nil && ev.res < 0 {
					failed = fmt.Errorf("%s at %d: %w", op(j.Write), a.cbs[i].offset, unix.Errno(-ev.res))
				} else if failed == nil {
					failed = fmt.Errorf("%s at %d: %d of %d bytes", op(j.Write), a.cbs[i].offset, ev.res, j.Block)
				}
				continue
			}
			j.record(lat, now.Sub(a.sent[i]))
			r.Ops++
			r.Bytes += j.Block
			last = now
			if !stop && a.queued+uint64(len(again))*j.Block < j.Bytes {
				again = append(again, i)
			}
		}
		if len(again) > 0 {
			if err := a.submit(again); err != nil {
				failed = err
			}
		}
	}
	if !last.IsZero() {
		r.Elapsed = last.Sub(start)
	}
	if failed != nil {
		return r, failed
	}
	return r, ctx.Err()
}

// aioRun is the state of runAIO: one iocb, buffer and submission time per slot.
type aioRun struct {
	ctx      uintptr
	j        Job
	o        *offsets
	cbs      []iocb
	bufs     [][]byte
	sent     []time.Time
	events   []ioEvent
	ptrs     []*iocb
	queued   uint64 // bytes submitted
	inFlight int
}

func newAIORun(ctx uintptr, fd int, j Job, o *offsets, alloc func(i int) []byte) *aioRun {
	a := &aioRun{ctx: ctx, j: j, o: o, cbs: make([]iocb, j.Depth), bufs: make([][]byte, j.Depth),
		sent: make([]time.Time, j.Depth), events: make([]ioEvent, j.Depth), ptrs: make([]*iocb, 0, j.Depth)}
	opcode := uint16(iocbCmdPread)
	if j.Write {
		opcode = iocbCmdPwrite
	}
	for i := range a.cbs {
		a.bufs[i] = alloc(i)
		fillRandom(a.bufs[i], j.Seed+uint64(i))
		a.cbs[i] = iocb{data: uint64(i), opcode: opcode, fildes: uint32(fd),
			buf: uint64(uintptr(unsafe.Pointer(&a.bufs[i][0]))), nbytes: j.Block}
	}
	return a
}

// submit sends new requests in the given slots, at the job's next offsets.
func (a *aioRun) submit(slots []int) error {
	a.ptrs = a.ptrs[:0]
	now := time.Now()
	for _, i := range slots {
		a.cbs[i].offset = int64(a.o.take())
		if a.j.Write {
			a.bufs[i][0]++
		}
		a.sent[i] = now
		a.ptrs = append(a.ptrs, &a.cbs[i])
		a.queued += a.j.Block
	}
	for len(a.ptrs) > 0 {
		n, _, e := unix.Syscall(unix.SYS_IO_SUBMIT, a.ctx, uintptr(len(a.ptrs)), uintptr(unsafe.Pointer(&a.ptrs[0])))
		if e == unix.EINTR || e == unix.EAGAIN {
			continue
		}
		if e != 0 {
			return fmt.Errorf("io_submit: %w", e)
		}
		a.inFlight += int(n)
		a.ptrs = a.ptrs[n:]
	}
	return nil
}
