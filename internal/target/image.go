package target

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
)

// imageTarget is the default: a sparse image file, attached as a loop device with direct I/O.
type imageTarget struct {
	opt Options
}

func (t *imageTarget) Spec() plan.TargetSpec                 { return plan.TargetSpec{Kind: plan.TargetImage} }
func (t *imageTarget) Expand(cfg plan.Config) []Expanded     { return sameVariants(cfg) }
func (t *imageTarget) Methods(plan.Config) map[string]string { return nil }

// Check refuses an --image that exists or cannot be made, and an image larger than the free
// space of the filesystem that would hold it: the image is sparse, but a run writes up to its
// whole size into it, and a full host filesystem fails the run's writes half-way.
func (t *imageTarget) Check(cfg plan.Config) error {
	if err := checkNoPowerCut(cfg, "an image file", "its loop device has no card model to record the requests and lose power"); err != nil {
		return err
	}
	if err := checkBlockSuite(cfg); err != nil {
		return err
	}
	dir := ""
	if t.opt.Image != "" {
		abs, err := filepath.Abs(t.opt.Image)
		if err != nil {
			return err
		}
		if _, err := os.Lstat(abs); err == nil {
			return plan.Refusef("--image %s already exists: fsbench creates the image itself and never overwrites a file; remove it or choose another path", abs)
		}
		dir = filepath.Dir(abs)
		if err := unix.Access(dir, unix.W_OK); err != nil {
			return plan.Refusef("--image %s: cannot create a file in %s (%v): choose a writable place", abs, dir, err)
		}
	}
	if dir != "" {
		return checkRoom(dir, cfg.Size, "--image")
	}
	return nil
}

// checkRoom refuses a sparse image of size bytes in dir when dir's filesystem has less free
// space than that.
func checkRoom(dir string, size uint64, what string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // the directory does not exist yet; making it will say what is wrong
	}
	free := st.Bavail * uint64(st.Bsize)
	if free < size {
		return plan.Refusef("the filesystem holding %s (%s) has %s free, but the run writes up to %s into its sparse image: use a smaller --size (at most %s) or put the image elsewhere with %s",
			dir, what, bytesize.Format(free), bytesize.Format(size), bytesize.Format(free/(1<<20)*(1<<20)), what)
	}
	return nil
}

func (t *imageTarget) Prepare(ctx context.Context, s *Session, cfg plan.Config) (*Prepared, error) {
	img := t.opt.Image
	if img == "" {
		img = filepath.Join(s.Work, "fsbench.img")
		if err := checkRoom(s.Work, cfg.Size, "--image"); err != nil {
			return nil, err
		}
	}
	img, err := filepath.Abs(img)
	if err != nil {
		return nil, err
	}
	// Recorded only once the exclusive create made it ours: a file of that name that was there
	// already (the create fails) is never in the ledger, so no cleanup can delete it.
	if err := CreateImage(img, cfg.Size); err != nil {
		return nil, err
	}
	if !t.opt.KeepImage {
		if err := s.Ledger.AddFile(img); err != nil {
			return nil, errors.Join(err, removeFile(img))
		}
		s.OnClose("image "+img, func() error { return s.Ledger.RemoveOwnFile(img) })
	}
	p := &Prepared{Size: cfg.Size, Underlying: img, Result: results.Target{Kind: results.KindImage, Image: img}}
	if err := attachLoopTo(s, img, t.opt.DirectIO, p); err != nil {
		return nil, err
	}
	p.Health = func() error { return backingHealth(filepath.Dir(img), "image "+img) }
	return p, nil
}

// attachLoopTo binds a loop device to backing, records and registers its detaching, and fills the
// device fields of p.
func attachLoopTo(s *Session, backing string, direct bool, p *Prepared) error {
	loop, err := AttachLoop(backing, LoopOptions{DirectIO: direct})
	if err != nil {
		return err
	}
	if err := s.Ledger.AddLoop(loop.Path, backing); err != nil {
		loop.Detach()
		return err
	}
	s.OnClose("loop device "+loop.Path, loop.Detach)
	if direct && !loop.DirectIO {
		p.Notes = append(p.Notes, fmt.Sprintf("warning: the kernel did not enable direct I/O on %s (the backing file's filesystem may not support O_DIRECT): reads may be answered by the host's page cache", loop.Path))
	}
	p.Device, p.DeviceName = loop.Path, loop.Name
	p.Result.SizeBytes, p.Result.Device, p.Result.LoopMethod, p.Result.DirectIO = p.Size, loop.Path, loop.Method, loop.DirectIO
	if id, err := blockdev.Identify("/sys", loop.Name); err == nil {
		p.Identity = &id
	} else {
		p.Notes = append(p.Notes, fmt.Sprintf("warning: reading the identity of %s: %v", loop.Name, err))
	}
	return nil
}

// backingHealth says when the filesystem holding a loop device's backing file is full: the
// loop device's writes then fail with I/O errors that look like the tested filesystem's own.
func backingHealth(dir, what string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil
	}
	if free := st.Bavail * uint64(st.Bsize); free < 4<<20 {
		return fmt.Errorf("the filesystem holding the %s is full (%s free): the device's writes failed there, not in the filesystem under test; free some space or put the image on a larger filesystem (--image)", what, bytesize.Format(free))
	}
	return nil
}

// removeFile removes a file the run made; already gone is fine.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CreateImage creates a sparse file of size bytes at path: no data blocks are allocated until
// something writes them. It refuses to overwrite an existing file (O_EXCL), so a mistyped
// path can never clobber a user's data. size must be a positive multiple of 512, the unit a
// loop device exposes (the kernel silently ignores a shorter tail).
func CreateImage(path string, size uint64) error {
	if size == 0 || size%512 != 0 {
		return fmt.Errorf("create image %s: size %d bytes: want a positive multiple of 512", path, size)
	}
	if size > math.MaxInt64 {
		return fmt.Errorf("create image %s: size %d bytes is too large", path, size)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create image %s: the file already exists; remove it or choose another path", path)
	}
	if err != nil {
		return fmt.Errorf("create image %s: %w", path, err)
	}
	// ftruncate extends the file with a hole; the file system allocates nothing for it.
	err = f.Truncate(int64(size))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// The file is ours (O_EXCL): removing a half-made one is safe.
		_ = os.Remove(path)
		return fmt.Errorf("create image %s of %d bytes: %w", path, size, err)
	}
	return nil
}
