package probe

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fsbench/fsbench/internal/measure"
)

// Budgets of the sweeps: enough requests for a stable figure, few enough that a slow card
// (3 MB/s) finishes in well under a minute.
const (
	readSweepBytes   = 4 << 20 // read about this much per block size ...
	readSweepMaxReqs = 64      // ... in at most this many requests ...
	sweepTimeCap     = time.Second
	writeSweepBytes  = 256 << 10
	writeSweepMax    = 1 << 20 // largest block of the write sweeps
	openAUChunks     = 16      // chunks written per AU in the open-AU test
	fatWrites        = 12      // random writes per AU in the FAT-area test
	// fatNoiseRatio: a first AU faster than the middle by this much or more is not "no
	// faster area" with confidence. Two runs of the same AU differ by up to ~10 % on a
	// quiet host; above that the difference is the card's.
	fatNoiseRatio = 1.15
	fatChunk      = 4 << 10
	defaultAU     = 4 << 20 // when the alignment test found none: the commonest AU
	// nearFull is the fraction of the best throughput that counts as "full speed" in the
	// gapped sweep. Below the page a gapped write programs a whole page for at most half a
	// page of data, so it stays under about 50 %; at the page size it reaches 80-95 %, less the
	// fixed cost per request (command, host), which weighs most on small pages of slow cards
	// (about 80 % for 4 KiB pages on the 4 KiB-page card sd-cheap-old was before its calibration).
	// 65 % lies between the two.
	nearFull = 0.65
	// collapse is the fraction of the one-AU throughput under which the open-AU test says
	// the card ran out of open AUs.
	collapse = 0.5
)

// sizes returns the powers of two from lo to hi.
func sizes(lo, hi uint64) []uint64 {
	var out []uint64
	for s := lo; s <= hi; s *= 2 {
		out = append(out, s)
	}
	return out
}

// readSweep reads sequentially from the start of the device at each block size.
func readSweep(ctx context.Context, dev Device, buf []byte, opts Options) ([]SweepPoint, error) {
	var out []SweepPoint
	for _, s := range sizes(dev.BlockSize(), min(opts.MaxReadBlock, dev.Size(), uint64(len(buf)))) {
		count := int(max(1, min(readSweepMaxReqs, readSweepBytes/s)))
		var lat []time.Duration
		var total time.Duration
		for i := 0; i < count; i++ {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			off := uint64(i) * s
			if off+s > dev.Size() {
				break
			}
			d, err := dev.ReadAt(buf[:s], off)
			if err != nil {
				return out, err
			}
			lat = append(lat, d)
			total += d
			if total > sweepTimeCap {
				break
			}
		}
		p := point(s, lat)
		opts.Log("  read %-8s %3d × %8.2f ms  %7.2f MB/s", formatSize(s), p.Count, float64(p.MedianNs)/1e6, p.MBps)
		out = append(out, p)
	}
	return out, nil
}

func point(s uint64, lat []time.Duration) SweepPoint {
	p := SweepPoint{BlockSize: s, Count: len(lat)}
	fl := make([]float64, len(lat))
	for i, d := range lat {
		p.TotalNs += int64(d)
		fl[i] = float64(d)
	}
	p.MedianNs = int64(median(fl))
	if p.TotalNs > 0 {
		p.MBps = float64(s) * float64(len(lat)) / (float64(p.TotalNs) / 1e9) / 1e6
	}
	return p
}

// writeTests runs the destructive tests in the middle of the device, away from the FAT area.
func writeTests(ctx context.Context, dev Device, buf []byte, opts Options, r *Result) error {
	au := r.Estimates.AU.Value
	if au == 0 {
		au = defaultAU
		r.Warnings = append(r.Warnings, fmt.Sprintf("the alignment test found no AU: the write tests assume %s", formatSize(au)))
	}
	// The tests use the second half of the device: MaxOpenAUs+2 AUs from its middle. A small
	// device (or a huge AU) gets fewer AUs in the open-AU test rather than no test.
	base := alignDown(dev.Size()/2, au)
	room := (dev.Size() - base) / au
	if room < 3 || (dev.Size()-base) < 4*writeSweepMax {
		r.Warnings = append(r.Warnings, fmt.Sprintf("write tests skipped: they need at least 3 AUs of %s and 4 MiB in the second half of the device, which has %s", formatSize(au), formatSize(dev.Size())))
		return nil
	}
	if room < uint64(opts.MaxOpenAUs+2) {
		opts.MaxOpenAUs = int(room) - 2
		r.Warnings = append(r.Warnings, fmt.Sprintf("the open-AU test goes up to %d AUs only: the second half of the device holds %d AUs of %s", opts.MaxOpenAUs, room, formatSize(au)))
	}
	discard := func(off, n uint64) {
		err := dev.Discard(off, n)
		switch {
		case err == nil:
			r.DiscardWorks = "yes"
		case r.DiscardWorks == "":
			r.DiscardWorks = "no: " + err.Error()
		}
	}
	var err error
	opts.Log("write sweep (sequential, then gapped)")
	if r.WriteSweep, err = writeSweep(ctx, dev, buf, base, 1, discard, opts); err != nil {
		return fmt.Errorf("write sweep: %w", err)
	}
	if r.GappedSweep, err = writeSweep(ctx, dev, buf, base, 2, discard, opts); err != nil {
		return fmt.Errorf("gapped write sweep: %w", err)
	}
	r.Estimates.Page = analyzePage(r.GappedSweep)

	// Chunks of a sixteenth of the AU (256 KiB on a 4 MiB AU, as in the flashbench README's
	// -O example), not pages: a card with a random-write log takes page-sized writes that do
	// not continue an open AU into the log, and shows no open-AU limit with them (the
	// sd-typical model took 16 KiB chunks at full speed with 8 AUs in turn, 6 being open).
	chunk := max(au/openAUChunks, dev.BlockSize())
	opts.Log("open-AU test: %s chunks, %d per AU", formatSize(chunk), openAUChunks)
	if r.OpenAU, err = openAUTest(ctx, dev, buf, base, au, chunk, discard, opts); err != nil {
		return fmt.Errorf("open-AU test: %w", err)
	}
	r.Estimates.OpenAUs = AnalyzeOpenAU(r.OpenAU, opts.MaxOpenAUs)

	opts.Log("FAT-area test")
	var watch *measure.Watch
	if opts.Sentinel != nil {
		watch = opts.Sentinel.Start()
	}
	if r.FATArea, err = fatTest(ctx, dev, buf, base, au, opts); err != nil {
		return fmt.Errorf("FAT-area test: %w", err)
	}
	r.Estimates.FATArea = analyzeFAT(r.FATArea, au)
	if watch != nil {
		busyFAT(&r.Estimates.FATArea, watch.Stop())
	}
	return nil
}

func alignDown(x, a uint64) uint64 { return x / a * a }

// writeSweep writes at each block size s from the logical block size to 1 MiB, starting at
// base: stride 1 writes sequentially, stride 2 writes a block and skips one ("gapped"). The
// area is discarded before each size so that each starts from erased flash, and the first
// write of each size is not counted: it pays for whatever the previous size left open.
func writeSweep(ctx context.Context, dev Device, buf []byte, base uint64, stride uint64, discard func(off, n uint64), opts Options) ([]SweepPoint, error) {
	var out []SweepPoint
	for _, s := range sizes(dev.BlockSize(), writeSweepMax) {
		count := int(max(8, min(64, writeSweepBytes/s)))
		discard(base, alignUp(uint64(count+1)*s*stride, 1<<20))
		var lat []time.Duration
		var total time.Duration
		for i := 0; i <= count; i++ {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			d, err := dev.WriteAt(buf[:s], base+uint64(i)*s*stride)
			if err != nil {
				return out, err
			}
			if i > 0 {
				lat = append(lat, d)
				total += d
			}
			if total > 4*sweepTimeCap {
				break
			}
		}
		p := point(s, lat)
		what := "write"
		if stride > 1 {
			what = "gapped"
		}
		opts.Log("  %s %-8s %3d × %8.2f ms  %7.2f MB/s", what, formatSize(s), p.Count, float64(p.MedianNs)/1e6, p.MBps)
		out = append(out, p)
	}
	return out, nil
}

func alignUp(x, a uint64) uint64 { return (x + a - 1) / a * a }

// analyzePage finds the page size in the gapped sweep: the smallest block size reaching
// nearFull of the best throughput. Writing a block and skipping one, every block smaller
// than a page makes the card program (and, on most cards, read-modify-write) a whole page
// for half a page of data, so throughput is at most half of full speed below the page size
// and near full speed from it on. (Written sequentially instead, small blocks are merged
// into pages by many cards and the step is smeared: that sweep is recorded, not used.)
func analyzePage(pts []SweepPoint) Estimate {
	e := Estimate{Confidence: None, Method: "gapped write sweep: smallest block (written one, skipped one) reaching 65 % of the best throughput (from the median write)"}
	if len(pts) < 2 {
		e.Evidence = "too few block sizes"
		return e
	}
	// Throughput from the median write, not the mean: a host that stalls now and then (a
	// busy machine) lengthens a few writes of some sizes, which moved the mean enough to put
	// the page of a 4 KiB-page card at 64 KiB; the page's cost is in every write.
	pts = slices.Clone(pts)
	for i, p := range pts {
		if p.MedianNs > 0 {
			pts[i].MBps = float64(p.BlockSize) / float64(p.MedianNs) * 1e3
		}
	}
	best := slices.MaxFunc(pts, func(a, b SweepPoint) int { return cmp.Compare(a.MBps, b.MBps) }).MBps
	for i, p := range pts {
		if p.MBps < nearFull*best {
			continue
		}
		e.Value = p.BlockSize
		if i == 0 {
			e.Confidence = Low
			e.Evidence = fmt.Sprintf("already the smallest block (%s) writes at %.2f MB/s, %.0f %% of the best %.2f MB/s: the page is that size or smaller",
				formatSize(p.BlockSize), p.MBps, 100*p.MBps/best, best)
			return e
		}
		prev := pts[i-1]
		ratio := p.MBps / max(prev.MBps, 1e-9)
		e.Confidence = Medium
		if ratio >= 1.6 {
			e.Confidence = High
		}
		e.Evidence = fmt.Sprintf("%.2f MB/s at %s (%.0f %% of the best %.2f MB/s), %.2f MB/s at %s",
			p.MBps, formatSize(p.BlockSize), 100*p.MBps/best, best, prev.MBps, formatSize(prev.BlockSize))
		return e
	}
	return e
}

// OpenAUPoint is one round of the open-AU test: N AUs written in turn.
type OpenAUPoint struct {
	AUs   int     `json:"aus"`
	Chunk uint64  `json:"chunk"`
	Count int     `json:"count"` // writes timed (the first pass, which opens the AUs, is not)
	MBps  float64 `json:"mb_per_s"`
}

// openAUTest writes, for N = 1, 2, ... MaxOpenAUs, chunk k of AU 0, chunk k of AU 1, ...
// chunk k of AU N−1, then chunk k+1 of each, as flashbench -O does. While the card can keep
// N AUs open, each write appends to an open AU; beyond that, each write closes another AU
// (copying its data: garbage collection) and opens this one again, and throughput collapses.
// The AUs are discarded before each round so that rounds do not inherit each other's state.
func openAUTest(ctx context.Context, dev Device, buf []byte, base, au, chunk uint64, discard func(off, n uint64), opts Options) ([]OpenAUPoint, error) {
	var out []OpenAUPoint
	var first float64
	for n := 1; n <= opts.MaxOpenAUs; n++ {
		discard(base, uint64(n)*au)
		var total time.Duration
		var count int
		for k := uint64(0); k < openAUChunks; k++ {
			for i := 0; i < n; i++ {
				if err := ctx.Err(); err != nil {
					return out, err
				}
				d, err := dev.WriteAt(buf[:chunk], base+uint64(i)*au+k*chunk)
				if err != nil {
					return out, err
				}
				if k > 0 {
					total += d
					count++
				}
			}
		}
		p := OpenAUPoint{AUs: n, Chunk: chunk, Count: count}
		if total > 0 {
			p.MBps = float64(chunk) * float64(count) / total.Seconds() / 1e6
		}
		opts.Log("  %d AUs in turn: %7.2f MB/s", n, p.MBps)
		out = append(out, p)
		if n == 1 {
			first = p.MBps
		} else if p.MBps < collapse*first {
			break // found it; more AUs only take longer
		}
	}
	return out, nil
}

// AnalyzeOpenAU estimates the open-AU count from the open-AU test's rounds (maxN: the most
// AUs the test could write in turn): the last N before throughput falls under half of the
// one-AU figure. The calibration benchmark applies it to the card's own times of the rounds.
func AnalyzeOpenAU(pts []OpenAUPoint, maxN int) Estimate {
	e := Estimate{Confidence: None, Method: "open-AU test (flashbench -O): AUs written in turn until throughput falls below half of one AU's"}
	if len(pts) == 0 || pts[0].MBps == 0 {
		e.Evidence = "no data"
		return e
	}
	one := pts[0].MBps
	for i, p := range pts[1:] {
		if p.MBps < collapse*one {
			e.Value = uint64(pts[i].AUs)
			ratio := one / max(p.MBps, 1e-9)
			e.Confidence = Medium
			if ratio >= 3 {
				e.Confidence = High
			}
			e.Evidence = fmt.Sprintf("%.2f MB/s with 1 AU", one)
			if i > 0 {
				e.Evidence += fmt.Sprintf(", %.2f MB/s with %d", pts[i].MBps, pts[i].AUs)
			}
			e.Evidence += fmt.Sprintf(", %.2f MB/s with %d (%.1f× slower)", p.MBps, p.AUs, ratio)
			return e
		}
	}
	e.Value = uint64(pts[len(pts)-1].AUs)
	e.AtLeast = true
	e.Confidence = Low
	e.Evidence = fmt.Sprintf("no collapse up to %d AUs (%.2f MB/s with 1, %.2f MB/s with %d): the card keeps at least that many open, or maps pages rather than AUs (eMMC, A1/A2 cards)",
		maxN, one, pts[len(pts)-1].MBps, pts[len(pts)-1].AUs)
	return e
}

// FATPoint is one AU of the FAT-area test.
type FATPoint struct {
	Offset uint64  `json:"offset"`
	Count  int     `json:"count"`
	MBps   float64 `json:"mb_per_s"`
}

// fatTest writes 4 KiB blocks at random 4 KiB-aligned places inside each of the first four
// AUs and inside a reference AU in the middle. Cards formatted with FAT keep the first AUs
// (where the FAT and directories live) page-mapped so that its small scattered updates are
// cheap; elsewhere each such write forces an AU merge.
func fatTest(ctx context.Context, dev Device, buf []byte, base, au uint64, opts Options) ([]FATPoint, error) {
	chunk := max(uint64(fatChunk), dev.BlockSize())
	if au < 2*chunk {
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(1, 2)) // deterministic: the same positions on every run
	var out []FATPoint
	offs := []uint64{0, au, 2 * au, 3 * au, base + uint64(opts.MaxOpenAUs+1)*au}
	for _, off := range offs {
		if off+au > dev.Size() {
			continue
		}
		var total time.Duration
		for i := 0; i < fatWrites; i++ {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			pos := off + rng.Uint64N(au/chunk)*chunk
			d, err := dev.WriteAt(buf[:chunk], pos)
			if err != nil {
				return out, err
			}
			total += d
		}
		p := FATPoint{Offset: off, Count: fatWrites, MBps: float64(chunk) * fatWrites / total.Seconds() / 1e6}
		opts.Log("  AU at %-8s %7.3f MB/s", formatSize(off), p.MBps)
		out = append(out, p)
	}
	return out, nil
}

// busyFAT lowers a "no FAT area" found while the machine was busy to low confidence: the
// test compares the mean rate of random writes in the first AU with the middle's, and on a busy
// host the host's share of every write swamps the card's (at load 10 a simulated card's
// 8 MiB page-mapped area, 20 times faster than its middle, measured 0.35 against 0.47 MB/s).
// A FAT area found is kept: noise slows writes, it does not make the first AUs three times
// faster than the middle.
func busyFAT(e *Estimate, n measure.Noise) {
	if !n.Busy || e.Value != 0 || e.Confidence == None {
		return
	}
	e.Confidence = Low
	e.Evidence += "; the machine was busy with other work during the test (" + n.Why + "): no faster area cannot be concluded"
}

// analyzeFAT: the fast area is the run of leading AUs at least 3 times faster than the
// reference AU (the last point).
func analyzeFAT(pts []FATPoint, au uint64) Estimate {
	e := Estimate{Confidence: None, Method: "FAT-area test (flashbench -f): random 4 KiB writes in the first AUs vs one in the middle"}
	if len(pts) < 2 {
		e.Evidence = "AU too small or device too small for the test"
		return e
	}
	// The mean rate, not the median write's: on an AU-mapped card most random writes into
	// an AU are cheap and every few force a merge, and the merges are the cost that tells a
	// FAT area from the rest.
	ref := pts[len(pts)-1]
	lead := 0
	for _, p := range pts[:len(pts)-1] {
		if p.MBps < 3*ref.MBps {
			break
		}
		lead++
	}
	e.Value = uint64(lead) * au
	e.AtLeast = lead == len(pts)-1
	e.Confidence = High
	if lead == 0 {
		e.Evidence = fmt.Sprintf("first AU %.3f MB/s, middle %.3f MB/s: no faster area at the start", pts[0].MBps, ref.MBps)
		if r := pts[0].MBps / ref.MBps; r >= fatNoiseRatio {
			// Faster, but not by the factor a FAT area gives: host overhead on every write
			// compresses the ratio (a 20× faster area measured 2.6× at load 12), and a card
			// with a random-write log takes the middle's few writes into the log without a
			// merge (sd-cheap-old: 1.6× without noise, 1.29× under CI's host overhead), so
			// this cannot rule one out.
			e.Confidence = Low
			e.Evidence += fmt.Sprintf(" (the first AU is %.1f× faster: not the 3× of a FAT area, but not nothing either)", r)
		}
		return e
	}
	e.Evidence = fmt.Sprintf("the first %d AU(s) take random 4 KiB writes at %.3f–%.3f MB/s, the middle of the device at %.3f MB/s", lead,
		slices.MinFunc(pts[:lead], func(a, b FATPoint) int { return cmp.Compare(a.MBps, b.MBps) }).MBps,
		slices.MaxFunc(pts[:lead], func(a, b FATPoint) int { return cmp.Compare(a.MBps, b.MBps) }).MBps, ref.MBps)
	if lead < len(pts)-1 {
		e.Evidence += fmt.Sprintf(", AU %d at %.3f MB/s", lead, pts[lead].MBps)
	}
	return e
}
