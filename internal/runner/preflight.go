package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suite"
)

// preflightTimeout bounds each variant's trial: mkfs of a large card, or the mount of a
// filesystem that replays nothing, takes seconds, not minutes.
const preflightTimeout = 3 * time.Minute

// preflight tries, before any data is staged, to make and mount every variant once on the
// device, so that options the tool or the kernel refuse stop the run at once (exit 2, naming
// the variant and the tool's own words) instead of failing every repetition of a run that then
// ends "complete". A variant that fails even without its options cannot be made on this device
// at all (mkfs.xfs below 300 MB): it is skipped with the tool's reason, and the run goes on.
// Nothing is measured; each repetition discards the device before its own mkfs.
func (e *engine) preflight() error {
	var kept []suite.Job
	var refused []string
	for _, j := range e.plan.Jobs {
		err := e.try(j.Variant, j.Kind)
		if err == nil {
			kept = append(kept, j)
			continue
		}
		if e.ctx.Err() != nil {
			return e.ctx.Err()
		}
		bare := j.Variant
		bare.MkfsArgs, bare.MountOptions = nil, ""
		if (len(j.Variant.MkfsArgs) > 0 || j.Variant.MountOptions != "") && e.try(bare, j.Kind) == nil {
			where := ""
			if j.Variant.Line > 0 {
				where = fmt.Sprintf(" (configuration line %d)", j.Variant.Line)
			}
			refused = append(refused, fmt.Sprintf("variant %s%s: %s", j.Variant.Name, where, firstLines(err)))
			continue
		}
		reason := "cannot be made on this " + bytesize.Format(e.prep.Size) + " device: " + firstLines(err)
		e.logf("skipping %s: %s", j.Variant.Name, reason)
		for i := range e.run.Variants {
			if e.run.Variants[i].Name == j.Variant.Name {
				e.run.Variants[i].Status, e.run.Variants[i].Reason = results.Skipped, reason
			}
		}
	}
	if len(refused) > 0 {
		return plan.Refusef("these variants' options do not work here (each was tried on the device, without them it works): fix or remove them:\n  %s",
			strings.Join(refused, "\n  "))
	}
	e.plan.Jobs = kept
	for i := range e.groups {
		e.groups[i].jobs = slicesKeep(e.groups[i].jobs, kept)
	}
	e.run.Methods["preflight"] = "before the run, each variant was made and mounted once on the device with its options (not measured), so that options that do not work stop the run before it starts"
	return nil
}

// try makes variant v on the device and mounts it, then unmounts it, and unloads the kernel
// modules the mount loaded (module_load times the first load).
func (e *engine) try(v plan.Variant, k fs.Kind) (err error) {
	ctx, cancel := context.WithTimeout(e.ctx, preflightTimeout)
	defer cancel()
	before := fs.LoadedModules()
	defer func() {
		uctx, ucancel := context.WithTimeout(context.Background(), time.Minute)
		defer ucancel()
		if _, left := fs.UnloadKindModules(uctx, fs.DefaultRunner, e.env.System, k, before); len(left) > 0 {
			e.logf("warning: the trial mount of %s loaded modules that cannot be unloaded (%s): module_load will say they were left loaded, and boot time leaves those repetitions out", v.Name, strings.Join(left, ", "))
		}
	}()
	if k.ReadOnly {
		if err := e.tryImage(ctx, v, k); err != nil {
			return err
		}
	} else if err := fs.Mkfs(ctx, fs.DefaultRunner, k, e.prep.Device, v.MkfsArgs); err != nil {
		return err
	}
	if err := fs.Mount(ctx, k, e.prep.Device, e.mnt, v.MountOptions); err != nil {
		return err
	}
	uctx, ucancel := context.WithTimeout(context.Background(), time.Minute)
	defer ucancel()
	return fs.Unmount(uctx, k, e.mnt)
}

// tryImage builds a read-only image of a one-file tree with v's options and writes it to the
// device.
func (e *engine) tryImage(ctx context.Context, v plan.Variant, k fs.Kind) error {
	dir, err := os.MkdirTemp(e.ses.Work, ".preflight-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) // made by this function, holds two files; nothing is mounted in it
	src := filepath.Join(dir, "src")
	img := filepath.Join(dir, "img")
	if err := os.Mkdir(src, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "file"), []byte("fsbench\n"), 0o644); err != nil {
		return err
	}
	if err := fs.BuildImage(ctx, fs.DefaultRunner, k, src, img, v.MkfsArgs); err != nil {
		return err
	}
	b, err := os.ReadFile(img)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(e.prep.Device, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	return errors.Join(werr, serr, f.Close())
}

// firstLines keeps the start of a tool's complaint: the command and its first lines of output,
// never a whole usage text.
func firstLines(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	if len(lines) > 3 {
		lines = append(lines[:3], "...")
	}
	return strings.Join(lines, " / ")
}

// slicesKeep keeps the jobs of js that are in keep.
func slicesKeep(js, keep []suite.Job) []suite.Job {
	var out []suite.Job
	for _, j := range js {
		for _, k := range keep {
			if k.Variant.Name == j.Variant.Name {
				out = append(out, j)
				break
			}
		}
	}
	return out
}
