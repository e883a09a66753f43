package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/dataset"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/nand"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
)

// Test names of the free-electrons suite (Free Electrons, ELCE 2010), in the order they run.
// mount_mem and used_space are shared with the bootlin suite.
const (
	InitTime       = "init_time"
	InitMem        = "init_mem"
	MountTime      = "mount_time"
	ReadTime       = "read_time"
	RemoveTime     = "remove_time"
	WriteTime      = "write_time"
	VideoWriteTime = "video_write_time"
)

// FreeElectrons are the tests of the 2010 study on raw NAND. They do not run on a block device
// (RunRepetition) but on a simulated NAND chip (RunFlashRepetition).
var FreeElectrons = []Test{
	{Name: InitTime, Unit: "s", ReadOnly: true, flash: (*flashRep).init, Doc: "load the filesystem's driver and initialise it: modprobe jffs2; modprobe ubi, ubiattach, modprobe ubifs; for squashfs also ubiblock"},
	{Name: InitMem, Unit: "bytes", ReadOnly: true, Doc: "kernel memory taken by init_time (see methods.mount_mem)"},
	{Name: MountTime, Unit: "s", ReadOnly: true, flash: (*flashRep).mount, Doc: "mount(2) of the prepared filesystem (holding the dataset), caches dropped first"},
	{Name: MountMem, Unit: "bytes", ReadOnly: true, Doc: "kernel memory taken by the mount (see methods.mount_mem)"},
	{Name: UsedSpace, Unit: "bytes", ReadOnly: true, flash: (*flashRep).usedSpace, Doc: "used bytes as df shows (statfs) with the dataset stored; logical_bytes beside it"},
	{Name: ReadTime, Unit: "s", ReadOnly: true, flash: (*flashRep).read, Doc: "drop caches, read every byte of every file"},
	{Name: RemoveTime, Unit: "s", flash: (*flashRep).remove, Doc: "remove every file, syncfs"},
	{Name: WriteTime, Unit: "s", Needs: []string{RemoveTime}, flash: (*flashRep).write, Doc: "copy the (compressible) dataset from RAM into the emptied filesystem, syncfs"},
	{Name: VideoWriteTime, Unit: "s", flash: (*flashRep).videoWrite, Doc: "remove that copy (not timed), then write the incompressible video file, syncfs"},
}

func init() {
	Suites[plan.FlashSuite] = FreeElectrons
}

// IsFlashSuite reports whether a suite list is the raw-flash suite (which cannot be combined
// with block-device suites: they need different devices).
func IsFlashSuite(suites string) bool { return strings.TrimSpace(suites) == plan.FlashSuite }

// FlashEnv is what a repetition of the free-electrons suite works with.
type FlashEnv struct {
	Chip       nand.Chip
	Timings    nand.Timings
	Mountpoint string // empty directory the filesystem is mounted on
	WorkDir    string // scratch space in RAM for images
	Source     string // the dataset tree, in RAM
	Video      string // the incompressible file, in RAM
	Dataset    dataset.Stats
	VideoBytes uint64
	Timeout    time.Duration // per test
	Selection  Selection
	Run        fs.Runner
	Log        func(format string, args ...any)
	OnTest     func(test string)
}

// flashRep is one repetition on the simulated chip.
type flashRep struct {
	recorder
	env      *FlashEnv
	v        plan.Variant // the expanded variant (name with the size)
	k        fs.Kind
	part     uint64
	meter    *measure.Meter
	sim      *nand.Sim
	ubi      *nand.UBI
	vol      *nand.Volume
	block    string // ubiblock device of a read-only image
	mounted  bool
	loaded   []string // modules this repetition loaded, unloaded at its end
	prepared map[string]float64
	failed   string
}

// RunFlashRepetition loads a fresh simulated chip with a partition of part bytes, stores the
// dataset on it with variant v's filesystem (an image written as a user flashes a root
// filesystem: nandwrite for jffs2, ubiupdatevol for ubifs and squashfs), then runs the
// free-electrons tests in order and emits each measurement. Like the study, which reset its
// board between filesystems, it leaves nothing loaded: every module it loaded is unloaded and
// the chip is removed. A test's failure is recorded and the later tests are not run.
func RunFlashRepetition(ctx context.Context, env *FlashEnv, v plan.Variant, k fs.Kind, part uint64, n int, warmup bool, emit Emit) (err error) {
	r := &flashRep{recorder: recorder{variant: v.Name, n: n, warmup: warmup, emit: emit, log: env.Log},
		env: env, v: v, k: k, part: part, meter: measure.NewCPUMeter()}
	if !k.Flash && k.Name != "squashfs" {
		return fmt.Errorf("%s: the free-electrons suite runs raw-flash filesystems (jffs2, ubifs) and squashfs on UBI", v.Name)
	}
	defer func() {
		// A fresh context: ctx may be done (Ctrl-C), and the chip must go anyway.
		tctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if terr := r.teardown(tctx); terr != nil && err == nil {
			err = terr
		}
	}()
	if perr := r.prepare(ctx); perr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The filesystem could not be made: every test of this repetition is not run, and the
		// first one carries the error.
		return r.failAll(fmt.Errorf("preparing %s on the %s partition: %w", k.Name, plan.FormatSize(part), perr))
	}
	for _, t := range FreeElectrons {
		if t.flash == nil {
			continue // produced by another test's step
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		record := env.Selection.Record[t.Name] || (t.Name == InitTime && env.Selection.Record[InitMem]) ||
			(t.Name == MountTime && env.Selection.Record[MountMem])
		// init, mount and used_space set up what the later tests need: they always run.
		needed := t.Name == InitTime || t.Name == MountTime || t.Name == UsedSpace
		if !record && !needed && !env.Selection.Run[t.Name] {
			continue
		}
		if env.OnTest != nil {
			env.OnTest(t.Name)
		}
		if r.failed != "" {
			if err := r.putAll(t.Name, results.Measurement{Status: results.NotRun, Note: r.failed + " failed in this repetition"}); err != nil {
				return err
			}
			continue
		}
		if k.ReadOnly && !t.ReadOnly {
			if err := r.putAll(t.Name, results.Measurement{Status: results.NA, Note: "read-only filesystem"}); err != nil {
				return err
			}
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, env.Timeout)
		ms, serr := t.flash(r, tctx)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if serr != nil {
			if errors.Is(serr, context.DeadlineExceeded) {
				serr = fmt.Errorf("timed out after %v (raise timeout in the config or with --timeout): %w", env.Timeout, serr)
			}
			r.failed = t.Name
			if err := r.putAll(t.Name, results.Measurement{Status: results.Failed, Error: serr.Error()}); err != nil {
				return err
			}
			continue
		}
		for _, m := range ms {
			if env.Selection.Record[m.Test] {
				if err := r.put(m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// putAll records m for test and, for init and mount, for the memory figure they produce too.
func (r *flashRep) putAll(test string, m results.Measurement) error {
	names := []string{test}
	switch test {
	case InitTime:
		names = append(names, InitMem)
	case MountTime:
		names = append(names, MountMem)
	}
	for i, name := range names {
		if !r.env.Selection.Record[name] {
			continue
		}
		mm := m
		mm.Test = name
		if i > 0 && m.Status == results.Failed {
			mm = results.Measurement{Test: name, Status: results.NotRun, Note: test + " failed in this repetition"}
		}
		if err := r.put(mm); err != nil {
			return err
		}
	}
	return nil
}

// failAll records a preparation failure: the first recorded test gets the error, the rest are
// not run.
func (r *flashRep) failAll(perr error) error {
	first := true
	for _, t := range FreeElectrons {
		if !r.env.Selection.Record[t.Name] {
			continue
		}
		m := results.Measurement{Test: t.Name, Status: results.NotRun, Note: "the filesystem could not be prepared"}
		if first {
			m = results.Measurement{Test: t.Name, Status: results.Failed, Error: perr.Error()}
			first = false
		}
		if err := r.put(m); err != nil {
			return err
		}
	}
	return nil
}

func (r *flashRep) runTool(ctx context.Context, name string, args ...string) error {
	if out, err := r.env.Run(ctx, name, args...); err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 600 {
			msg = msg[len(msg)-600:]
		}
		if msg != "" {
			return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
		}
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

// moduleLive reports whether a kernel module is loaded (built-in ones have no initstate).
func moduleLive(m string) bool {
	_, err := os.Stat(filepath.Join("/sys/module", m, "initstate"))
	return err == nil
}

// modprobe loads a module and remembers it for the teardown if this repetition loaded it.
func (r *flashRep) modprobe(ctx context.Context, m string) error {
	if moduleLive(m) {
		return nil
	}
	if err := r.runTool(ctx, "modprobe", m); err != nil {
		return err
	}
	if moduleLive(m) {
		r.loaded = append(r.loaded, m)
	}
	return nil
}

// rmmodLoaded unloads, newest first, the modules this repetition loaded.
func (r *flashRep) rmmodLoaded(ctx context.Context) error {
	var errs []error
	for i := len(r.loaded) - 1; i >= 0; i-- {
		if err := r.runTool(ctx, "rmmod", r.loaded[i]); err != nil {
			errs = append(errs, err)
		}
	}
	r.loaded = nil
	return errors.Join(errs...)
}

// driverModules are the modules init_time loads, in order: what a board's boot does.
func (r *flashRep) driverModules() []string {
	switch r.k.Name {
	case "jffs2":
		return []string{"jffs2"}
	case "ubifs":
		return []string{"ubi", "ubifs"}
	default: // squashfs on ubiblock
		return []string{"ubi", "squashfs"}
	}
}

// prepare loads the chip and stores the dataset on it, then unloads the drivers again so that
// init_time loads them, as at boot.
func (r *flashRep) prepare(ctx context.Context) error {
	sim, err := nand.Load(ctx, r.env.Run, r.env.Chip, r.env.Timings, r.part)
	if err != nil {
		return err
	}
	r.sim = sim
	r.prepared = map[string]float64{}
	img := filepath.Join(r.env.WorkDir, "flash.img")
	defer os.Remove(img)
	start := time.Now()
	switch r.k.Name {
	case "jffs2":
		args := nand.JFFS2ImageArgs(r.env.Chip, r.env.Source, img, r.v.MkfsArgs)
		if err := r.runTool(ctx, r.k.Tool, args...); err != nil {
			return err
		}
		if err := sim.Erase(ctx); err != nil {
			return err
		}
		if err := sim.WriteImage(ctx, img); err != nil {
			return err
		}
	default:
		if err := sim.Format(ctx); err != nil {
			return err
		}
		if err := r.modprobe(ctx, "ubi"); err != nil {
			return err
		}
		if r.ubi, err = sim.Attach(ctx, 0, nand.BEBPer1024(r.env.Chip, r.part)); err != nil {
			return err
		}
		if r.k.Name == "ubifs" {
			if r.vol, err = r.ubi.MakeVolume(ctx, "fsbench", 0); err != nil {
				return err
			}
			if err := r.runTool(ctx, r.k.Tool, nand.UBIFSImageArgs(r.ubi, r.vol, r.env.Source, img, r.v.MkfsArgs)...); err != nil {
				return err
			}
		} else {
			sq, _ := fs.Lookup("squashfs")
			if err := fs.BuildImage(ctx, r.env.Run, sq, r.env.Source, img, r.v.MkfsArgs); err != nil {
				return err
			}
			fi, err := os.Stat(img)
			if err != nil {
				return err
			}
			if r.vol, err = r.ubi.MakeVolume(ctx, "fsbench", uint64(fi.Size())); err != nil {
				return err
			}
		}
		if err := r.vol.Update(ctx, img); err != nil {
			return err
		}
		r.prepared["ubi_reserved_bad_pebs"] = float64(r.ubi.ReservedBad)
		r.prepared["ubi_total_pebs"] = float64(r.ubi.TotalPEBs)
		r.prepared["ubi_volume_lebs"] = float64(r.vol.ReservedLEBs)
		r.prepared["ubi_max_beb_per1024"] = float64(r.ubi.BEBPer1024)
		if err := r.ubi.Detach(ctx); err != nil {
			return err
		}
		r.ubi = nil
	}
	if fi, err := os.Stat(img); err == nil {
		r.prepared["image_bytes"] = float64(fi.Size())
	}
	r.prepared["prepare_s"] = time.Since(start).Seconds()
	return r.rmmodLoaded(ctx)
}

// timed measures fn's wall and CPU time and the kernel memory it left taken.
func (r *flashRep) timed(test, memTest string, logical uint64, fn func() error) ([]results.Measurement, error) {
	if err := measure.DropCaches(); err != nil {
		return nil, err
	}
	before, err := measure.ReadMeminfo()
	if err != nil {
		return nil, err
	}
	span, err := r.meter.Start()
	if err != nil {
		return nil, err
	}
	if err := fn(); err != nil {
		return nil, err
	}
	smp, err := span.Stop()
	if err != nil {
		return nil, err
	}
	wall := smp.Wall.Seconds()
	m := results.Measurement{Test: test, Status: results.OK, Value: results.Float(wall), Unit: "s",
		WallSeconds: wall, UserSeconds: smp.User.Seconds(), SysSeconds: smp.Sys.Seconds(), LogicalBytes: logical}
	if logical > 0 && wall > 0 {
		m.MBps = float64(logical) / 1e6 / wall
	}
	ms := []results.Measurement{m}
	if memTest != "" {
		after, err := measure.ReadMeminfo()
		if err != nil {
			return nil, err
		}
		// Not clamped: the kernel may free memory elsewhere meanwhile (see mount_mem).
		delta := float64(after.KernelMemory()) - float64(before.KernelMemory())
		ms = append(ms, results.Measurement{Test: memTest, Status: results.OK, Value: results.Float(delta), Unit: "bytes"})
	}
	return ms, nil
}

// init loads the drivers and initialises the flash as a board's boot does: for UBI that is
// ubiattach, which scans every erase block's headers (the study's init_time included it).
func (r *flashRep) init(ctx context.Context) ([]results.Measurement, error) {
	ms, err := r.timed(InitTime, InitMem, 0, func() error {
		for _, m := range r.driverModules() {
			if err := r.modprobe(ctx, m); err != nil {
				return err
			}
			if m != "ubi" {
				continue
			}
			u, err := r.sim.Attach(ctx, 0, nand.BEBPer1024(r.env.Chip, r.part))
			if err != nil {
				return err
			}
			r.ubi = u
			r.vol = u.OpenVolume(0, "fsbench")
			if r.k.ReadOnly {
				dev, err := r.vol.CreateBlock(ctx)
				if err != nil {
					return err
				}
				r.block = dev
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ms[0].Extra = r.prepared
	ms[0].Note = "modprobe " + strings.Join(r.driverModules(), ", ")
	if r.ubi != nil {
		ms[0].Note += " and ubiattach"
	}
	return ms, nil
}

// source is what mount(2) is given: the MTD device for jffs2, the UBI volume for ubifs, the
// ubiblock device for squashfs.
func (r *flashRep) source() string {
	switch {
	case r.k.Name == "jffs2":
		return fmt.Sprintf("mtd%d", r.sim.MTD)
	case r.block != "":
		return r.block
	default:
		return r.vol.MountSource()
	}
}

func (r *flashRep) mount(ctx context.Context) ([]results.Measurement, error) {
	src := r.source()
	ms, err := r.timed(MountTime, MountMem, 0, func() error {
		return fs.Mount(ctx, r.k, src, r.env.Mountpoint, r.v.MountOptions)
	})
	if err != nil {
		return nil, err
	}
	r.mounted = true
	ms[0].Note = "mount -t " + r.k.Name + " " + src
	return ms, nil
}

func (r *flashRep) usedSpace(ctx context.Context) ([]results.Measurement, error) {
	m, err := usedSpaceOf(r.env.Mountpoint, r.env.Dataset.Bytes)
	return []results.Measurement{m}, err
}

func (r *flashRep) read(ctx context.Context) ([]results.Measurement, error) {
	var st dataset.ReadStats
	ms, err := r.timed(ReadTime, "", 0, func() error {
		var err error
		st, err = dataset.ReadTree(ctx, r.env.Mountpoint)
		return err
	})
	if err != nil {
		return nil, err
	}
	ms[0].LogicalBytes = st.Bytes
	if ms[0].WallSeconds > 0 {
		ms[0].MBps = float64(st.Bytes) / 1e6 / ms[0].WallSeconds
	}
	return ms, nil
}

func (r *flashRep) syncfs() error {
	return syncfsDir(r.env.Mountpoint)
}

// removeAll removes everything in the mounted filesystem.
func (r *flashRep) removeAll(ctx context.Context) error {
	entries, err := os.ReadDir(r.env.Mountpoint)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := os.RemoveAll(filepath.Join(r.env.Mountpoint, e.Name())); err != nil {
			return err
		}
	}
	return r.syncfs()
}

func (r *flashRep) remove(ctx context.Context) ([]results.Measurement, error) {
	return r.timed(RemoveTime, "", 0, func() error { return r.removeAll(ctx) })
}

func (r *flashRep) write(ctx context.Context) ([]results.Measurement, error) {
	opts := dataset.CopyOptions{NoSymlinks: !r.k.Symlinks, NoModes: r.k.NoModes, ReadWrite: true}
	return r.timed(WriteTime, "", r.env.Dataset.Bytes, func() error {
		if _, err := dataset.CopyTree(ctx, r.env.Source, filepath.Join(r.env.Mountpoint, "copy-1"), opts); err != nil {
			return fmt.Errorf("copying the dataset: %w", err)
		}
		return r.syncfs()
	})
}

func (r *flashRep) videoWrite(ctx context.Context) ([]results.Measurement, error) {
	if err := r.removeAll(ctx); err != nil {
		return nil, fmt.Errorf("emptying the filesystem before the video: %w", err)
	}
	return r.timed(VideoWriteTime, "", r.env.VideoBytes, func() error {
		if err := copyFile(ctx, r.env.Video, filepath.Join(r.env.Mountpoint, "video-1.bin")); err != nil {
			return err
		}
		return r.syncfs()
	})
}

// teardown unmounts, removes the block device, detaches UBI, unloads the modules this
// repetition loaded and removes the chip, reporting every step that failed.
func (r *flashRep) teardown(ctx context.Context) error {
	var errs []error
	if r.mounted {
		if err := fs.Unmount(ctx, r.k, r.env.Mountpoint); err != nil {
			errs = append(errs, err)
		} else {
			r.mounted = false
		}
	}
	if r.block != "" {
		if err := r.vol.RemoveBlock(ctx); err != nil {
			errs = append(errs, err)
		}
		r.block = ""
	}
	if r.ubi != nil {
		if err := r.ubi.Detach(ctx); err != nil {
			errs = append(errs, err)
		}
		r.ubi = nil
	}
	if err := r.rmmodLoaded(ctx); err != nil {
		errs = append(errs, err)
	}
	if r.sim != nil && len(errs) == 0 {
		if err := r.sim.Unload(ctx); err != nil {
			errs = append(errs, err)
		}
		r.sim = nil
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleaning up the simulated NAND: %w", errors.Join(errs...))
	}
	return nil
}
