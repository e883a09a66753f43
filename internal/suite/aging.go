package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fsbench/fsbench/internal/aging"
	"github.com/fsbench/fsbench/internal/dataset"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/measure"
	"github.com/fsbench/fsbench/internal/results"
)

// age ages the mounted filesystem of an aged variant (Variant.Age) before the measured tests,
// then measures what the churn left: layout, an offline check and a cold mount of the aged
// filesystem. Everything goes to Env.EmitAging, apart from the tests' measurements. It leaves
// the filesystem mounted, caches dropped, for the tests.
// The first error is the aging's own failure (recorded; the repetition's tests are then not
// run), the second one that ends the repetition (the record could not be saved).
func (r *rep) age(ctx context.Context) (failed, err error) {
	rec := results.Aging{Variant: r.v.Name, Rep: r.n, Warmup: r.warmup, Status: results.OK}
	failed = r.ageInto(ctx, &rec)
	if failed != nil {
		rec.Status, rec.Error = results.Failed, failed.Error()
	}
	if r.env.Log != nil {
		r.env.Log("%s", describeAging(rec))
	}
	if r.env.EmitAging != nil {
		err = r.env.EmitAging(rec)
	}
	return failed, err
}

func (r *rep) ageInto(ctx context.Context, rec *results.Aging) error {
	sp, err := aging.Parse(r.v.Age)
	if err != nil {
		return err
	}
	mnt := r.env.Mountpoint
	u, err := fs.StatUsage(mnt)
	if err != nil {
		return err
	}
	card := r.cardCounters()
	// The share is of what the fresh filesystem offers to files, not of statfs's total: a 512 MiB
	// f2fs offers files 77.6 % of its total (the rest is overprovision), so 80 % of the
	// total was full before any churn, in the guest as on a board.
	res, err := aging.Age(ctx, filepath.Join(mnt, aging.Dir), sp, aging.Options{Seed: r.env.AgeSeed, Capacity: u.FreeBytes,
		Reclaim: fs.Reclaimer(r.env.Run, r.k, r.env.Device, mnt)})
	rec.Spec, rec.Seconds, rec.FillBytes, rec.ChurnBytes = res.Spec, res.Seconds, res.FillBytes, res.ChurnBytes
	rec.Files, rec.TreeBytes, rec.Fsyncs, rec.Renames, rec.Deletes = res.Files, res.TreeBytes, res.Fsyncs, res.Renames, res.Deletes
	rec.EndedEarly, rec.Trimmed, rec.Reclaims = res.EndedEarly, res.Trimmed, res.Reclaims
	if err != nil {
		return err
	}
	if after := r.cardCounters(); card != nil && after != nil {
		rec.CardHostBytes = after.HostBytesWritten - card.HostBytesWritten
		rec.CardFlashBytes = after.FlashBytesWrite - card.FlashBytesWrite
		rec.CardErases = after.BlocksErased - card.BlocksErased
		if rec.CardHostBytes > 0 {
			rec.CardWA = float64(rec.CardFlashBytes) / float64(rec.CardHostBytes)
		}
	}
	if u, err = fs.StatUsage(mnt); err != nil {
		return err
	}
	if u.TotalBytes > 0 {
		rec.Fullness = float64(u.UsedBytes) / float64(u.TotalBytes)
	}
	l, err := aging.List(filepath.Join(mnt, aging.Dir))
	if err != nil {
		return err
	}
	rec.ListingSHA256 = aging.Digest(l)
	lay, err := aging.MeasureLayout(filepath.Join(mnt, aging.Dir))
	if err != nil {
		return err
	}
	rec.Layout = &results.AgingLayout{Files: lay.Files, Mapped: lay.Mapped, Extents: lay.Extents, ExtentsPerFile: lay.ExtentsPerFile,
		Fragmented: lay.Fragmented, MaxExtents: lay.MaxExtents, Score: lay.Score}
	// The aged filesystem unmounted: its offline check, then its cold mount, both timed.
	if err := fs.Unmount(ctx, r.k, mnt); err != nil {
		return err
	}
	r.mounted = false
	start := time.Now()
	verdict, _, err := fs.Check(ctx, r.env.Run, r.k, r.env.Device)
	if err != nil {
		return err
	}
	if verdict != fs.FsckNone {
		rec.FsckSeconds = time.Since(start).Seconds()
	}
	rec.Fsck = verdict
	if free, ok, err := fs.MeasureFreeSpace(ctx, r.env.Run, r.k, r.env.Device); err != nil {
		return err
	} else if ok {
		rec.FreeExtents, rec.FreeExtentAvgBytes = free.Extents, free.AvgBytes
	}
	if err := measure.DropCaches(); err != nil {
		return err
	}
	start = time.Now()
	if err := fs.Mount(ctx, r.k, r.env.Device, mnt, r.v.MountOptions); err != nil {
		return fmt.Errorf("mounting the aged filesystem: %w", err)
	}
	rec.MountSeconds = time.Since(start).Seconds()
	r.mounted = true
	return nil
}

// cardCounters reads the simulated card's counters; nil on other targets or when it cannot.
func (r *rep) cardCounters() *flash.Counters {
	if r.env.Card == nil {
		return nil
	}
	st, err := r.env.Card()
	if err != nil {
		return nil
	}
	return &st.Counters
}

// describeAging is the log line of an aging.
func describeAging(a results.Aging) string {
	if a.Status != results.OK {
		return fmt.Sprintf("%s rep %d aging: FAILED: %s", a.Variant, a.Rep, a.Error)
	}
	s := fmt.Sprintf("%s rep %d aging %s: %.1f s, %.0f MiB written (%.0f fill + %.0f churn), %d files, %.0f %% full",
		a.Variant, a.Rep, a.Spec, a.Seconds, float64(a.FillBytes+a.ChurnBytes)/(1<<20), float64(a.FillBytes)/(1<<20), float64(a.ChurnBytes)/(1<<20), a.Files, 100*a.Fullness)
	if a.Layout != nil {
		s += fmt.Sprintf(", %.2f extents/file, layout score %.3f", a.Layout.ExtentsPerFile, a.Layout.Score)
	}
	if a.FreeExtents > 0 {
		s += fmt.Sprintf(", %d free extents of %.0f KiB on average", a.FreeExtents, a.FreeExtentAvgBytes/1024)
	}
	s += fmt.Sprintf(", fsck %.2f s (%s), mount %.3f s", a.FsckSeconds, a.Fsck, a.MountSeconds)
	if a.CardHostBytes > 0 {
		s += fmt.Sprintf(", card WA %.2f, %d erases", a.CardWA, a.CardErases)
	}
	if a.EndedEarly != "" {
		s += "; ended early: " + a.EndedEarly
	}
	if a.Trimmed != "" {
		s += "; " + a.Trimmed
	}
	if a.Reclaims > 0 {
		s += fmt.Sprintf("; the filesystem gave back the space of deleted data %d times when full (a cleaner pass with no protection period)", a.Reclaims)
	}
	return s
}

// readTests reads every file of the mounted filesystem that the tests wrote: all of it, less an
// aged variant's aged tree, whose reading would be a different workload from the fresh twin's.
func (r *rep) readTests(ctx context.Context) (dataset.ReadStats, error) {
	if r.v.Age == "" {
		return dataset.ReadTree(ctx, r.env.Mountpoint)
	}
	entries, err := os.ReadDir(r.env.Mountpoint)
	if err != nil {
		return dataset.ReadStats{}, err
	}
	var st dataset.ReadStats
	for _, e := range entries {
		if e.Name() == aging.Dir || !e.IsDir() && !e.Type().IsRegular() {
			continue
		}
		var s dataset.ReadStats
		if e.IsDir() {
			s, err = dataset.ReadTree(ctx, filepath.Join(r.env.Mountpoint, e.Name()))
		} else {
			s, err = readOne(filepath.Join(r.env.Mountpoint, e.Name()))
		}
		if err != nil {
			return st, err
		}
		st.Files += s.Files
		st.Bytes += s.Bytes
	}
	return st, nil
}

func readOne(path string) (dataset.ReadStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return dataset.ReadStats{}, err
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, f)
	return dataset.ReadStats{Files: 1, Bytes: uint64(n)}, err
}
