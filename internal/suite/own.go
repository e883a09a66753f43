package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/endurance"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/trace"
)

// The repetition as a suite that makes its filesystem itself sees it (suites.Suite.OwnSetup,
// the endurance suite): the setup tests' work on demand, unrecorded.

// Device is the block device the filesystem lives on.
func (r *rep) Device() string { return r.env.Device }

// Make empties the device (or fills it, for a used card) and makes and mounts a fresh
// filesystem, as the setup tests do, without recording them.
func (r *rep) Make(ctx context.Context) error {
	if err := r.Unmount(ctx); err != nil {
		return err
	}
	args := r.v.MkfsArgs
	if r.env.CardState == plan.CardUsed {
		if err := r.fillDevice(ctx); err != nil {
			return err
		}
		args = fs.NoDiscardArgs(r.k, args)
	} else if err := r.discardDevice(ctx); err != nil {
		return err
	}
	// The mkfs and the first mount are the card's past, from which the lifetime of the days
	// that follow starts (as a default run's traced mkfs and mount are).
	return r.tracePast(func() error {
		if err := fs.Mkfs(ctx, r.env.Run, r.k, r.env.Device, args); err != nil {
			return err
		}
		if st := fs.LoadModule(ctx, r.env.Run, r.env.System, r.k); st.State == "unavailable" {
			return fmt.Errorf("loading module %s: %s", st.Module, st.Error)
		}
		return r.Mount(ctx)
	})
}

// tracePast runs fn and, where the run traces, makes the requests it sent the card's past
// (rep.past). A trace that fails leaves the past empty: the lifetime then starts from an empty
// card, as it did before the past was kept.
func (r *rep) tracePast(fn func() error) error {
	r.past = nil
	if r.env.Tracing == nil || r.noTrace {
		return fn()
	}
	capt, err := trace.Start(r.env.DeviceName)
	if err != nil {
		return fn()
	}
	ferr := fn()
	t, err := capt.Stop()
	if t != nil && err == nil {
		t.Shift(r.env.PartitionStart)
		r.addPast(t)
	}
	return ferr
}

// Mount mounts the filesystem the device holds, once the device's buffers are dropped: the
// device may have been changed underneath (a simulated card restored), and what is read next
// must come from it.
func (r *rep) Mount(ctx context.Context) error {
	if r.mounted {
		return nil
	}
	if err := flushBuffers(r.env.Device); err != nil {
		return err
	}
	if err := fs.Mount(ctx, r.k, r.env.Device, r.env.Mountpoint, r.v.MountOptions); err != nil {
		return err
	}
	r.mounted = true
	return nil
}

// flushBuffers writes back and drops the device's own page cache (BLKFLSBUF).
func flushBuffers(dev string) error {
	f, err := os.Open(dev)
	if err != nil {
		return fmt.Errorf("opening %s to drop its buffers: %w", dev, err)
	}
	defer f.Close()
	return blockdev.FlushBuffers(f)
}

// Card is the simulated card's wear; nil on a real device.
func (r *rep) Card() endurance.Card { return r.env.Endurance }

// CardProfile is the simulated card's profile ("" elsewhere).
func (r *rep) CardProfile() string { return r.env.CardProfile }

// RunTest runs a registered test of the engine on the mounted filesystem.
func (r *rep) RunTest(ctx context.Context, test string) ([]results.Measurement, error) {
	for _, s := range suites.All() {
		if t, ok := Lookup(s.Name, test); ok && t.Run != nil && !t.Setup {
			if !r.mounted {
				return nil, fmt.Errorf("%s: the filesystem is not mounted on %s", test, r.env.Mountpoint)
			}
			return t.Run(ctx, r)
		}
	}
	return nil, fmt.Errorf("no test %q to run", test)
}

// Trace turns the block trace of the timed spans that follow on or off; on, it starts a new
// day of writes (the write tests whose requests make day_lifetime_years).
func (r *rep) Trace(on bool) {
	r.noTrace = !on
	if on {
		// The day before is now the card's past: what it left on the card (data the
		// filesystem has since freed but never told the card about, where its allocator has
		// moved on) stays there under the next day, as on the real card. Repeating one day on
		// a card that holds only mkfs's writes predicted ext4's cards a fifth too long: its
		// allocator spreads the days over the whole card.
		r.past = append(r.past, r.day...)
		r.day = nil
	}
}

// Dataset is the run's generated dataset and the Bootlin tests' numbers of copies.
func (r *rep) Dataset() (tree, video string, copies, videoCopies int) {
	return r.env.Source, r.env.Video, r.env.Copies, r.env.VideoCopies
}

// StateDir is DIR/name in the run's results directory, made on first use.
func (r *rep) StateDir(name string) (string, error) {
	if r.env.ResultsDir == "" {
		return "", fmt.Errorf("the run has no results directory for %s's state", name)
	}
	d := filepath.Join(r.env.ResultsDir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("%s's state directory: %w", name, err)
	}
	return d, nil
}

// Timeout is the per-test timeout.
func (r *rep) Timeout() time.Duration { return r.env.Timeout }
