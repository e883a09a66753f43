package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/dataset"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/nand"
	"github.com/fsbench/fsbench/internal/results"
)

// FreeElectrons are the tests of the 2010 study on raw NAND. They run on a simulated NAND chip
// (Env.Flash), each repetition on a fresh one, never on a block device.
var freeElectrons = []Test{
	{Test: named(catalog.InitTime), ReadOnly: true, Always: true, Setup: true, Flash: true, Produces: []string{catalog.InitMem}, Run: step((*rep).feInit)},
	{Test: named(catalog.InitMem), ReadOnly: true, Flash: true},
	{Test: named(catalog.MountTime), ReadOnly: true, Always: true, Setup: true, Flash: true, Produces: []string{catalog.MountMem}, Run: step((*rep).feMount)},
	{Test: named(catalog.MountMem), ReadOnly: true, Flash: true},
	{Test: named(catalog.UsedSpace), ReadOnly: true, Always: true, Flash: true, Run: step((*rep).feUsedSpace)},
	{Test: named(catalog.ReadTime), ReadOnly: true, Flash: true, Run: step((*rep).feRead)},
	{Test: named(catalog.RemoveTime), Flash: true, Run: step((*rep).feRemove)},
	{Test: named(catalog.WriteTime), Needs: []string{catalog.RemoveTime}, Flash: true, Run: step((*rep).feWrite)},
	{Test: named(catalog.VideoWriteTime), Flash: true, Run: step((*rep).feVideoWrite)},
}

// flashState is a raw-flash repetition's chip and what it loaded: like the study, which reset
// its board between filesystems, the repetition leaves nothing loaded (teardownFlash).
type flashState struct {
	part     uint64 // the MTD partition's size
	meter    *measure.Meter
	sim      *nand.Sim
	ubi      *nand.UBI
	vol      *nand.Volume
	block    string   // ubiblock device of a read-only image
	loaded   []string // modules this repetition loaded, unloaded at its end
	prepared map[string]float64
}

// prepareFlash loads a fresh simulated chip with a partition of part bytes and stores the
// dataset on it with the variant's filesystem (an image written as a user flashes a root
// filesystem: nandwrite for jffs2, ubiupdatevol for ubifs and squashfs).
func (r *rep) prepareFlash(ctx context.Context, part uint64) error {
	if !r.k.Flash && r.k.Name != "squashfs" {
		return fmt.Errorf("%s: the free-electrons suite runs raw-flash filesystems (jffs2, ubifs) and squashfs on UBI", r.v.Name)
	}
	r.fl = &flashState{part: part, meter: measure.NewCPUMeter()}
	if err := r.prepareChip(ctx); err != nil {
		return fmt.Errorf("preparing %s on the %s partition: %w", r.k.Name, bytesize.Format(part), err)
	}
	return nil
}

func (r *rep) runTool(ctx context.Context, name string, args ...string) error {
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
func (r *rep) modprobe(ctx context.Context, m string) error {
	if moduleLive(m) {
		return nil
	}
	if err := r.runTool(ctx, "modprobe", m); err != nil {
		return err
	}
	if moduleLive(m) {
		r.fl.loaded = append(r.fl.loaded, m)
	}
	return nil
}

// rmmodLoaded unloads, newest first, the modules this repetition loaded.
func (r *rep) rmmodLoaded(ctx context.Context) error {
	var errs []error
	for i := len(r.fl.loaded) - 1; i >= 0; i-- {
		if err := r.runTool(ctx, "rmmod", r.fl.loaded[i]); err != nil {
			errs = append(errs, err)
		}
	}
	r.fl.loaded = nil
	return errors.Join(errs...)
}

// driverModules are the modules init_time loads, in order: what a board's boot does.
func (r *rep) driverModules() []string {
	switch r.k.Name {
	case "jffs2":
		return []string{"jffs2"}
	case "ubifs":
		return []string{"ubi", "ubifs"}
	default: // squashfs on ubiblock
		return []string{"ubi", "squashfs"}
	}
}

// prepareChip loads the chip and stores the dataset on it, then unloads the drivers again so
// that init_time loads them, as at boot.
func (r *rep) prepareChip(ctx context.Context) error {
	sim, err := nand.Load(ctx, r.env.Run, r.env.Flash.Chip, r.env.Flash.Timings, r.fl.part)
	if err != nil {
		return err
	}
	r.fl.sim = sim
	r.fl.prepared = map[string]float64{}
	img := filepath.Join(r.env.WorkDir, "flash.img")
	defer os.Remove(img)
	start := time.Now()
	switch r.k.Name {
	case "jffs2":
		args := nand.JFFS2ImageArgs(r.env.Flash.Chip, r.env.Source, img, r.v.MkfsArgs)
		if err := fs.BuildFlashImage(ctx, r.env.Run, r.k, r.env.Source, img, args, len(r.v.MkfsArgs) > 0); err != nil {
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
		if r.fl.ubi, err = sim.Attach(ctx, 0, nand.BEBPer1024(r.env.Flash.Chip, r.fl.part)); err != nil {
			return err
		}
		if r.k.Name == "ubifs" {
			if r.fl.vol, err = r.fl.ubi.MakeVolume(ctx, "fsbench", 0); err != nil {
				return err
			}
			args := nand.UBIFSImageArgs(r.fl.ubi, r.fl.vol, r.env.Source, img, r.v.MkfsArgs)
			if err := fs.BuildFlashImage(ctx, r.env.Run, r.k, r.env.Source, img, args, len(r.v.MkfsArgs) > 0); err != nil {
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
			if r.fl.vol, err = r.fl.ubi.MakeVolume(ctx, "fsbench", uint64(fi.Size())); err != nil {
				return err
			}
		}
		if err := r.fl.vol.Update(ctx, img); err != nil {
			return err
		}
		r.fl.prepared["ubi_reserved_bad_pebs"] = float64(r.fl.ubi.ReservedBad)
		r.fl.prepared["ubi_total_pebs"] = float64(r.fl.ubi.TotalPEBs)
		r.fl.prepared["ubi_volume_lebs"] = float64(r.fl.vol.ReservedLEBs)
		r.fl.prepared["ubi_max_beb_per1024"] = float64(r.fl.ubi.BEBPer1024)
		if err := r.fl.ubi.Detach(ctx); err != nil {
			return err
		}
		r.fl.ubi = nil
	}
	if fi, err := os.Stat(img); err == nil {
		r.fl.prepared["image_bytes"] = float64(fi.Size())
	}
	r.fl.prepared["prepare_s"] = time.Since(start).Seconds()
	return r.rmmodLoaded(ctx)
}

// flashTimed measures fn's wall and CPU time and the kernel memory it left taken.
func (r *rep) flashTimed(test, memTest string, logical uint64, fn func() error) ([]results.Measurement, error) {
	if err := measure.DropCaches(); err != nil {
		return nil, err
	}
	before, err := measure.ReadMeminfo()
	if err != nil {
		return nil, err
	}
	watch := r.watch()
	span, err := r.fl.meter.Start()
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
		WallSeconds: wall, UserSeconds: smp.User.Seconds(), SysSeconds: smp.Sys.Seconds(), LogicalBytes: logical,
		Noise: watch.stop()}
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

// feInit loads the drivers and initialises the flash as a board's boot does: for UBI that is
// ubiattach, which scans every erase block's headers (the study's init_time included it).
func (r *rep) feInit(ctx context.Context) ([]results.Measurement, error) {
	ms, err := r.flashTimed(catalog.InitTime, catalog.InitMem, 0, func() error {
		for _, m := range r.driverModules() {
			if err := r.modprobe(ctx, m); err != nil {
				return err
			}
			if m != "ubi" {
				continue
			}
			u, err := r.fl.sim.Attach(ctx, 0, nand.BEBPer1024(r.env.Flash.Chip, r.fl.part))
			if err != nil {
				return err
			}
			r.fl.ubi = u
			r.fl.vol = u.OpenVolume(0, "fsbench")
			if r.k.ReadOnly {
				dev, err := r.fl.vol.CreateBlock(ctx)
				if err != nil {
					return err
				}
				r.fl.block = dev
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ms[0].Extra = r.fl.prepared
	ms[0].Note = "modprobe " + strings.Join(r.driverModules(), ", ")
	if r.fl.ubi != nil {
		ms[0].Note += " and ubiattach"
	}
	return ms, nil
}

// source is what mount(2) is given: the MTD device for jffs2, the UBI volume for ubifs, the
// ubiblock device for squashfs.
func (r *rep) source() string {
	switch {
	case r.k.Name == "jffs2":
		return fmt.Sprintf("mtd%d", r.fl.sim.MTD)
	case r.fl.block != "":
		return r.fl.block
	default:
		return r.fl.vol.MountSource()
	}
}

func (r *rep) feMount(ctx context.Context) ([]results.Measurement, error) {
	src := r.source()
	ms, err := r.flashTimed(catalog.MountTime, catalog.MountMem, 0, func() error {
		return fs.Mount(ctx, r.k, src, r.env.Mountpoint, r.v.MountOptions)
	})
	if err != nil {
		return nil, err
	}
	r.mounted = true
	ms[0].Note = "mount -t " + r.k.Name + " " + src
	return ms, nil
}

func (r *rep) feUsedSpace(ctx context.Context) ([]results.Measurement, error) {
	m, err := usedSpaceOf(r.env.Mountpoint, r.env.Dataset.Bytes)
	return []results.Measurement{m}, err
}

func (r *rep) feRead(ctx context.Context) ([]results.Measurement, error) {
	var st dataset.ReadStats
	ms, err := r.flashTimed(catalog.ReadTime, "", 0, func() error {
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

// removeAll removes everything in the mounted filesystem but the top-level entries keep
// says to keep (nil: none), then makes the removal durable.
func (r *rep) removeAll(ctx context.Context, keep func(name string) bool) error {
	entries, err := os.ReadDir(r.env.Mountpoint)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if keep != nil && keep(e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.env.Mountpoint, e.Name())); err != nil {
			return err
		}
	}
	return r.syncfs()
}

func (r *rep) feRemove(ctx context.Context) ([]results.Measurement, error) {
	return r.flashTimed(catalog.RemoveTime, "", 0, func() error { return r.removeAll(ctx, nil) })
}

func (r *rep) feWrite(ctx context.Context) ([]results.Measurement, error) {
	opts := dataset.CopyOptions{NoSymlinks: !r.k.Symlinks, NoModes: r.k.NoModes, ReadWrite: true}
	return r.flashTimed(catalog.WriteTime, "", r.env.Dataset.Bytes, func() error {
		if _, err := dataset.CopyTree(ctx, r.env.Source, filepath.Join(r.env.Mountpoint, "copy-1"), opts); err != nil {
			return fmt.Errorf("copying the dataset: %w", err)
		}
		return r.syncfs()
	})
}

func (r *rep) feVideoWrite(ctx context.Context) ([]results.Measurement, error) {
	if err := r.removeAll(ctx, nil); err != nil {
		return nil, fmt.Errorf("emptying the filesystem before the video: %w", err)
	}
	return r.flashTimed(catalog.VideoWriteTime, "", r.env.VideoBytes, func() error {
		if err := copyFile(ctx, r.env.Video, filepath.Join(r.env.Mountpoint, "video-1.bin")); err != nil {
			return err
		}
		return r.syncfs()
	})
}

// teardownFlash unmounts, removes the block device, detaches UBI, unloads the modules this
// repetition loaded and removes the chip, reporting every step that failed.
func (r *rep) teardownFlash(ctx context.Context) error {
	var errs []error
	if r.mounted {
		if err := fs.Unmount(ctx, r.k, r.env.Mountpoint); err != nil {
			errs = append(errs, err)
		} else {
			r.mounted = false
		}
	}
	if r.fl.block != "" {
		if err := r.fl.vol.RemoveBlock(ctx); err != nil {
			errs = append(errs, err)
		}
		r.fl.block = ""
	}
	if r.fl.ubi != nil {
		if err := r.fl.ubi.Detach(ctx); err != nil {
			errs = append(errs, err)
		}
		r.fl.ubi = nil
	}
	if err := r.rmmodLoaded(ctx); err != nil {
		errs = append(errs, err)
	}
	if r.fl.sim != nil && len(errs) == 0 {
		if err := r.fl.sim.Unload(ctx); err != nil {
			errs = append(errs, err)
		}
		r.fl.sim = nil
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleaning up the simulated NAND: %w", errors.Join(errs...))
	}
	return nil
}
