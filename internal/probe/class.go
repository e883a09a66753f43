package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/iodepth"
)

// ClassSchema is the version tag of class.json.
const ClassSchema = "fsbench.class/v1"

// ClassFile is the file Class's result is written to.
const ClassFile = "class.json"

// ClassOptions are the conditions of the application-class test. Zero values take the
// defaults, which are the SD specification's measurement area and Raspberry Pi's card test's
// (agnostics, sd_bench.fio: fio, libaio, iodepth 32, 256 MiB, direct, 10 s per random test).
type ClassOptions struct {
	// Area is the measurement area at the start of the device (default 256 MiB, the SD
	// specification's); it is written first (prefilled) in PrefillBlock requests (default
	// 512 KiB), then written sequentially in SeqBlock requests (default 4 MiB).
	Area, PrefillBlock, SeqBlock uint64
	// Runtime is each random test's length (default 10 s), at each of Depths (default 1 and
	// 32).
	Runtime time.Duration
	Depths  []int
	// SeqDepth is the requests in flight of the prefill and the sequential write (default 4:
	// 16 MiB of 4 MiB requests, which the block layer splits at max_sectors_kb into more
	// requests than a card's queue holds; fio's 32 would hold 128 MiB of buffers).
	SeqDepth int
	Seed     uint64
	// Log receives one line per step (nil: silent).
	Log func(format string, args ...any)
}

func (o *ClassOptions) defaults() {
	if o.Area == 0 {
		o.Area = 256 << 20
	}
	if o.PrefillBlock == 0 {
		o.PrefillBlock = 512 << 10
	}
	if o.SeqBlock == 0 {
		o.SeqBlock = 4 << 20
	}
	if o.Runtime == 0 {
		o.Runtime = 10 * time.Second
	}
	if len(o.Depths) == 0 {
		o.Depths = []int{1, 32}
	}
	if o.SeqDepth == 0 {
		o.SeqDepth = 4
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// ClassResult is class.json: the application-class test's conditions, the host's queue, each
// figure and the verdicts.
type ClassResult struct {
	Schema string    `json:"schema"`
	Device string    `json:"device"`
	Start  time.Time `json:"start"`
	// Conditions are what was measured, as the report prints them.
	AreaBytes    uint64 `json:"area_bytes"`
	PrefillBlock uint64 `json:"prefill_block"`
	SeqBlock     uint64 `json:"seq_block"`
	SeqDepth     int    `json:"seq_depth"`
	RandBlock    uint64 `json:"rand_block"`
	RuntimeNs    int64  `json:"runtime_ns"`
	// Host is the host's queue and cache state (nil for an image file).
	Host *blockdev.HostQueue `json:"host,omitempty"`
	// SeqWriteMBps is the sequential write of the area (after the prefill), its flush
	// included, as fio's end_fsync.
	SeqWriteMBps float64 `json:"seq_write_mbps"`
	// Random holds the random 4 KiB tests, writes then reads, each at every depth.
	Random   []ClassPoint   `json:"random"`
	Verdicts []ClassVerdict `json:"verdicts"`
}

// ClassPoint is one random test.
type ClassPoint struct {
	Write  bool           `json:"write"`
	Depth  int            `json:"depth"`
	IOPS   float64        `json:"iops"`
	Result iodepth.Result `json:"result"`
}

// ClassVerdict is one class at one queue depth.
type ClassVerdict struct {
	Class string `json:"class"`
	Depth int    `json:"depth"`
	Pass  bool   `json:"pass"`
	// Why lists each figure against the class's minimum.
	Why string `json:"why"`
}

// Class measures a device's SD application performance class (A1, A2) under the
// specification's conditions: the area written first, its sequential write, then random
// 4 KiB writes and reads inside it at each queue depth. It writes to the device: the caller
// must have checked that it may (--destroy).
func Class(ctx context.Context, path, sysfs string, opt ClassOptions) (*ClassResult, error) {
	opt.defaults()
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EBUSY) {
		return nil, fmt.Errorf("open %s exclusively for writing: it is mounted or in use; unmount it first: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s for direct I/O: %w", path, err)
	}
	defer f.Close()
	size, err := blockdev.SizeBytes(f)
	if err != nil {
		return nil, err
	}
	if size < opt.Area {
		return nil, fmt.Errorf("%s holds %s, less than the class test's %s area", path, bytesize.Format(size), bytesize.Format(opt.Area))
	}
	r := &ClassResult{Schema: ClassSchema, Device: path, Start: time.Now().UTC(), AreaBytes: opt.Area,
		PrefillBlock: opt.PrefillBlock, SeqBlock: opt.SeqBlock, SeqDepth: opt.SeqDepth, RandBlock: 4096, RuntimeNs: int64(opt.Runtime)}
	if st, err := f.Stat(); err == nil && st.Mode()&os.ModeDevice != 0 {
		q, err := blockdev.ReadHostQueue(sysfs, filepath.Base(path))
		if err == nil {
			r.Host = &q
		}
	}
	fd := int(f.Fd())
	seq := func(what string, block uint64) (iodepth.Result, error) {
		opt.Log("class: %s: %s in %s requests, %d in flight", what, bytesize.Format(opt.Area), bytesize.Format(block), opt.SeqDepth)
		return timedWrite(ctx, f, iodepth.Job{Write: true, Block: block, Size: opt.Area, Depth: opt.SeqDepth, Seed: opt.Seed})
	}
	if _, err := seq("prefill", opt.PrefillBlock); err != nil {
		return r, fmt.Errorf("prefill: %w", err)
	}
	sw, err := seq("sequential write", opt.SeqBlock)
	if err != nil {
		return r, fmt.Errorf("sequential write: %w", err)
	}
	r.SeqWriteMBps = sw.MBps()
	for _, write := range []bool{true, false} {
		for _, depth := range opt.Depths {
			opt.Log("class: random 4 KiB %ss at queue depth %d for %v", op(write), depth, opt.Runtime)
			j := iodepth.Job{Write: write, Random: true, Block: 4096, Size: opt.Area, Depth: depth, Runtime: opt.Runtime, Seed: opt.Seed + uint64(depth)}
			var res iodepth.Result
			if write {
				res, err = timedWrite(ctx, f, j)
			} else {
				res, err = iodepth.Run(ctx, fd, j)
			}
			if err != nil {
				return r, fmt.Errorf("random %ss at depth %d: %w", op(write), depth, err)
			}
			r.Random = append(r.Random, ClassPoint{Write: write, Depth: depth, IOPS: res.IOPS(), Result: res})
		}
	}
	r.Verdicts = ClassVerdicts(r.SeqWriteMBps, r.Random)
	return r, nil
}

func op(write bool) string {
	if write {
		return "write"
	}
	return "read"
}

// timedWrite runs a write job and then flushes the device's cache, the flush's time counted in
// the job's, as fio's end_fsync=1 is in its bandwidth: a card that acknowledges writes into a
// volatile cache must not look faster than it writes.
func timedWrite(ctx context.Context, f *os.File, j iodepth.Job) (iodepth.Result, error) {
	res, err := iodepth.Run(ctx, int(f.Fd()), j)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("flush: %w", err)
	}
	res.Elapsed += time.Since(t0)
	return res, nil
}

// ClassVerdicts says, for each class (catalog.AppClasses) and each depth measured, whether the
// figures meet the class's minimums: the sequential write, and the random writes and reads at
// that depth.
func ClassVerdicts(seqMBps float64, pts []ClassPoint) []ClassVerdict {
	var depths []int
	iops := map[bool]map[int]float64{true: {}, false: {}}
	for _, p := range pts {
		if !slices.Contains(depths, p.Depth) {
			depths = append(depths, p.Depth)
		}
		iops[p.Write][p.Depth] = p.IOPS
	}
	var out []ClassVerdict
	for _, c := range catalog.AppClasses {
		for _, d := range depths {
			w, okw := iops[true][d]
			rd, okr := iops[false][d]
			if !okw || !okr {
				continue
			}
			checks := []struct {
				what    string
				v, need float64
				unit    string
			}{
				{"sequential write", seqMBps, c.SeqMBps, "MB/s"},
				{"random write", w, c.WriteIOPS, "IOPS"},
				{"random read", rd, c.ReadIOPS, "IOPS"},
			}
			pass := true
			var why []string
			for _, ch := range checks {
				cmp := ">="
				if ch.v < ch.need {
					pass, cmp = false, "<"
				}
				why = append(why, fmt.Sprintf("%s %s %s %s %g", ch.what, figure.Format(ch.v), ch.unit, cmp, ch.need))
			}
			out = append(out, ClassVerdict{Class: c.Name, Depth: d, Pass: pass, Why: strings.Join(why, ", ")})
		}
	}
	return out
}

// WriteClassSummary prints the conditions, the host's queue, the figures and the verdicts.
func WriteClassSummary(w io.Writer, r *ClassResult) error {
	fmt.Fprintf(w, "application class of %s\n", r.Device)
	fmt.Fprintf(w, "conditions: a %s area at the start of the device, written first in %s requests; its sequential\n"+
		"write in %s requests (%d in flight, flush timed); random %s writes then reads in it, %v each, O_DIRECT\n",
		bytesize.Format(r.AreaBytes), bytesize.Format(r.PrefillBlock), bytesize.Format(r.SeqBlock), r.SeqDepth,
		bytesize.Format(r.RandBlock), time.Duration(r.RuntimeNs))
	if h := r.Host; h != nil {
		fmt.Fprintf(w, "host queue: scheduler %s, %d requests queued, %d hardware queue(s) of %d tags, write cache %q",
			orDash(h.Scheduler), h.NrRequests, h.HWQueues, h.Tags, h.WriteCache)
		if h.DeviceQueueDepth > 0 {
			fmt.Fprintf(w, ", device queue depth %d", h.DeviceQueueDepth)
		}
		if h.Type != "" {
			fmt.Fprintf(w, ", %s card", h.Type)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "host queue: an image file, no block device queue")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\ttest\tdepth\tfigure\tp50 ms\tp99 ms\t\n")
	fmt.Fprintf(tw, "\tsequential write\t%d\t%s MB/s\t\t\t\n", r.SeqDepth, figure.Format(r.SeqWriteMBps))
	for _, p := range r.Random {
		fmt.Fprintf(tw, "\trandom 4 KiB %s\t%d\t%s IOPS\t%s\t%s\t\n", op(p.Write), p.Depth, figure.Format(p.IOPS),
			figure.Format(p.Result.P50.Seconds()*1e3), figure.Format(p.Result.P99.Seconds()*1e3))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	gain := func(write bool) (float64, bool) {
		var one, top float64
		var topDepth int
		for _, p := range r.Random {
			if p.Write != write {
				continue
			}
			if p.Depth == 1 {
				one = p.IOPS
			}
			if p.Depth > topDepth {
				top, topDepth = p.IOPS, p.Depth
			}
		}
		return top / one, one > 0 && topDepth > 1
	}
	if gw, ok := gain(true); ok {
		gr, _ := gain(false)
		fmt.Fprintf(w, "queue gain (deepest ÷ depth 1): writes ×%s, reads ×%s\n", figure.Format(gw), figure.Format(gr))
	}
	for _, v := range r.Verdicts {
		verdict := "FAIL"
		if v.Pass {
			verdict = "pass"
		}
		fmt.Fprintf(w, "%s at queue depth %d: %s (%s)\n", v.Class, v.Depth, verdict, v.Why)
	}
	fmt.Fprintln(w, "A1 asks it of the card alone (an A1 card takes one command at a time); A2 of the card with its command")
	fmt.Fprintln(w, "queue and cache in use (SD 6.0), which the host must turn on: see its deepest verdict, and the host's queue above.")
	return nil
}

// WriteClassFile writes class.json into dir, atomically, and returns its path.
func WriteClassFile(dir string, r *ClassResult) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results directory: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, ClassFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}
