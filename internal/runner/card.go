package runner

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/fsbench/fsbench/internal/capacity"
	"github.com/fsbench/fsbench/internal/cardid"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/targets"
)

// checkCard is the run's seam to the card it runs on, called once the target is prepared and
// before anything is written: on a real device (a destructive run), the capacity check, which
// refuses a card that holds less than it announces (unless opt.NoCapacityCheck); on a real
// device or a simulated card, a reading of the card's identity and health. The returned finish
// reads them again after the run, with the delta, into the same CardCheck. Other targets (an
// image, a guest, a board, which checks its own card) get nil and a no-op.
func checkCard(ctx context.Context, opt Options, caps targets.Capability, prep *targets.Prepared, logf func(string, ...any)) (*results.CardCheck, func(), error) {
	if (!caps.Has(targets.UserDevice) && !caps.Has(targets.CardModel)) || prep.Device == "" {
		return nil, func() {}, nil
	}
	cc := &results.CardCheck{}
	if caps.Has(targets.UserDevice) {
		if opt.NoCapacityCheck {
			cc.CapacitySkipped = "--no-capacity-check: the card was not checked for holding what it announces"
		} else {
			c, err := capacityCheck(ctx, prep.Device, logf)
			cc.Capacity = c
			if err != nil {
				return cc, func() {}, err
			}
		}
	} else {
		cc.CapacitySkipped = "a simulated card: its profile says what it holds (fsbench probe --capacity checks one)"
	}
	before, err := cardid.Read(ctx, prep.Device, cardid.Options{})
	if err != nil {
		logf("warning: the card's identity could not be read: %v", err)
		return cc, func() {}, nil
	}
	cc.Before = results.FromReading(before)
	logf("card: %s", before.Describe())
	stats := cardStats(prep)
	erased := func() (uint64, bool) {
		if stats == nil {
			return 0, false
		}
		s, err := stats()
		return s.Counters.BlocksErased, err == nil
	}
	e0, haveE := erased()
	finish := func() {
		after, err := cardid.Read(context.WithoutCancel(ctx), prep.Device, cardid.Options{})
		if err != nil {
			logf("warning: the card's identity could not be read after the run: %v", err)
			return
		}
		cc.After = results.FromReading(after)
		cc.HealthDelta = results.FromDelta(cardid.Compare(before, after))
		if e1, ok := erased(); ok && haveE {
			n := e1 - e0
			cc.ModelledErases = &n
		}
	}
	return cc, finish, nil
}

// runMaxCache is the largest write cache the check before a run writes past.
const runMaxCache = 64 << 20

// capacityCheck runs fsbench probe --capacity's check on dev; a card that is not genuine, or
// that could not be put back as it was, stops the run with the verdict's exit code.
func capacityCheck(ctx context.Context, dev string, logf func(string, ...any)) (*results.CapacityCheck, error) {
	logf("checking that %s holds what it announces (fsbench probe --capacity; --no-capacity-check skips it)", dev)
	t, err := capacity.OpenTarget(ctx, dev)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	// Before a run, caches of up to 64 MiB are written past (where the card cannot be reset):
	// the counterfeits f3's users report cache 1-31 MB, and 1 GiB, probe --capacity's bound,
	// would add minutes to every run. The method and its bound are recorded.
	r, err := capacity.Probe(ctx, t, capacity.Options{Log: logf, MaxCache: runMaxCache})
	if r != nil && r.Restored && errors.Is(err, syscall.ENOSPC) {
		// A board whose root filesystem is in RAM (a LAVA ramdisk) may have no room for an undo
		// log as large as the blocks the check writes past a cache. The card is as it was (the
		// log is synced before each overwrite, and what it held was put back); the run formats
		// the device next (it was named with --destroy), so the check runs again without one.
		logf("no room for the capacity check's undo log (%v): checking %s again without one, since the run destroys its data next; a card the check refuses is then left with the check's blocks on it", err, dev)
		r, err = capacity.Probe(ctx, t, capacity.Options{Log: logf, MaxCache: runMaxCache, NoUndo: true})
		if r == nil {
			return nil, err
		}
		r.Method += "; without an undo log (no room for one): the blocks it wrote were not put back"
	}
	if r == nil {
		return nil, err
	}
	c := &results.CapacityCheck{Verdict: r.Verdict, Class: r.Class, AnnouncedBytes: r.Announced, UsableBytes: r.Usable,
		BytesWritten: r.BytesWritten, Seconds: r.Seconds, Method: r.Method, Why: r.Why}
	if err != nil {
		return c, err
	}
	logf("capacity check: %s: %s", r.Verdict, r.Why)
	if r.ExitCode() != capacity.ExitGenuine {
		return c, fmt.Errorf("the run was not started: %w (fsbench probe --capacity %s explains the verdict; --no-capacity-check runs anyway)", capacity.VerdictError{R: r}, dev)
	}
	return c, nil
}
