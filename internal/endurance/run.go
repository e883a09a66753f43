package endurance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/results"
)

// BadBlockShares are the shares of its spare blocks at which a card's bad-block growth is
// recorded (Endurance.BadBlocks, in this order).
var BadBlockShares = []float64{0.10, 0.25, 0.50}

// Runner runs one card to its end: one variant's filesystem on one card.
type Runner struct {
	FS       FS
	Card     Card // nil: a real card, which keeps its own state
	Workload Workload
	// Env is the workloads' environment; its Dir, Remount and Seed are set by the runner.
	Env    Env
	Params Params
	// Dir is the card's state directory (in the results directory: it outlives the process).
	Dir string
	// Name says which card this is in lines of the log ("ext4 #2").
	Name string
	// CardName, Behaviour, Scale and CardSeed describe the card for the record.
	CardName, Behaviour string
	Scale               float64
	CardSeed            uint64
	// Trace turns the block trace of the next timed measurements on or off, and on starts a new
	// day of writes: the first PredictRounds rounds are traced (their lifetime estimates are
	// the prediction), the others are not (nil: nothing to turn).
	Trace func(on bool)
	// Predict turns a traced round's measurements into the rounds to the first error the wear
	// line predicts at the card's scale, the lifetime at scale 1 and where they come from
	// (rounds 0: no prediction). The card's prediction is the median over its first
	// PredictRounds rounds (0: 3), as the wear line's is the median over repetitions: one
	// day's estimate varies with what that day's writes happened to be.
	Predict       func(day []results.Measurement) (rounds, years float64, from string)
	PredictRounds int
	// Log writes a line to the run's log; Now is the clock (tests fake it).
	Log func(format string, args ...any)
	Now func() time.Time
	// Progress is how often a round in progress is logged (0: every 30 s): a real card's
	// rounds take hours.
	Progress time.Duration

	st       *State
	csv      *csvLog
	lastSnap time.Time
	rounds   float64 // seconds of the rounds run in this process, for the estimate
	ran      int
}

// Run runs the card from where its state directory says it is (from its first round when it
// has none) to its end, and returns its record. A run interrupted (ctx) returns ctx's error
// with the state of the last round it completed saved; run again, it goes on from there.
func (r *Runner) Run(ctx context.Context) (*results.Endurance, error) {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Log == nil {
		r.Log = func(string, ...any) {}
	}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("the card's state directory: %w", err)
	}
	csv, err := openCSV(filepath.Join(r.Dir, csvFile))
	if err != nil {
		return nil, err
	}
	defer csv.close()
	r.csv = csv
	if err := r.start(ctx); err != nil {
		return nil, err
	}
	if r.st.Done {
		return &r.st.Result, nil // the card reached its end in an earlier run
	}
	for !r.st.Done {
		if err := r.round(ctx); err != nil {
			return nil, err
		}
	}
	return &r.st.Result, nil
}

// start loads the card's state and readies the card and filesystem: fresh for a card that
// has none, restored (a simulated card's last snapshot) or mounted (a real card) to go on.
func (r *Runner) start(ctx context.Context) error {
	st, err := loadState(r.Dir)
	if err != nil {
		return err
	}
	if st != nil && st.Done {
		r.st = st
		return nil
	}
	if r.Card != nil {
		// A simulated card goes on from its last snapshot, with the state saved with it.
		snap := filepath.Join(r.Dir, snapDir)
		if s, err := loadState(snap); err != nil {
			return err
		} else if s != nil && st != nil {
			if err := r.FS.Unmount(ctx); err != nil {
				return err
			}
			if err := r.Card.Restore(snap); err != nil {
				return fmt.Errorf("restoring the simulated card from %s: %w", snap, err)
			}
			r.st = s
			return r.resume(ctx)
		}
		st = nil // killed before its first snapshot: start the card again
	}
	if st != nil {
		r.st = st
		if err := r.FS.Mount(ctx); err != nil {
			return fmt.Errorf("resuming %s: mounting the card's filesystem: %w (is the card in the reader the one this run was using?)", r.Name, err)
		}
		if id := fsid(r.FS.Dir()); id != st.FSID {
			return fmt.Errorf("resuming %s: the filesystem on the device (id %s) is not the one this run made (id %s): put that card back in, or start a new run in another results directory", r.Name, id, st.FSID)
		}
		return r.resume(ctx)
	}
	r.st = &State{Workload: r.Workload.Name(), CardSeed: r.CardSeed, Seed: r.Params.Seed, Manifest: NewManifest(),
		Result: results.Endurance{Workload: r.Workload.Name(), Card: r.CardName, Behaviour: r.Behaviour, Scale: r.Scale, Seed: r.CardSeed, FSErrors: -1, Corruption: -1}}
	if r.Card != nil {
		if err := r.FS.Unmount(ctx); err != nil {
			return err
		}
		if err := r.Card.Renew(r.CardSeed); err != nil {
			return fmt.Errorf("a fresh simulated card: %w", err)
		}
	}
	if err := r.make(ctx); err != nil {
		return fmt.Errorf("making the filesystem on the fresh card: %w", err)
	}
	r.st.FSID = fsid(r.FS.Dir())
	r.Log("endurance %s: a fresh card (%s), %s each round", r.Name, r.CardName, r.Workload.Name())
	return r.st.save(r.Dir)
}

// make makes the fresh filesystem. A device still held a while after the last card's end is
// waited for, up to about five minutes, before the card's run gives up: seen on a machine
// running other tests, after btrfs ended on a card that turned read-only, the unmounted
// filesystem stayed alive for three minutes (the kernel said its last unmount then), held by
// nothing a process table shows, the device busy all that time.
func (r *Runner) make(ctx context.Context) error {
	var err error
	for try := 0; try < 15; try++ {
		if err = r.FS.Make(ctx); err == nil || !errors.Is(err, syscall.EBUSY) {
			return err
		}
		r.Log("endurance %s: the device is still busy (%v); trying again", r.Name, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
	return err
}

// resume brings the filesystem back to what was promised and notes the resumption. A
// simulated card saved with its day done (Pending) goes on at the day's verification, from the
// card the snapshot kept; another goes on at its next day.
func (r *Runner) resume(ctx context.Context) error {
	r.st.Result.Resumed++
	if r.st.Pending != nil {
		r.Log("endurance %s: resuming at round %d's verification", r.Name, r.st.Pending.N)
		return nil
	}
	if err := r.FS.Mount(ctx); err != nil && r.Card != nil {
		return fmt.Errorf("resuming %s: mounting the restored card: %w", r.Name, err)
	}
	if err := r.Workload.Resume(ctx, r.env(), r.st.Manifest); err != nil {
		return fmt.Errorf("resuming %s: %w", r.Name, err)
	}
	r.Log("endurance %s: resuming after round %d", r.Name, r.st.Round)
	return nil
}

// env is the workload's environment for this card.
func (r *Runner) env() Env {
	e := r.Env
	e.Dir = r.FS.Dir()
	e.Seed = r.Params.Seed
	return e
}

// round runs one round: the workload's day; the filesystem unmounted (a simulated card's
// snapshot taken then, when due) and mounted again, so that what is read next comes from the
// card; every promise read back and compared; the card's wear, the milestones, the state
// saved. It marks the state done when the round was the card's last. One mount cycle a round,
// snapshot or not, so that the card sees the same requests whenever the snapshots are taken: a
// resumed run's card goes through what an uninterrupted run's did.
func (r *Runner) round(ctx context.Context) error {
	st := r.st
	n := st.Round + 1
	if st.Pending == nil {
		if err := r.day(ctx, n); err != nil {
			return err
		}
	}
	p := st.Pending
	end := ""
	if p.Err != "" {
		end = r.dayError(n, p)
	}
	check := p.Verified
	if err := r.FS.Mount(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		end = firstOf(end, "the filesystem no longer mounts: "+err.Error())
		if isIO(err) {
			r.ioError(n, 1, st.Logical+p.Logical, "mount: "+err.Error())
		} else {
			// It refused what it found on the card (wrong data where its metadata was): an
			// error the host saw, if nothing came before it.
			st.Result.Unmountable = true
			r.first(results.Milestone{Round: float64(n), Bytes: st.Logical + p.Logical, DeviceBytes: st.Device, What: "the filesystem refused to mount: " + err.Error()})
		}
	} else {
		// Every promise read back from the card, without writing to it (see Check.file).
		check.Add(st.Manifest.Verify(r.FS.Dir()))
	}
	fsNow := r.FS.State()
	dev, _ := r.FS.DeviceBytesWritten()
	st.Logical += p.Logical
	st.Device += dev - p.Device
	if err := r.account(n, p, check, fsNow); err != nil {
		return err
	}
	// The card's own end says most; then what the filesystem did; then the run's bounds.
	if e := r.ended(n, fsNow); e != "" && (end == "" || r.cardEnded()) {
		end = e
	}
	st.Round, st.Pending = n, nil
	took := r.Now().Sub(p.Start).Seconds()
	st.Seconds += took
	r.rounds += took
	r.ran++
	res := &st.Result
	if end != "" {
		st.Done = true
		res.End = results.Milestone{Round: float64(n), Bytes: st.Logical, DeviceBytes: st.Device, What: end}
		if err := r.FS.Unmount(ctx); err != nil {
			return err
		}
		if r.Card != nil {
			if err := r.snapshot(); err != nil {
				return err
			}
		}
	}
	res.Rounds = n
	res.DayBytes = float64(st.Logical) / float64(n)
	if err := st.save(r.Dir); err != nil {
		return err
	}
	r.logRound(n)
	if st.Done {
		r.Log("endurance %s: the end after round %d: %s", r.Name, n, end)
		r.csv.row(r.Now(), n, "end", st, 0, end)
	}
	return nil
}

// day runs round n's day and leaves it pending (Pending) with the filesystem unmounted: a
// simulated card's snapshot, when due, keeps the card and the state as they are then.
func (r *Runner) day(ctx context.Context, n int) error {
	st := r.st
	p := &Pending{N: n, Start: r.Now()}
	p.Device, _ = r.FS.DeviceBytesWritten()
	if r.Card != nil {
		c, err := r.Card.Status()
		if err != nil {
			return err
		}
		p.Card = c.HostBytesWritten
	}
	predicting := n <= r.predictRounds() && r.Predict != nil
	if r.Trace != nil {
		r.Trace(predicting)
	}
	stop := r.progress(ctx, n, p)
	day, derr := r.Workload.Day(ctx, r.env(), n, st.Manifest)
	stop()
	if ctx.Err() != nil {
		return ctx.Err() // the round is not complete: a resumed run does it again
	}
	if predicting {
		r.predict(day.Measurements)
	}
	p.Logical, p.Seconds, p.Verified = day.Logical, day.Seconds, day.Verified
	if derr != nil {
		p.Err, p.IO, p.ReadOnly, p.Full = derr.Error(), isIO(derr), errors.Is(derr, syscall.EROFS), errors.Is(derr, syscall.ENOSPC)
	}
	st.Pending = p
	if err := r.FS.Unmount(ctx); err != nil {
		return err
	}
	if r.Card != nil && (r.lastSnap.IsZero() || r.Now().Sub(r.lastSnap) >= r.Params.SnapshotEvery) {
		if err := r.snapshot(); err != nil {
			return err
		}
		r.lastSnap = r.Now()
	}
	return nil
}

func (r *Runner) predictRounds() int {
	if r.PredictRounds <= 0 {
		return 3
	}
	return r.PredictRounds
}

// predict adds a traced round's prediction and makes the card's the median of them so far.
func (r *Runner) predict(day []results.Measurement) {
	res := &r.st.Result
	rounds, years, from := r.Predict(day)
	if rounds <= 0 {
		return
	}
	res.PredictedEach = append(res.PredictedEach, rounds)
	res.PredictedRounds = median(res.PredictedEach)
	res.PredictedYears = res.PredictedRounds / rounds * years
	res.PredictedFrom = fmt.Sprintf("the median over rounds 1 to %d of %s", len(res.PredictedEach), from)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// dayError records what a failed day says and returns why the card's run ends, or "" when a
// card that still answers is given more rounds (an I/O error on a card that still works).
func (r *Runner) dayError(n int, p *Pending) string {
	logical := r.st.Logical + p.Logical
	switch {
	case p.IO:
		r.st.Result.IOErrors++
		r.ioError(n, 1, logical, p.Err)
		return ""
	case p.ReadOnly:
		r.fsReadOnly(n, logical, p.Err)
		return "the filesystem turned read-only: " + p.Err
	case p.Full:
		return "the filesystem ran out of space: " + p.Err
	}
	return "the day failed: " + p.Err
}

// account records the round's figures and milestones: what the verification found, the
// card's wear, the filesystem's own counters, the round's point in the series.
func (r *Runner) account(n int, day *Pending, check Check, fsNow FSState) error {
	st, res := r.st, &r.st.Result
	res.Unreadable += check.Unreadable
	res.Missing += check.Missing
	res.Wrong += check.Wrong
	res.IOErrors += check.IOErrors
	for _, p := range check.Problems {
		if len(res.Problems) < maxProblems {
			res.Problems = append(res.Problems, fmt.Sprintf("round %d: %s", n, p))
		}
	}
	if check.IOErrors > 0 {
		r.ioError(n, 1, st.Logical, "a promised file failed to read")
	}
	if check.Wrong > 0 && !res.WrongData.Reached() {
		res.WrongData = results.Milestone{Round: float64(n), Bytes: st.Logical, DeviceBytes: st.Device,
			What: fmt.Sprintf("%d promised files read back wrong without an error", check.Wrong)}
		r.first(res.WrongData)
	}
	if fsNow.ReadOnly {
		r.fsReadOnly(n, st.Logical, "the filesystem is mounted read-only")
	}
	res.FSErrors, res.Corruption = fsNow.Errors, fsNow.Corruption
	p := results.EndurancePoint{Round: n, Bytes: day.Logical, Seconds: day.Seconds}
	if day.Seconds > 0 {
		p.MBps = float64(day.Logical) / 1e6 / day.Seconds
	}
	if r.Card != nil {
		c, err := r.Card.Status()
		if err != nil {
			return err
		}
		r.cardWear(n, c)
		st.CardBytes = c.HostBytesWritten
		p.BadBlocks, p.SpareLeft, p.Health, p.CardBytes = c.BadBlocks, c.SpareLeft, string(c.Health), c.HostBytesWritten
	}
	if len(res.Series) == 0 || day.Seconds > 0 {
		if res.SpeedFirst == 0 {
			res.SpeedFirst = p.MBps
		}
		if p.MBps > 0 {
			res.SpeedLast = p.MBps
		}
	}
	res.Series = append(res.Series, p)
	return nil
}

// cardWear records the simulated card's bad blocks and health: the bad-block milestones, the
// card's first refusal (the host's first I/O error, at the byte the card counted) and its turning
// read-only, each at the share of the round's bytes the card had received by then.
func (r *Runner) cardWear(n int, c Status) {
	st, res := r.st, &r.st.Result
	res.SpareBlocks = c.SpareBlocks
	if len(res.BadBlocks) < len(BadBlockShares) {
		res.BadBlocks = append(res.BadBlocks, make([]results.Milestone, len(BadBlockShares)-len(res.BadBlocks))...)
	}
	for i, share := range BadBlockShares {
		if !res.BadBlocks[i].Reached() && c.SpareBlocks > 0 && float64(c.BadBlocks) >= share*float64(c.SpareBlocks) {
			res.BadBlocks[i] = results.Milestone{Round: float64(n), Bytes: st.Logical, DeviceBytes: c.HostBytesWritten,
				What: fmt.Sprintf("%d bad blocks, %.0f %% of the %d spares", c.BadBlocks, 100*share, c.SpareBlocks)}
		}
	}
	if c.FirstErrorWrites == 0 || st.CardError {
		return // no error yet, or in the record already
	}
	st.CardError = true
	at, logical := r.cardRound(n, c)
	switch c.Health {
	case "read-only", "dead":
		r.ioErrorAt(at, logical, c.FirstErrorHostBytes, "the card refused a request: "+string(c.Health))
		if c.Health == "read-only" && !res.ReadOnly.Reached() {
			res.ReadOnly = results.Milestone{Round: at, Bytes: logical, DeviceBytes: c.FirstErrorHostBytes, What: "the card turned read-only"}
		}
	}
}

// cardRound places the card's first error among the rounds by the bytes the card had received:
// round k's share of the bytes the card received between the end of round k-1 and its own end
// (what the card took between two rounds, mounting and unmounting, counts to the next), and
// the bytes written through the filesystem by then, in the same share of that round's.
func (r *Runner) cardRound(n int, c Status) (at float64, logical uint64) {
	res := &r.st.Result
	fe := c.FirstErrorHostBytes
	var b0, l0 uint64
	for _, p := range res.Series {
		if fe <= p.CardBytes && p.CardBytes > b0 {
			frac := float64(fe-b0) / float64(p.CardBytes-b0)
			return float64(p.Round-1) + frac, l0 + uint64(frac*float64(p.Bytes))
		}
		b0, l0 = p.CardBytes, l0+p.Bytes
	}
	// In this round: its share of a whole round's bytes (the card stops taking them when it
	// fails, so the round's own count would put every failure at its end).
	frac, whole := 1.0, float64(c.HostBytesWritten-b0)
	if k := len(res.Series); k > 0 && b0 > 0 {
		whole = float64(b0) / float64(res.Series[k-1].Round)
	}
	if whole > 0 && fe >= b0 {
		frac = math.Min(1, float64(fe-b0)/whole)
	}
	day := r.st.Logical - l0 // this round's bytes (the state counts them already)
	return float64(n-1) + frac, l0 + uint64(frac*float64(day))
}

// ioError records an I/O error the host saw in round n (at the round's end: frac 1).
func (r *Runner) ioError(n int, frac float64, logical uint64, what string) {
	r.ioErrorAt(float64(n-1)+frac, logical, r.st.Device, what)
}

func (r *Runner) ioErrorAt(at float64, logical, device uint64, what string) {
	res := &r.st.Result
	if res.IOError.Reached() && res.IOError.Round <= at {
		return
	}
	res.IOError = results.Milestone{Round: at, Bytes: logical, DeviceBytes: device, What: what}
	r.first(res.IOError)
}

// first makes m the first error when it came before the one recorded.
func (r *Runner) first(m results.Milestone) {
	res := &r.st.Result
	if !res.FirstError.Reached() || m.Round < res.FirstError.Round {
		res.FirstError = m
	}
}

func (r *Runner) fsReadOnly(n int, logical uint64, what string) {
	if res := &r.st.Result; !res.FSReadOnly.Reached() {
		res.FSReadOnly = results.Milestone{Round: float64(n), Bytes: logical, DeviceBytes: r.st.Device, What: what}
	}
}

// cardEnded reports whether the simulated card is read-only or dead.
func (r *Runner) cardEnded() bool {
	if r.Card == nil {
		return false
	}
	c, err := r.Card.Status()
	return err == nil && (c.Health == "dead" || c.Health == "read-only")
}

// ended says why the card's run ends after round n, or "".
func (r *Runner) ended(n int, fsNow FSState) string {
	res := &r.st.Result
	if r.Card != nil {
		if c, err := r.Card.Status(); err == nil {
			switch c.Health {
			case "dead":
				return "the card stopped responding"
			case "read-only":
				return "the card turned read-only"
			}
		}
	}
	switch {
	case fsNow.ReadOnly:
		return "the filesystem remounted itself read-only"
	case res.FirstError.Reached() && float64(n)-math.Ceil(res.FirstError.Round) >= float64(r.Params.AfterError):
		return fmt.Sprintf("%d rounds after the first error, the card still answering (the run's end, not the card's)", r.Params.AfterError)
	case r.Params.MaxRounds > 0 && n >= r.Params.MaxRounds:
		return fmt.Sprintf("the run's bound of %d rounds, the card still working", r.Params.MaxRounds)
	}
	return ""
}

// snapshot saves the simulated card and the state with it, replacing the last snapshot only
// once the new one is whole.
func (r *Runner) snapshot() error {
	snap := filepath.Join(r.Dir, snapDir)
	tmp := snap + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := r.Card.Save(tmp); err != nil {
		return fmt.Errorf("saving the simulated card: %w", err)
	}
	if err := r.st.save(tmp); err != nil {
		return err
	}
	old := snap + ".old"
	os.RemoveAll(old)
	if err := os.Rename(snap, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(tmp, snap); err != nil {
		return err
	}
	return os.RemoveAll(old)
}

// logRound writes the round's line and CSV row, with the estimate of the end.
func (r *Runner) logRound(n int) {
	st, res := r.st, &r.st.Result
	p := res.Series[len(res.Series)-1]
	line := fmt.Sprintf("endurance %s: round %d done, %s written (%s to the device), %.3g MB/s", r.Name, n,
		bytesize.Format(st.Logical), bytesize.Format(st.Device), p.MBps)
	if r.Card != nil {
		line += fmt.Sprintf(", %d bad blocks of %d spares", p.BadBlocks, res.SpareBlocks)
	}
	if res.FirstError.Reached() {
		line += fmt.Sprintf("; first error in round %.2f (%s)", res.FirstError.Round, res.FirstError.What)
	} else if eta := r.estimate(n); eta != "" {
		line += "; " + eta
	}
	r.Log("%s", line)
	r.csv.row(r.Now(), n, "round", st, p.MBps, "")
}

// estimate says when the first error is expected: the prediction, and the time its remaining
// rounds take at this run's pace.
func (r *Runner) estimate(n int) string {
	res := &r.st.Result
	if res.PredictedRounds <= 0 || r.ran == 0 {
		return ""
	}
	left := res.PredictedRounds - float64(n)
	if left <= 0 {
		return fmt.Sprintf("the wear line predicted the first error by round %.1f", res.PredictedRounds)
	}
	per := r.rounds / float64(r.ran)
	return fmt.Sprintf("first error predicted at round %.1f, in about %s", res.PredictedRounds, time.Duration(left*per*float64(time.Second)).Round(time.Second))
}

// progress logs the round in progress every r.Progress (a real card's round can take hours)
// until the returned stop is called.
func (r *Runner) progress(ctx context.Context, n int, start *Pending) (stop func()) {
	every := r.Progress
	if every <= 0 {
		every = 30 * time.Second
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				dev, err := r.FS.DeviceBytesWritten()
				if err != nil {
					continue
				}
				secs := r.Now().Sub(start.Start).Seconds()
				rate := float64(dev-start.Device) / 1e6 / secs
				r.Log("endurance %s: round %d in progress: %s to the device in %s (%.3g MB/s)", r.Name, n,
					bytesize.Format(dev-start.Device), time.Duration(secs*float64(time.Second)).Round(time.Second), rate)
				r.csv.row(r.Now(), n, "progress", r.st, rate, fmt.Sprintf("%d bytes to the device this round", dev-start.Device))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// isIO reports whether err is an I/O error (the device failed a request).
func isIO(err error) bool { return errors.Is(err, syscall.EIO) }

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fsid is the id statfs gives the filesystem mounted on dir ("" when it cannot say).
func fsid(dir string) string {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return ""
	}
	return strings.ReplaceAll(fmt.Sprintf("%08x%08x", uint32(s.Fsid.Val[0]), uint32(s.Fsid.Val[1])), " ", "")
}
