package powercut

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/fs"
	pcut "github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/suites/suitekit"
)

// maxProblems bounds the broken promises kept for the report.
const maxProblems = 20

// NoPowerSwitch is why the powercut test does not run on a real device.
const NoPowerSwitch = "a real power cut needs a power switch fsbench can drive (a board's: labgrid:PLACE/dev/X, or ssh://HOST/dev/X with --power-off and --power-on); nothing destructive was run: use --target simcard:PROFILE to cut the power of a simulated card"

// checkerTimeout bounds one run of a checker or its repair on a cut. fsck.fat 4.2 -n never
// finished (over 5 minutes at full CPU, in the guest) on one vfat cut on sd-typical that
// takes it under a second otherwise; without a bound that one cut sank the whole variant's
// figures at the test's timeout. A checker that does not finish is a checker that failed:
// its run is killed and the cut recorded as "tool failed" (a repair: unrecoverable).
var checkerTimeout = 3 * time.Minute

// cutResult is what one cut left.
type cutResult struct {
	mounted  bool // on the cut's state, without repair
	recovery time.Duration
	fsck     string
	repair   string // "" when no repair was needed
	usable   bool   // mounted, with or without repair
	check    pcut.Check
	unsynced time.Duration
	// leaked is the blocks the checker found marked in use and held by nothing, after the
	// mount's recovery; leakedOK says the checker reports it (e2fsck).
	leaked   uint64
	leakedOK bool
	// timedOut counts the checker runs killed at checkerTimeout.
	timedOut int
	// outcome is what the power-loss model made of the cut: its card damage says whose
	// fault a broken promise is.
	outcome pcut.Outcome
}

// whole: mounted without repair, checked clean (or no checker), every promise kept.
func (c cutResult) whole() bool {
	return c.mounted && (c.fsck == fs.FsckClean || c.fsck == fs.FsckNone) && c.check.Violations() == 0
}

// Ways a filesystem comes through card damage (cutResult.through).
const (
	throughUnharmed = "unharmed" // every promise kept, nothing to repair
	throughDetected = "detected" // a mount that failed, the checker or a read that failed noticed it
	throughRepaired = "repaired" // noticed, and the repair made the filesystem usable
	throughSilent   = "silent"   // a promise broken, and nothing noticed: wrong data without a warning
)

// through says how the filesystem came through the cut: on a cut with card damage, how it
// dealt with what the card destroyed.
func (c cutResult) through() string {
	ch := c.check
	switch {
	case c.repair == fs.FsckRepaired && c.usable:
		return throughRepaired
	case !c.mounted || c.fsck == fs.FsckErrors || c.repair == fs.FsckUnrecoverable:
		return throughDetected
	case ch.Violations() == 0:
		return throughUnharmed
	case ch.Violations() == ch.AckedUnreadable:
		return throughDetected // every broken promise was a read the filesystem refused
	}
	return throughSilent
}

// powerCut runs the workload with the card recording, unmounts, and checks the filesystem
// after each planned cut (see checkCut). Its headline is the share of cuts survived whole.
func powerCut(ctx context.Context, r suites.Rep, params *Params) ([]results.Measurement, error) {
	card, profile := r.PowerCut()
	m := results.Measurement{Test: Test, Unit: catalog.Percent, Status: results.OK}
	if card == nil {
		m.Status, m.Note = results.NA, NoPowerSwitch
		return []results.Measurement{m}, nil
	}
	prof, err := flash.CardProfile(profile)
	if err != nil {
		return nil, err
	}
	model := pcut.ModelOf(prof)
	model.MergeLoss = model.MergeLoss || params.MergeLoss

	closed := false
	defer func() {
		if !closed {
			card.Close()
		}
	}()

	man, dir, err := recordWorkload(ctx, r, params, card)
	if err != nil {
		return nil, err
	}
	stream, err := pcut.OpenStream(dir)
	if err != nil {
		return nil, err
	}
	recs := stream.Records
	stream.Close()
	st := modelFigures(prof.Name, model)
	st.Requests, st.Acks = len(recs), len(man.Acks)
	if man.End > uint64(len(recs)) {
		// The stream filled up: the cuts are drawn within it, and what was acknowledged after
		// it ended is past every cut.
		st.StreamFull = true
		for _, a := range man.Acks {
			if a.Pos > uint64(len(recs)) {
				st.AcksUnrecorded++
			}
		}
	}
	cuts := pcut.PlanCuts(recs, params.Cuts, params.Seed*1000+uint64(r.N()))
	start := time.Now()
	out, timedOut, err := checkCuts(ctx, r, card, man, cuts, len(recs), params.MergeLoss)
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	closed = true
	if err := card.Close(); err != nil {
		return nil, err
	}
	summarizeCuts(&st, out, elapsed)
	m.PowerCut = &st
	m.Value = &st.Safe.Pct
	m.WallSeconds = elapsed.Seconds()
	m.Extra = map[string]float64{"cuts": float64(st.Cuts), "torn_renames": float64(st.TornRenames),
		"acked_lost":    float64(st.AckedLost + st.AckedCorrupt + st.AckedUnreadable),
		"fs_broken_pct": st.FSBrokenCuts.Pct, "card_damage_pct": st.CardDamageCuts.Pct,
		"mount_without_repair_pct": st.MountWithoutRepair.Pct, "fsck_clean_pct": st.FsckClean.Pct,
		"unrecoverable_pct": st.Unrecoverable.Pct, "recovery_p50_s": st.RecoveryP50Seconds,
		"recovery_max_s": st.RecoveryMaxSeconds, "unsynced_lost_p50_s": st.UnsyncedP50Seconds,
		"cuts_per_minute": st.CutsPerMinute}
	m.Note = powerCutNote(st, len(cuts), params.Cuts, len(recs), man.End, timedOut)
	return []results.Measurement{m}, nil
}

// checkCuts checks the filesystem after each cut of a stream of n requests, logging the
// cuts that broke promises or whose checker was killed; timedOut counts the checker runs
// killed.
func checkCuts(ctx context.Context, r suites.Rep, card pcut.Card, man *pcut.Manifest, cuts []pcut.Cut, n int, mergeLoss bool) (out []cutResult, timedOut int, err error) {
	ck := cutChecker(r)
	for _, c := range cuts {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		res, err := ck.check(ctx, card, man, c, mergeLoss)
		if err != nil {
			return nil, 0, fmt.Errorf("cut at request %d of %d: %w", c.Pos, n, err)
		}
		out = append(out, res)
		timedOut += res.timedOut
		if res.timedOut > 0 {
			r.Logf("%s rep %d powercut: cut at request %d (%s): the checker did not finish within %v and was killed", r.Variant().Name, r.N(), c.Pos, c.Kind, checkerTimeout)
		}
		if res.check.Violations() > 0 {
			whose := "the filesystem's own (the card destroyed nothing it had flushed)"
			if b := res.outcome.CardDamageBytes(); b > 0 {
				whose = fmt.Sprintf("after the card destroyed %d bytes outside what the filesystem wrote since its last flush", b)
			}
			r.Logf("%s rep %d powercut: cut at request %d (%s): %d broken promises, %s; %s; first: %s", r.Variant().Name, r.N(), c.Pos, c.Kind,
				res.check.Violations(), whose, res.outcome, res.check.Problems[0])
		}
	}
	return out, timedOut, nil
}

// powerCutNote says what limited the test: fewer cuts than planned (want) because the
// stream of n requests (of end the workload made) has fewer points, a recording that filled
// up, checker runs killed.
func powerCutNote(st results.PowerCut, cuts, want, n int, end uint64, timedOut int) string {
	var notes []string
	if cuts < want {
		notes = append(notes, fmt.Sprintf("%d cuts: the stream has only %d distinct points", cuts, n))
	}
	if st.StreamFull {
		notes = append(notes, fmt.Sprintf("the recording filled its limit after %d requests of %d: the cuts were drawn within them, and the %d acknowledgements given later were not checked",
			n, end, st.AcksUnrecorded))
	}
	if timedOut > 0 {
		notes = append(notes, fmt.Sprintf("%d checker runs did not finish within %v and were killed (counted as tool failed, or unrecoverable for a repair)", timedOut, checkerTimeout))
	}
	return strings.Join(notes, "; ")
}

// recordWorkload makes the filesystem durable, starts the card's recording, runs the workload
// and stops the recording; the filesystem is unmounted after it (the cuts mount their own).
func recordWorkload(ctx context.Context, r suites.Rep, params *Params, card pcut.Card) (*pcut.Manifest, string, error) {
	work := filepath.Join(r.Mountpoint(), "powercut")
	if err := os.Mkdir(work, 0o755); err != nil {
		return nil, "", err
	}
	if err := suitekit.Syncfs(work); err != nil {
		return nil, "", err
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(work, &sfs); err != nil {
		return nil, "", fmt.Errorf("statfs %s: %w", work, err)
	}
	devBytes := sfs.Blocks * uint64(sfs.Bsize)
	// The stream holds every byte written: bounded by twice the filesystem, and 1 GiB.
	limit := min(2*devBytes, 1<<30)
	dir, err := card.Record(limit)
	if err != nil {
		return nil, "", err
	}
	spec := pcut.Spec{Seed: params.Seed*1000 + uint64(r.N()), Ops: params.Ops}
	// The large writes (about one operation in twenty, kept until deleted) stay a small
	// share of the filesystem.
	spec.LargeBytes = int(min(4<<20, max(64<<10, devBytes/200)))
	man, werr := pcut.Workload{Spec: spec, Pos: card.Pos}.Run(ctx, work)
	if err := errors.Join(werr, card.Stop()); err != nil {
		return nil, "", fmt.Errorf("powercut workload: %w", err)
	}
	if err := r.Unmount(ctx); err != nil {
		return nil, "", fmt.Errorf("unmounting after the workload: %w", err)
	}
	return man, dir, nil
}

// CutChecker checks a filesystem after power cuts the way a user's system meets it: mount
// (which replays a journal: the recovery time), the acknowledged files verified, unmount; then
// the checker in check-only mode on what the mount left; a repair when it found errors or the
// mount failed, and a second mount after a successful repair. The powercut test uses it on
// the simulated card's cuts, and the reference cross-check on dm-log-writes' replays.
type CutChecker struct {
	Kind         fs.Kind
	MountOptions string
	Mountpoint   string // an empty directory
	WorkDir      string // scratch space off the device
	Run          fs.Runner
}

// cutChecker checks the cuts of r's filesystem, on its mount point.
func cutChecker(r suites.Rep) CutChecker {
	return CutChecker{Kind: r.Kind(), MountOptions: r.Variant().MountOptions, Mountpoint: r.Mountpoint(), WorkDir: r.WorkDir(), Run: r.Runner()}
}

// CutVerdict is what CutChecker found after one cut.
type CutVerdict struct {
	Whole   bool   // mounted without repair, checked clean (or no checker), every promise kept
	Mounted bool   // without repair
	Fsck    string // the checker's verdict on what the mount left (fs.FsckClean, ...)
	Repair  string // "" when no repair was needed
	Check   pcut.Check
	Outcome pcut.Outcome
}

// Check builds the card after cut c and checks it (see CutChecker).
func (k CutChecker) Check(ctx context.Context, card pcut.Card, man *pcut.Manifest, c pcut.Cut, mergeLoss bool) (CutVerdict, error) {
	res, err := k.check(ctx, card, man, c, mergeLoss)
	return CutVerdict{Whole: res.whole(), Mounted: res.mounted, Fsck: res.fsck, Repair: res.repair, Check: res.check, Outcome: res.outcome}, err
}

// check is Check with everything the powercut test reports. Every loop device is detached and
// the cut's writes forgotten before it returns.
func (k CutChecker) check(ctx context.Context, card pcut.Card, man *pcut.Manifest, c pcut.Cut, mergeLoss bool) (res cutResult, err error) {
	if res.outcome, err = card.Cut(c, mergeLoss); err != nil {
		return res, err
	}
	pos := uint64(c.Pos)
	res.unsynced = unsyncedAt(man, pos)
	mp := k.Mountpoint
	verify := func(dev string) (bool, time.Duration, error) {
		// The device check before the timed recovery, and not the filesystem's failure.
		vctx, err := fs.Verified(ctx, dev)
		if err != nil {
			return false, 0, err
		}
		t0 := time.Now()
		if err := fs.Mount(vctx, k.Kind, dev, mp, k.MountOptions); err != nil {
			return false, 0, nil
		}
		took := time.Since(t0)
		chk, verr := man.Verify(filepath.Join(mp, "powercut"), pos)
		// Unmounted even when ctx is done (Ctrl-C): the loop device under it must go too.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		uerr := fs.Unmount(uctx, k.Kind, mp)
		cancel()
		if err := errors.Join(verr, uerr); err != nil {
			return true, took, err
		}
		res.check = chk
		return true, took, nil
	}
	withDevice := func(fn func(dev string) error) error {
		dev, detach, err := card.Attach(ctx)
		if err != nil {
			return err
		}
		return errors.Join(fn(dev), detach())
	}
	// A fresh loop device per phase: a filesystem writing through its own buffer cache (xfs)
	// leaves the block device's page cache stale for the checker otherwise.
	if err := withDevice(func(dev string) error {
		var err error
		res.mounted, res.recovery, err = verify(dev)
		return err
	}); err != nil {
		return res, err
	}
	res.usable = res.mounted
	if err := withDevice(func(dev string) error {
		var err error
		var out string
		// Each checker run has its own bound; only the caller's end (Ctrl-C, the test's
		// timeout) ends the cut with an error.
		bounded := func(fn func(ctx context.Context) (string, string, error), failed string) (string, string, error) {
			cctx, cancel := context.WithTimeout(ctx, checkerTimeout)
			defer cancel()
			outcome, out, err := fn(cctx)
			if err != nil && ctx.Err() == nil {
				res.timedOut++
				return failed, out, nil
			}
			return outcome, out, err
		}
		if res.fsck, out, err = bounded(func(c context.Context) (string, string, error) { return fs.Check(c, k.Run, k.Kind, dev) }, fs.FsckToolFailed); err != nil {
			return err
		}
		if res.mounted {
			res.leaked, res.leakedOK = fs.LeakedBlocks(k.Kind, out)
		}
		if (res.fsck == fs.FsckClean || res.fsck == fs.FsckNone) && res.mounted {
			return nil
		}
		if res.repair, _, err = bounded(func(c context.Context) (string, string, error) { return fs.Repair(c, k.Run, k.Kind, dev) }, fs.FsckUnrecoverable); err != nil {
			return err
		}
		return nil
	}); err != nil {
		return res, err
	}
	if !res.mounted && res.repair == fs.FsckRepaired {
		if err := withDevice(func(dev string) error {
			var err error
			res.usable, _, err = verify(dev)
			return err
		}); err != nil {
			return res, err
		}
	}
	if !res.usable {
		// Nothing could be read back: every acknowledged file is lost.
		empty, err := os.MkdirTemp(k.WorkDir, "powercut-empty-")
		if err != nil {
			return res, err
		}
		res.check, err = man.Verify(empty, pos)
		os.Remove(empty)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// modelFigures starts a repetition's figures with the card's power-loss model.
func modelFigures(profile string, m pcut.Model) results.PowerCut {
	st := results.PowerCut{Profile: profile, Protected: m.Protected, VolatileCache: m.VolatileCache, TornPage: m.TornPage,
		PairedPage: m.PairedPage, MergeLoss: m.MergeLoss, WriteBufferBytes: uint64(m.WriteBuffer)}
	if m.VolatileCache {
		st.CacheBytes, st.CacheOrder = m.CacheSize, m.CacheOrder
		if st.CacheOrder == "" {
			st.CacheOrder = flash.CacheOrderAny
		}
	}
	return st
}

// unsyncedAt is how much of the workload's time was lost at a cut: from the last
// acknowledgement before it to the cut, the cut's time interpolated between the
// acknowledgements around it.
func unsyncedAt(man *pcut.Manifest, pos uint64) time.Duration {
	last, ok := man.LastAckBefore(pos)
	if !ok {
		last = pcut.Ack{}
	}
	for _, a := range man.Acks {
		if a.Pos > pos {
			if a.Pos == last.Pos {
				return 0
			}
			f := float64(pos-last.Pos) / float64(a.Pos-last.Pos)
			return time.Duration(f * float64(a.At-last.At))
		}
	}
	return 0 // after the last acknowledgement: the workload's end is not timed
}

// summarizeCuts fills the figures of st from the cuts' results.
func summarizeCuts(st *results.PowerCut, cuts []cutResult, elapsed time.Duration) {
	n := len(cuts)
	st.Cuts = n
	var safe, mounted, clean, unrec, ackCuts, atomCuts, fsBroken, damaged int
	var rec, lost []float64
	for _, c := range cuts {
		ch := c.check
		if c.mounted {
			mounted++
			rec = append(rec, c.recovery.Seconds())
		}
		switch c.fsck {
		case fs.FsckClean:
			clean++
		case fs.FsckErrors:
			st.FsckErrors++
		case fs.FsckNone:
			st.NoChecker++
		default:
			st.FsckToolFailed++
		}
		if c.repair == fs.FsckRepaired {
			st.Repaired++
		}
		if !c.usable || c.repair == fs.FsckUnrecoverable {
			unrec++
		}
		if ch.AckedLoss() > 0 {
			ackCuts++
		}
		if ch.TornRenames > 0 {
			atomCuts++
		}
		// Without a checker (nilfs2), surviving whole is mounting and keeping every promise.
		if c.whole() {
			safe++
		}
		// Whose fault: where the card destroyed nothing outside what the filesystem wrote since
		// its last flush, a broken promise is the filesystem's; elsewhere the figure is how the
		// filesystem came through the card's damage.
		if b := c.outcome.CardDamageBytes(); b > 0 {
			damaged++
			st.CardDamageBytes += b
			switch c.through() {
			case throughUnharmed:
				st.CardUnharmed++
			case throughDetected:
				st.CardDetected++
			case throughRepaired:
				st.CardRepaired++
			default:
				st.CardSilent++
			}
		} else if ch.Violations() > 0 {
			fsBroken++
			if ch.AckedLoss() > 0 {
				st.FSAckLossCuts++
			}
			if ch.TornRenames > 0 {
				st.FSAtomicityCuts++
			}
		}
		st.FileCounts.Add(results.FileCounts(ch.FileCounts))
		for _, p := range ch.Problems {
			if len(st.Problems) < maxProblems {
				st.Problems = append(st.Problems, p)
			}
		}
		lost = append(lost, c.unsynced.Seconds())
		if c.leakedOK {
			st.LeakedCuts++
			st.LeakedBlocks += c.leaked
			st.LeakedBlocksMax = max(st.LeakedBlocksMax, c.leaked)
		}
	}
	st.Safe = proportion(safe, n)
	st.MountWithoutRepair = proportion(mounted, n)
	st.FsckClean = proportion(clean, n)
	st.Unrecoverable = proportion(unrec, n)
	st.AckLossCuts = proportion(ackCuts, n)
	st.AtomicityCuts = proportion(atomCuts, n)
	st.FSBrokenCuts = proportion(fsBroken, n)
	st.CardDamageCuts = proportion(damaged, n)
	st.RecoveryP50Seconds, st.RecoveryMaxSeconds = medianMax(rec)
	st.UnsyncedP50Seconds, st.UnsyncedMaxSeconds = medianMax(lost)
	if elapsed > 0 {
		st.CutsPerMinute = float64(n) / elapsed.Minutes()
	}
}

func proportion(k, n int) results.Proportion {
	p := results.Proportion{Count: k, Of: n}
	if n == 0 {
		return p
	}
	lo, hi := stats.Wilson(k, n)
	p.Pct, p.Low, p.High = 100*float64(k)/float64(n), 100*lo, 100*hi
	return p
}

func medianMax(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
