package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/aging"
	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/dataset"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/mountinfo"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/simcard"
	"github.com/fsbench/fsbench/internal/suites/suitekit"
	"github.com/fsbench/fsbench/internal/trace"
)

// The tests of a filesystem on a block device: making it (mkfs, or an image written to the
// device), mounting it cold, and the bootlin suite's copies, reads and removals, each timed
// with the device's counters, its block trace and the simulated card's counters.

// timed runs fn inside a measurement span and fills the figures of a seconds-valued test.
func (r *rep) timed(test string, logical uint64, fn func() error) (results.Measurement, error) {
	// Nesting, outermost first: the noise sentinel, the block trace, the simulated card's
	// counters, the span. The capture starts before the span and stops after it, so that setting
	// up the trace instance is not in the measured time; the card's window lies inside the
	// trace's, so that the trace contains every request the card counted.
	watch := r.watch()
	var capt *trace.Capture
	var traceErr error
	tracing := r.env.Tracing != nil && !r.noTrace
	if tracing {
		capt, traceErr = trace.Start(r.env.DeviceName)
	}
	stopTrace := func() (*trace.Trace, error) {
		if capt == nil {
			return nil, traceErr
		}
		c := capt
		capt = nil
		return c.Stop()
	}
	defer stopTrace() // on the error paths
	var card0 simcard.Stats
	if r.env.Card != nil {
		var err error
		if card0, err = r.env.Card(); err != nil {
			return results.Measurement{}, fmt.Errorf("reading the simulated card's counters: %w", err)
		}
	}
	span, err := r.meter.Start()
	if err != nil {
		return results.Measurement{}, err
	}
	if err := fn(); err != nil {
		return results.Measurement{}, err
	}
	smp, err := span.Stop()
	if err != nil {
		return results.Measurement{}, err
	}
	var flashIO *results.FlashIO
	if r.env.Card != nil {
		card1, err := r.env.Card()
		if err != nil {
			return results.Measurement{}, fmt.Errorf("reading the simulated card's counters: %w", err)
		}
		flashIO = results.FromFlash(card1.Counters.Sub(card0.Counters))
		st := card1.ServerTime.Sub(card0.ServerTime)
		flashIO.Server = &results.CardServer{Requests: st.Count, P50Ns: st.P50Ns, P99Ns: st.P99Ns,
			LateRequests: card1.LateRequests - card0.LateRequests, LateNs: card1.LateNs - card0.LateNs}
	}
	var traceInfo *results.TraceInfo
	if tracing {
		t, err := stopTrace()
		if t != nil {
			t.Shift(r.env.PartitionStart)
		}
		traceInfo = r.traceInfo(test, t, err)
	}
	wall := smp.Wall.Seconds()
	m := results.Measurement{
		Test: test, Status: results.OK, Value: results.Float(wall), Unit: "s",
		WallSeconds: wall, UserSeconds: smp.User.Seconds(), SysSeconds: smp.Sys.Seconds(),
		Device: results.FromStat(smp.Dev), LogicalBytes: logical, Flash: flashIO, Trace: traceInfo,
		Noise: watch.stop(),
	}
	if logical > 0 && wall > 0 {
		m.MBps = float64(logical) / 1e6 / wall
	}
	return m, nil
}

// noiseWatch is the sentinel's view of one span; nil when the run has no sentinel.
type noiseWatch struct{ w *measure.Watch }

// watch starts watching the machine for interference with the span about to start.
func (r *rep) watch() noiseWatch {
	if r.env.Sentinel == nil {
		return noiseWatch{}
	}
	return noiseWatch{r.env.Sentinel.Start()}
}

// stop returns what else the machine did since watch, in results' form.
func (w noiseWatch) stop() *results.Noise {
	if w.w == nil {
		return nil
	}
	n := w.w.Stop()
	return &results.Noise{StealPct: round2(n.StealPct), OtherCPUPct: round2(n.OtherCPUPct), OwnCPUPct: round2(n.OwnCPUPct),
		CPUPressurePct: round2(n.CPUPressurePct), IOPressurePct: round2(n.IOPressurePct), MemPressurePct: round2(n.MemPressurePct),
		OwnCPUPressurePct: round2(n.OwnCPUPressurePct), OwnIOPressurePct: round2(n.OwnIOPressurePct), OwnMemPressurePct: round2(n.OwnMemPressurePct),
		OtherIOBytes: n.OtherIOBytes, OwnIOBytes: n.OwnIOBytes, Busy: n.Busy, Why: n.Why}
}

// round2 keeps two decimals: more would be noise about the noise.
func round2(v float64) float64 { return math.Round(v*100) / 100 }

// traceInfo summarises a test's trace, keeps its file when asked, and replays it through every
// profile's model. A trace that failed is recorded as such; the test itself stands.
func (r *rep) traceInfo(test string, t *trace.Trace, err error) *results.TraceInfo {
	tr := r.env.Tracing
	if t == nil {
		return &results.TraceInfo{Error: fmt.Sprint(err)}
	}
	info := &results.TraceInfo{Summary: results.FromTraceSummary(trace.Summarize(t, uint64(tr.Align.PageSize), uint64(tr.Align.AUSize)))}
	if err != nil {
		info.Error = err.Error()
	}
	if tr.KeepDir != "" {
		name := fmt.Sprintf("%s.rep%d.%s.fsbtrace", strings.ReplaceAll(r.v.Name, "/", "_"), r.n, test)
		path := filepath.Join(tr.KeepDir, name)
		if werr := writeTrace(path, t); werr != nil {
			info.Error = werr.Error()
		} else if tr.Rel != nil {
			info.File = tr.Rel(path)
		}
	}
	info.Replay = map[string]results.Replay{}
	day := r.dayOfWrites(test, t)
	// The card rests between tests as long as the host left it (a card with an SLC cache folds
	// it then); within a test it rests not at all, so that a test's card time depends on its
	// requests alone, not on how fast this host sent them.
	rest := time.Duration(0)
	if !r.traceEnd.IsZero() && t.Start.After(r.traceEnd) {
		rest = t.Start.Sub(r.traceEnd)
	}
	if n := len(t.Requests); n > 0 {
		last := t.Requests[n-1]
		r.traceEnd = t.Start.Add(last.Issue + last.Latency)
	}
	for _, p := range tr.Profiles {
		m := r.models[p.Name]
		m.Idle(rest)
		before := m.Counters()
		var rerr error
		for q := range trace.FlashRequests(t) {
			if _, rerr = m.Do(q); rerr != nil {
				break
			}
		}
		if rerr != nil {
			info.Error = fmt.Sprintf("replay through %s: %v", p.Name, rerr)
			continue
		}
		d := m.Counters().Sub(before)
		rp := results.Replay{Flash: results.FromFlash(d)}
		if day != nil {
			// +Inf (the card outlives the estimate's bound) is not a JSON number.
			y, lerr := flash.DayLifetime(p, tr.Size/uint64(p.AUSize)*uint64(p.AUSize), day,
				flash.Before{Used: r.env.CardState == plan.CardUsed, Past: r.past})
			switch {
			case lerr != nil:
				info.Error = fmt.Sprintf("lifetime on %s: %v", p.Name, lerr)
			case !math.IsInf(y, 0):
				rp.DayLifetimeYears = y
			}
		}
		info.Replay[p.Name] = rp
	}
	return info
}

// dayOfWrites adds a write test's (or a day's, catalog.Day) requests (its writes, discards and flushes: reads wear
// nothing) to the repetition's day, the write tests one after the other, and returns the day
// so far; nil for a test that is not a write test, or a day that wrote nothing.
func (r *rep) dayOfWrites(test string, t *trace.Trace) []flash.Request {
	if test == catalog.Mkfs || test == catalog.Mount {
		r.addPast(t)
		return nil
	}
	if !slices.Contains(catalog.WriteTests, test) && test != catalog.Day {
		return nil
	}
	for q := range trace.FlashRequests(t) {
		if q.Op != flash.OpRead {
			r.day = append(r.day, q)
		}
	}
	for _, q := range r.day {
		if q.Op == flash.OpWrite {
			return r.day
		}
	}
	return nil
}

// addPast adds the requests of t (the filesystem's mkfs, its first mount) to the card's past:
// what the card holds before the first day, from which the day's lifetime starts
// (flash.Before.Past).
func (r *rep) addPast(t *trace.Trace) {
	for q := range trace.FlashRequests(t) {
		if q.Op != flash.OpRead {
			r.past = append(r.past, q)
		}
	}
}

func writeTrace(path string, t *trace.Trace) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := t.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func (r *rep) mkfs(ctx context.Context) ([]results.Measurement, error) {
	args := r.v.MkfsArgs
	if r.env.CardState == plan.CardUsed {
		if err := r.fillDevice(ctx); err != nil {
			return nil, err
		}
		args = fs.NoDiscardArgs(r.k, args)
	} else if err := r.discardDevice(ctx); err != nil {
		return nil, err
	}
	if r.k.ReadOnly {
		return r.buildImage(ctx)
	}
	// The device check before it, not in its time.
	tctx, err := fs.Verified(ctx, r.env.Device)
	if err != nil {
		return nil, err
	}
	m, err := r.timed(catalog.Mkfs, 0, func() error {
		return fs.Mkfs(tctx, r.env.Run, r.k, r.env.Device, args)
	})
	return []results.Measurement{m}, err
}

// discardDevice empties the whole device before mkfs so that every variant starts from the
// same state: on a loop device this punches holes in the image, on a card it tells the FTL
// that every block is free. Not measured: it is preparation, not the filesystem's work.
func (r *rep) discardDevice(ctx context.Context) error {
	f, err := openExclusive(ctx, r.env.Device)
	if err != nil {
		return fmt.Errorf("opening %s to discard it: %w", r.env.Device, err)
	}
	defer f.Close()
	// A write error the previous filesystem left on the device and nobody saw (a worn card's
	// refusals, written back after it was unmounted) is reported to the next opener's fsync
	// (errseq): seen here, where the device is emptied, it does not fail the next mkfs
	// (mkfs.btrfs said "Operation not permitted" on a fresh card after ext4 ended on the last).
	_ = f.Sync()
	size, err := blockdev.SizeBytes(f)
	if err != nil {
		return err
	}
	if err := blockdev.Discard(f, 0, size); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("discarding %s before mkfs: %w", r.env.Device, err)
	}
	return nil
}

// fillDevice puts the device in a used card's state before mkfs (--card-state used): every
// block written once with incompressible data, sequentially, and nothing discarded, so that
// the card's FTL holds every block as valid data, as on a card that has been in use, and has
// to copy or merge on the filesystem's writes as such a card does. A fresh card (the default)
// is discarded instead, which tells the FTL that every block is free. Every repetition fills
// the device again, so that every variant starts from the same used state. Not measured: it
// is preparation; its time goes to the log.
func (r *rep) fillDevice(ctx context.Context) error {
	f, err := openExclusive(ctx, r.env.Device)
	if err != nil {
		return fmt.Errorf("opening %s to fill it: %w", r.env.Device, err)
	}
	defer f.Close()
	size, err := blockdev.SizeBytes(f)
	if err != nil {
		return err
	}
	// O_DIRECT, set on the open descriptor: the data goes to the card, not through the page
	// cache (a board with 512 MiB would hold a 512 MiB card's worth of dirty pages).
	fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(f.Fd(), unix.F_SETFL, fl|unix.O_DIRECT)
	}
	if err != nil {
		return fmt.Errorf("filling %s: O_DIRECT: %w", r.env.Device, err)
	}
	const chunk = 1 << 20
	// An anonymous mapping is page-aligned, as O_DIRECT needs.
	buf, err := unix.Mmap(-1, 0, chunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return fmt.Errorf("filling %s: %w", r.env.Device, err)
	}
	defer unix.Munmap(buf)
	copy(buf, suitekit.PatternBuf(r.env.AgeSeed+uint64(r.n)))
	start := time.Now()
	for off := uint64(0); off < size; off += chunk {
		if off/chunk%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n := min(chunk, size-off)
		if _, err := f.WriteAt(buf[:n], int64(off)); err != nil {
			return fmt.Errorf("filling %s at %d: %w", r.env.Device, off, err)
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("filling %s: %w", r.env.Device, err)
	}
	if r.env.Log != nil {
		d := time.Since(start)
		r.env.Log("%s rep %d: card state used: wrote all %d MiB of %s before mkfs in %.1f s (%.1f MB/s), nothing discarded", r.v.Name, r.n, size>>20, r.env.Device, d.Seconds(), float64(size)/d.Seconds()/1e6)
	}
	return nil
}

func (r *rep) buildImage(ctx context.Context) ([]results.Measurement, error) {
	img := filepath.Join(r.env.WorkDir, r.k.Name+".img")
	defer os.Remove(img)
	m, err := r.timed(catalog.Mkfs, 0, func() error {
		return fs.BuildImage(ctx, r.env.Run, r.k, r.env.Source, img, r.v.MkfsArgs)
	})
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(img)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := writeImage(ctx, img, r.env.Device); err != nil {
		return nil, err
	}
	m.Note = "image build time"
	m.Extra = map[string]float64{"image_bytes": float64(fi.Size()), "image_write_s": time.Since(start).Seconds()}
	return []results.Measurement{m}, nil
}

// writeImage copies a built image onto the device and makes it durable.
func writeImage(ctx context.Context, img, dev string) error {
	if err := fs.VerifyDevice(ctx, dev); err != nil {
		return err
	}
	in, err := os.Open(img)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dev, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dev, err)
	}
	defer out.Close()
	if err := copyChunks(ctx, out, in); err != nil {
		return fmt.Errorf("writing the image to %s: %w", dev, err)
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("flushing %s: %w", dev, err)
	}
	return nil
}

func (r *rep) moduleLoad(ctx context.Context) ([]results.Measurement, error) {
	st := fs.LoadModule(ctx, r.env.Run, r.env.System, r.k)
	switch st.State {
	case "loaded":
		m := results.Measurement{Test: catalog.ModuleLoad, Status: results.OK, Value: results.Float(st.Duration.Seconds()), Unit: "s",
			WallSeconds: st.Duration.Seconds(), Note: "modprobe " + st.Module}
		if st.SizeBytes > 0 {
			m.Extra = map[string]float64{"module_bytes": float64(st.SizeBytes)}
		}
		return []results.Measurement{m}, nil
	case "unavailable":
		return nil, fmt.Errorf("loading module %s: %s", st.Module, st.Error)
	default:
		m := results.Measurement{Test: catalog.ModuleLoad, Status: results.NA, Note: st.State, Extra: map[string]float64{}}
		if st.SizeBytes > 0 {
			m.Extra["module_bytes"] = float64(st.SizeBytes)
		}
		if st.State == fs.ModuleAlreadyLoaded && r.env.ModulesAtStart != nil && !r.env.ModulesAtStart[strings.ReplaceAll(st.Module, "-", "_")] {
			// Not loaded when the run started: an earlier repetition loaded it and the kernel
			// kept it, so this repetition is no cold boot (its boot time is left out).
			m.Note, m.Extra["left_loaded"] = fs.ModuleLeftLoaded, 1
		}
		if len(m.Extra) == 0 {
			m.Extra = nil
		}
		return []results.Measurement{m}, nil
	}
}

// mount is the cold mount: everything written back and every cache dropped first, so the
// superblock, journal replay check and metadata reads all reach the device.
func (r *rep) mount(ctx context.Context) ([]results.Measurement, error) {
	if err := measure.DropCaches(); err != nil {
		return nil, err
	}
	before, err := measure.ReadMeminfo()
	if err != nil {
		return nil, err
	}
	tctx, err := fs.Verified(ctx, r.env.Device) // the device check before the mount, not in its time
	if err != nil {
		return nil, err
	}
	m, err := r.timed(catalog.Mount, 0, func() error {
		return fs.Mount(tctx, r.k, r.env.Device, r.env.Mountpoint, r.v.MountOptions)
	})
	if err != nil {
		return nil, err
	}
	r.mounted = true
	after, err := measure.ReadMeminfo()
	if err != nil {
		return nil, err
	}
	first := float64(after.KernelMemory()) - float64(before.KernelMemory())
	mem, err := r.mountMem(ctx, first)
	if err != nil {
		return nil, err
	}
	return []results.Measurement{m, mem}, nil
}

// mountMemCycles is how many more times mount_mem mounts the filesystem: the kernel frees and
// allocates memory of its own during any one mount (reclaim, RCU frees, the trace buffers of the
// timed mount), so that a single difference can be several MiB either way, even negative
// (-6.9 MiB was seen for ext2 on a busy machine).
const mountMemCycles = 3

// mountMem measures the kernel memory a mount takes as the median of mountMemCycles untimed
// cold mounts (caches dropped before each), with every sample and the timed mount's own
// difference kept in Extra. A median below zero is noise, not memory given back: the figure is
// then 0, and the note says so.
func (r *rep) mountMem(ctx context.Context, first float64) (results.Measurement, error) {
	var samples []float64
	for range mountMemCycles {
		if err := fs.Unmount(ctx, r.k, r.env.Mountpoint); err != nil {
			return results.Measurement{}, err
		}
		r.mounted = false
		if err := measure.DropCaches(); err != nil {
			return results.Measurement{}, err
		}
		before, err := measure.ReadMeminfo()
		if err != nil {
			return results.Measurement{}, err
		}
		if err := fs.Mount(ctx, r.k, r.env.Device, r.env.Mountpoint, r.v.MountOptions); err != nil {
			return results.Measurement{}, err
		}
		r.mounted = true
		after, err := measure.ReadMeminfo()
		if err != nil {
			return results.Measurement{}, err
		}
		samples = append(samples, float64(after.KernelMemory())-float64(before.KernelMemory()))
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	m := results.Measurement{Test: catalog.MountMem, Status: results.OK, Value: results.Float(max(median, 0)), Unit: "bytes",
		Extra: map[string]float64{"first_mount_bytes": first, "min_bytes": sorted[0], "max_bytes": sorted[len(sorted)-1]}}
	for i, v := range samples {
		m.Extra[fmt.Sprintf("sample%d_bytes", i+1)] = v
	}
	if median < 0 {
		m.Note = fmt.Sprintf("below the noise: the median of %d mounts was %s (the kernel freed memory elsewhere meanwhile)", len(samples), bytesize.Format(uint64(-median)))
	}
	return m, nil
}

// remount unmounts, drops caches and mounts again (not measured), so that the next read is cold.
func (r *rep) remount(ctx context.Context) error {
	if r.mounted {
		if err := fs.Unmount(ctx, r.k, r.env.Mountpoint); err != nil {
			return err
		}
		r.mounted = false
	}
	if err := measure.DropCaches(); err != nil {
		return err
	}
	if err := fs.Mount(ctx, r.k, r.env.Device, r.env.Mountpoint, r.v.MountOptions); err != nil {
		return err
	}
	r.mounted = true
	return nil
}

func (r *rep) copyName(i int) string {
	return filepath.Join(r.env.Mountpoint, fmt.Sprintf("copy-%d", i))
}

// copyOpts: every copy really reads and writes its data. Within xfs or btrfs,
// copy_file_range would make a reflink and read_remove_write would measure a clone (seen: 3 %
// of the bytes reached the device).
func (r *rep) copyOpts() dataset.CopyOptions {
	return dataset.CopyOptions{NoSymlinks: !r.k.Symlinks, NoModes: r.k.NoModes, ReadWrite: true}
}

// syncfs makes the filesystem's dirty data durable. It is inside the timed part of every
// write test: without it, a write test measures only how fast the page cache fills.
// fullHint explains an out-of-space failure on nilfs2, which is log-structured: the space of
// removed files comes back only when nilfs_cleanerd cleans their segments, never before its
// protection period (protection_period, 3600 s in Debian's /etc/nilfs_cleanerd.conf) and then
// a few segments per pass (nsegments_per_clean 2 every cleaning_interval 5 s). A test that
// removes and rewrites within seconds runs out of space on a device that would hold the data
// (measured in a guest at 512 MiB: read_remove_write failed with the default and with pp=0).
func fullHint(k fs.Kind, err error) string {
	if k.Name != "nilfs2" || !errors.Is(err, unix.ENOSPC) {
		return ""
	}
	return "nilfs2 frees removed files only when nilfs_cleanerd cleans their segments: not before its protection period (protection_period, 3600 s by default; mount option pp=) and then a few segments every few seconds, so the removed copies still took space"
}

// syncfs makes the dirty data of the mounted filesystem durable.
func (r *rep) syncfs() error { return suitekit.Syncfs(r.env.Mountpoint) }

func (r *rep) write(ctx context.Context) ([]results.Measurement, error) {
	logical := uint64(r.env.Copies) * r.env.Dataset.Bytes
	m, err := r.timed(catalog.Write, logical, func() error {
		for i := 1; i <= r.env.Copies; i++ {
			if _, err := dataset.CopyTree(ctx, r.env.Source, r.copyName(i), r.copyOpts()); err != nil {
				return fmt.Errorf("copy %d of the dataset: %w", i, err)
			}
		}
		return r.syncfs()
	})
	blockAmplification(&m)
	if err == nil && !r.k.Symlinks && r.env.Dataset.Symlinks > 0 {
		m.Note = fmt.Sprintf("%s has no symlinks: %d skipped per copy", r.k.Name, r.env.Dataset.Symlinks)
	}
	return []results.Measurement{m}, err
}

func (r *rep) usedSpace(ctx context.Context) ([]results.Measurement, error) {
	copies := r.env.Copies
	if r.k.ReadOnly {
		copies = 1
	}
	m, err := usedSpaceOf(r.env.Mountpoint, uint64(copies)*r.env.Dataset.Bytes)
	return []results.Measurement{m}, err
}

// usedSpaceOf is the used_space measurement of the filesystem mounted on dir, which holds
// logical bytes of files: statfs as df shows it, and the ratio to what was stored.
func usedSpaceOf(dir string, logical uint64) (results.Measurement, error) {
	u, err := fs.StatUsage(dir)
	if err != nil {
		return results.Measurement{}, err
	}
	m := results.Measurement{Test: catalog.UsedSpace, Status: results.OK, Value: results.Float(float64(u.UsedBytes)), Unit: "bytes",
		LogicalBytes: logical,
		Extra:        map[string]float64{"total_bytes": float64(u.TotalBytes), "avail_bytes": float64(u.AvailBytes)}}
	if logical > 0 {
		m.Extra["used_per_logical"] = float64(u.UsedBytes) / float64(logical)
	}
	return m, nil
}

func (r *rep) read(ctx context.Context) ([]results.Measurement, error) {
	return r.coldRead(ctx, catalog.Read)
}

// coldRead unmounts, drops caches and mounts (not timed), then reads every byte of every file
// in the filesystem and syncs (timed): the dataset copies for read, the video copies for
// video_read, since remove ran in between.
func (r *rep) coldRead(ctx context.Context, test string) ([]results.Measurement, error) {
	if err := r.remount(ctx); err != nil {
		return nil, err
	}
	var st dataset.ReadStats
	m, err := r.timed(test, 0, func() error {
		var err error
		if st, err = r.readTests(ctx); err != nil {
			return err
		}
		// What reading dirtied (atime updates) reaches the device inside the measurement, so
		// that a read's cost in writes (and wear) is seen, not deferred to a later test.
		return r.syncfs()
	})
	if err != nil {
		return nil, err
	}
	m.LogicalBytes = st.Bytes
	if m.WallSeconds > 0 {
		m.MBps = float64(st.Bytes) / 1e6 / m.WallSeconds
	}
	return []results.Measurement{m}, nil
}

func (r *rep) readRemoveWrite(ctx context.Context) ([]results.Measurement, error) {
	n := r.env.Copies
	logical := uint64(n) * r.env.Dataset.Bytes
	m, err := r.timed(catalog.ReadRemoveWrite, logical, func() error {
		for i := 1; i <= n; i++ {
			if err := os.RemoveAll(r.copyName(i)); err != nil {
				return fmt.Errorf("removing copy %d: %w", i, err)
			}
			if _, err := dataset.CopyTree(ctx, r.copyName(i+1), r.copyName(i+n), r.copyOpts()); err != nil {
				return fmt.Errorf("copying copy %d to copy %d: %w", i+1, i+n, err)
			}
		}
		return r.syncfs()
	})
	blockAmplification(&m)
	return []results.Measurement{m}, err
}

func (r *rep) remove(ctx context.Context) ([]results.Measurement, error) {
	m, err := r.timed(catalog.Remove, 0, func() error {
		return r.removeAll(ctx, func(name string) bool {
			// lost+found is made by mke2fs, part of the empty filesystem; the aged tree stays:
			// the tests that follow run beside it.
			return name == "lost+found" || name == aging.Dir && r.v.Age != ""
		})
	})
	return []results.Measurement{m}, err
}

func (r *rep) videoWrite(ctx context.Context) ([]results.Measurement, error) {
	logical := uint64(r.env.VideoCopies) * r.env.VideoBytes
	m, err := r.timed(catalog.VideoWrite, logical, func() error {
		for i := 1; i <= r.env.VideoCopies; i++ {
			if err := copyFile(ctx, r.env.Video, filepath.Join(r.env.Mountpoint, fmt.Sprintf("video-%d.bin", i))); err != nil {
				return fmt.Errorf("video copy %d: %w", i, err)
			}
		}
		return r.syncfs()
	})
	blockAmplification(&m)
	return []results.Measurement{m}, err
}

func (r *rep) videoRead(ctx context.Context) ([]results.Measurement, error) {
	return r.coldRead(ctx, catalog.VideoRead)
}

// blockAmplification records, for a test that wrote LogicalBytes through the filesystem, the
// bytes the device received per byte written: journal, metadata and allocation policy all show
// up in it.
func blockAmplification(m *results.Measurement) {
	if m.Status != results.OK || m.Device == nil || m.LogicalBytes == 0 {
		return
	}
	if m.Extra == nil {
		m.Extra = map[string]float64{}
	}
	m.Extra["block_amplification"] = float64(m.Device.WriteBytes) / float64(m.LogicalBytes)
}

// copyFile copies one large file, checking ctx between chunks.
func copyFile(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if err := copyChunks(ctx, out, in); err != nil {
		out.Close()
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	return out.Close()
}

// copyChunks copies r to w in 1 MiB chunks, checking ctx between them so that a timeout or
// Ctrl-C stops a multi-gigabyte copy promptly.
func copyChunks(ctx context.Context, w io.Writer, r io.Reader) error {
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// busyWait is how long openExclusive waits for a device that is still claimed.
var busyWait = 10 * time.Second

// openExclusive opens dev read-write and exclusively (O_EXCL: nobody has it mounted or open
// exclusively). A device fsbench has just unmounted can stay claimed for a moment (the
// filesystem's last references are dropped asynchronously), or for as long as another mount
// namespace holds a copy of the mount: a process that ran unshare -m, ip netns exec or
// started a container while the filesystem was mounted. The first passes in milliseconds;
// for the second, after busyWait, the error names the process, so that the person can end it
// (formatting the device under it is never an option).
func openExclusive(ctx context.Context, dev string) (*os.File, error) {
	if err := fs.VerifyDevice(ctx, dev); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(busyWait)
	delay := 20 * time.Millisecond
	for {
		f, err := os.OpenFile(dev, os.O_RDWR|unix.O_EXCL, 0)
		if err == nil || !errors.Is(err, unix.EBUSY) {
			return f, err
		}
		if time.Now().After(deadline) {
			hs, herr := mountinfo.Holders(dev)
			if herr != nil || len(hs) == 0 {
				return nil, fmt.Errorf("%w (still, after %v)", err, busyWait)
			}
			var what []string
			for _, h := range hs {
				what = append(what, h.String())
			}
			return nil, fmt.Errorf("%w: %s; a process that copied this machine's mounts while fsbench's filesystem was mounted (unshare -m, ip netns exec, a container) keeps it claimed until it exits",
				err, strings.Join(what, "; "))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}
