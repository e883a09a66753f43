package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
)

func init() {
	plan.RegisterTargetForm(plan.TargetImage, plan.TargetForm{Usage: "image (the default)", Parse: plan.NoArg(plan.TargetImage)})
	targets.RegisterKind(plan.TargetImage, targets.LocalDevice, func(b targets.Base) targets.Target { return &imageTarget{b} })
}

// imageTarget is the default: a sparse image file, attached as a loop device with direct I/O.
type imageTarget struct{ targets.Base }

// Check refuses an --image that exists or cannot be made, and an image larger than the free
// space of the filesystem that would hold it: the image is sparse, but a run writes up to its
// whole size into it, and a full host filesystem fails the run's writes half-way.
func (t *imageTarget) Check(cfg plan.Config) error {
	if err := targets.CheckNoPowerCut(cfg, "an image file", "its loop device has no card model to record the requests and lose power"); err != nil {
		return err
	}
	if err := targets.CheckBlockSuite(cfg); err != nil {
		return err
	}
	if err := targets.CheckCardEnds(cfg, "an image file"); err != nil {
		return err
	}
	dir := ""
	if t.Opt.Image != "" {
		abs, err := filepath.Abs(t.Opt.Image)
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
		return targets.CheckRoom(dir, cfg.Size, "--image")
	}
	return nil
}

func (t *imageTarget) Prepare(ctx context.Context, s *session.Session, cfg plan.Config) (*targets.Prepared, error) {
	img := t.Opt.Image
	if img == "" {
		img = filepath.Join(s.Work, "fsbench.img")
		if err := targets.CheckRoom(s.Work, cfg.Size, "--image"); err != nil {
			return nil, err
		}
	}
	img, err := filepath.Abs(img)
	if err != nil {
		return nil, err
	}
	// Recorded only once the exclusive create made it ours: a file of that name that was there
	// already (the create fails) is never in the ledger, so no cleanup can delete it.
	if err := session.CreateImage(img, cfg.Size); err != nil {
		return nil, err
	}
	if !t.Opt.KeepImage {
		if err := s.Ledger.AddFile(img); err != nil {
			return nil, errors.Join(err, targets.RemoveFile(img))
		}
		s.OnClose("image "+img, func() error { return s.Ledger.RemoveOwnFile(img) })
	}
	p := &targets.Prepared{Size: cfg.Size, Underlying: img, Result: results.Target{Kind: results.KindImage, Image: img}}
	if err := targets.AttachLoopTo(s, img, !t.Opt.NoDirectIO, p); err != nil {
		return nil, err
	}
	p.Health = func() error { return targets.BackingHealth(filepath.Dir(img), "image "+img) }
	return p, nil
}
