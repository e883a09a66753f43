// Package capacity finds how much of a card really holds data: a counterfeit card announces
// more than its flash has and, beyond it, drops writes (limbo), lands them on lower addresses
// (wraparound), or both (chain), sometimes behind a small RAM cache that makes a read soon
// after a write look right. These are the classes f3 (AltraMayor/f3) names and emulates; the
// method here is fsbench's own (see Probe).
//
// The probe overwrites a few blocks of the card. Every block is saved in an undo log on the
// host, written and synced before the block is overwritten, and the log is replayed at the
// end; after a crash, a SIGKILL or a power loss, RestorePending (the next probe, or fsbench
// cleanup) replays it, so that the card ends byte for byte as it was.
package capacity

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/procid"
)

// Verdicts (Result.Verdict).
const (
	VerdictGenuine     = "genuine"     // it holds what it announces
	VerdictCounterfeit = "counterfeit" // it holds less: Result.Usable, Result.Class
	VerdictDamaged     = "damaged"     // blocks fail in a pattern no counterfeit class makes, or it stores nothing
)

// Exit codes of fsbench probe --capacity (ExitCode), documented in docs/card-identity.md.
const (
	ExitGenuine     = 0
	ExitCounterfeit = 4
	ExitDamaged     = 5
	// ExitNotRestored: the card could not be put back as it was; its undo log is kept.
	ExitNotRestored = 6
)

// Options tune the probe; the zero value is the default.
type Options struct {
	// UndoDir is where the undo log is kept (DefaultUndoDir).
	UndoDir string
	// Block is the probe's block (default 4 KiB, or the device's logical block if larger).
	Block uint64
	// Resolution: the usable size is found to within this many bytes (default: the card's
	// erase unit, at most 1 MiB, or 1 MiB when unknown; at least Block).
	Resolution uint64
	// Fanout is how many blocks each round writes (default 16 with a reset, 64 without: each
	// round without a reset costs a cache's worth of writes, so fewer, wider rounds).
	Fanout int
	// MaxCache is, without a reset, the largest write cache the probe rules out by writing past
	// it (default: 1 GiB, at most half the card, as f3probe's bound).
	MaxCache uint64
	// NoReset leaves the card's power alone even where the host can cycle it.
	NoReset bool
	// NoUndo neither saves nor puts back what the probe overwrites: for a caller that destroys
	// the card's data anyway (a run with --destroy formats it next, probe --capacity --destroy).
	// It needs no room for an undo log, which a board whose root filesystem is in RAM may not
	// have for a whole card's probe, and reads nothing before it writes.
	NoUndo bool
	// Announce receives, before anything is written, what the check will cost (Cost.String);
	// may be nil.
	Announce func(string)
	// Log receives progress lines; may be nil.
	Log func(format string, args ...any)
}

// Result is the probe's verdict, with what it wrote where and what came back.
type Result struct {
	Device    string `json:"device"`
	Verdict   string `json:"verdict"`
	Class     string `json:"class,omitempty"` // wraparound, chain, limbo (counterfeit)
	Announced uint64 `json:"announced_bytes"`
	// Usable is how many bytes from the start hold data (Announced when genuine); the real
	// end lies in [Usable, Usable+Uncertainty).
	Usable      uint64 `json:"usable_bytes"`
	Uncertainty uint64 `json:"uncertainty_bytes"`
	// Wrap is the address modulus found: a write at Wrap+x lands on x (0: none).
	Wrap uint64 `json:"wrap_bytes,omitempty"`
	// Method says how a write cache was kept from hiding lost blocks: a reset of the card, or
	// writing past it (then CacheBound is the volume that did, or the largest ruled out).
	Method     string `json:"method"`
	CacheBound uint64 `json:"cache_bound_bytes,omitempty"`
	BlockSize  uint64 `json:"block_bytes"`
	// BytesWritten counts the probe's writes and the restore's; BytesRead its reads.
	// BytesCopied is the part of BytesWritten that wrote back what the card held (the volume
	// written past a cache; see writeExtents): it needs no restore.
	BytesWritten uint64 `json:"bytes_written"`
	BytesRead    uint64 `json:"bytes_read"`
	BytesCopied  uint64 `json:"bytes_copied,omitempty"`
	// Estimate is what the check said it would cost before it wrote (Cost).
	Estimate Cost    `json:"estimate"`
	Seconds  float64 `json:"seconds"`
	// Why says in one line what decided the verdict; Steps say what was written where and
	// what came back.
	Why   string `json:"why"`
	Steps []Step `json:"steps"`
	// Restored is true once the card holds again what it held before the probe.
	Restored     bool   `json:"restored"`
	RestoreError string `json:"restore_error,omitempty"`
	// NotSaved is true when the probe was told its caller destroys the card's data anyway
	// (Options.NoUndo): what it overwrote was neither saved nor put back.
	NotSaved bool   `json:"not_saved,omitempty"`
	UndoLog  string `json:"undo_log,omitempty"`
}

// Step is one round of the probe.
type Step struct {
	What  string        `json:"what"`
	Wrote []uint64      `json:"wrote,omitempty"` // block offsets written
	Read  []Observation `json:"read,omitempty"`
	// Settle says how the card was made to forget its caches before the reads.
	Settle string `json:"settle,omitempty"`
	Note   string `json:"note,omitempty"`
}

// ExitCode is the exit code for the result (see the Exit constants).
func (r *Result) ExitCode() int {
	switch {
	case !r.Restored && !r.NotSaved:
		return ExitNotRestored
	case r.Verdict == VerdictGenuine:
		return ExitGenuine
	case r.Verdict == VerdictCounterfeit:
		return ExitCounterfeit
	}
	return ExitDamaged
}

// hook is called at points where a test kills the probe (see capacity_test.go).
var hook = func(point string) {}

// Probe finds the usable capacity of t. The method:
//
//  1. A reference block at 1 MiB (the first MiB, where partition tables live, is never written
//     directly) is written, the card's caches are defeated (below), and it is read back: a card
//     that loses it stores nothing.
//  2. Wrap: the blocks at 1 MiB + 2^k are only read: on a card that decodes k address bits
//     they hold the reference's stamp. A write at 1 MiB + 2^k that then shows at 1 MiB
//     confirms it (a loose cache can fake the reads, not this).
//  3. Rounds: Fanout blocks spread over the part still in doubt (the first round ends with the
//     last block below the wrap or the end), written, caches defeated, read back; the first
//     block that does not come back as written bounds the real end, the last good one before it
//     the other side. Rounds repeat inside that interval until it is Resolution wide.
//
// Caches: every round is synced (a flush), then the card is reset where the host can (its
// power cycled: RAM is lost), else a cache is outrun: blocks are written past it, doubling the
// volume until lost blocks show (the cache's size, written past in later rounds) or MaxCache
// bytes hide nothing (genuine: no cache up to that size hides a loss).
//
// Positions are fixed by the geometry, not random: the same card gives the same verdict and the
// same explanation, run after run (f3's verdicts differ between runs of one card: f3 issues
// #93, #104, #201).
func Probe(ctx context.Context, t *Target, opt Options) (res *Result, err error) {
	start := time.Now()
	if opt.UndoDir == "" {
		opt.UndoDir = DefaultUndoDir
	}
	logf := opt.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	// A log of this device left by a probe that was killed is replayed first: the card must be
	// as it was before this probe saves its blocks.
	if acts, err := RestorePending(ctx, opt.UndoDir, func(id DeviceID) bool { return sameDevice(id, t.ID) }); err != nil {
		return nil, fmt.Errorf("an earlier capacity check of this card was interrupted and its undo log could not be replayed: %w", err)
	} else {
		for _, a := range acts {
			logf("%s", a)
		}
	}
	p, resol, err := newProber(ctx, t, opt, logf, start)
	if err != nil {
		return nil, err
	}
	B, N, meta := p.B, p.N, p.meta
	res = &Result{Device: t.Path, Announced: t.Size, BlockSize: B, NotSaved: opt.NoUndo,
		Estimate: estimate(N, B, p.fanout, resol, p.maxCache, p.reset, opt.NoUndo)}
	if opt.Announce != nil {
		opt.Announce(res.Estimate.String())
	}
	if !opt.NoUndo {
		if p.undo, err = createUndo(opt.UndoDir, meta); err != nil {
			return nil, err
		}
		res.UndoLog = p.undo.path
	}
	if p.reset {
		res.Method = "flush, then a reset of the card: " + t.ResetHow
	} else {
		res.Method = fmt.Sprintf("flush, then writing past any write cache of up to %s (%s)", size(p.maxCache), t.ResetHow)
	}
	p.res = res
	defer func() {
		res.Seconds = time.Since(start).Seconds()
		if p.undo == nil {
			return // NoUndo: nothing was saved, nothing is put back
		}
		if rerr := p.restore(); rerr != nil {
			res.RestoreError = rerr.Error()
			// A VerdictError, whatever else failed: the command exits 6 (ExitNotRestored),
			// which says that the card holds the probe's blocks and its undo log is kept.
			err = errors.Join(err, VerdictError{R: res})
			return
		}
		res.Restored = true
		res.UndoLog = ""
		res.Seconds = time.Since(start).Seconds()
	}()
	if err := p.run(resol); err != nil {
		var f *ioFault
		if !errors.As(err, &f) {
			return res, err
		}
		// A card that refuses I/O twice at a place is damaged there: said with the place
		// (f3 issues #119, #228: "damaged" without saying where).
		res.Verdict, res.Why = VerdictDamaged, f.Error()
	}
	return res, nil
}

// newProber is the probe's state before anything is written: the block size, the volume, the
// resolution of the search, the fan-out of each round and the undo log's header.
func newProber(ctx context.Context, t *Target, opt Options, logf func(string, ...any), start time.Time) (*prober, uint64, error) {
	B := max(opt.Block, t.BlockSize, 4096)
	if B&(B-1) != 0 {
		return nil, 0, fmt.Errorf("block size %d is not a power of two", B)
	}
	N := t.Size / B * B
	if N < 4<<20 {
		return nil, 0, fmt.Errorf("%s has %d bytes: the capacity check needs at least 4 MiB (it leaves the first MiB alone)", t.Path, t.Size)
	}
	resol := opt.Resolution
	if resol == 0 {
		resol = 1 << 20
		if t.EraseSize >= B && t.EraseSize < resol {
			resol = t.EraseSize
		}
	}
	resol = max(resol, B)
	p := &prober{ctx: ctx, t: t, dev: t.Dev, B: B, N: N, logf: logf, probeSet: map[uint64]bool{}, limit: N,
		reset: t.Reset != nil && !opt.NoReset}
	p.fanout = opt.Fanout
	if p.fanout <= 0 {
		p.fanout = map[bool]int{true: 16, false: 64}[p.reset]
	}
	p.maxCache = opt.MaxCache
	if p.maxCache == 0 {
		p.maxCache = min(1<<30, N/2)
	}
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return nil, 0, err
	}
	p.nonce = binary.LittleEndian.Uint64(nb[:])
	self, err := procid.Self()
	if err != nil {
		return nil, 0, fmt.Errorf("capacity check: who is writing the undo log: %w", err)
	}
	meta := undoMeta{PID: self.PID, StartTime: self.StartTime, BootID: self.BootID, Created: time.Now().UTC().Truncate(time.Second), Nonce: p.nonce, BlockSize: B, Device: t.ID}
	p.meta = meta
	p.start = start
	p.lastProgress = start
	return p, resol, nil
}

// ioFault is an I/O error the card gave twice at one place.
type ioFault struct {
	op  string
	off uint64
	n   int
	err error
}

func (f *ioFault) Error() string {
	return fmt.Sprintf("the card refused to %s %d bytes at %s (%d), twice: %v", f.op, f.n, size(f.off), f.off, f.err)
}

// sameDevice says whether an undo log's device is the one being probed.
func sameDevice(a, b DeviceID) bool {
	if a.Fingerprint != "" || b.Fingerprint != "" {
		return a.Fingerprint == b.Fingerprint && a.Size == b.Size
	}
	if a.FileIno != 0 || b.FileIno != 0 {
		return a.FileDev == b.FileDev && a.FileIno == b.FileIno
	}
	return a.Path == b.Path && a.Size == b.Size
}

type prober struct {
	ctx      context.Context
	t        *Target
	dev      Device
	B, N     uint64
	nonce    uint64
	fanout   int
	reset    bool
	maxCache uint64
	logf     func(string, ...any)
	undo     *undoLog
	meta     undoMeta
	records  []record
	res      *Result
	probeSet map[uint64]bool // blocks holding a probe block (never flushed over)
	// limit is where addresses stop being distinct (the wrap, once found): flush writes stay
	// below it so that none lands on a probe block.
	limit uint64
	// Without a reset: the cache volume to write past, once known, and which of the two
	// flush regions is next.
	cacheKnown bool
	cacheBound uint64
	flushAlt   bool
	batch      uint32 // the next batch's number in the undo log
	firstBad   Observation
	scratch    [sectorSize]byte
	// start and lastProgress pace the progress lines (progress).
	start, lastProgress time.Time
}

const mib = 1 << 20

func (p *prober) run(resol uint64) error {
	ref := uint64(mib)
	// 1. The reference block.
	kept, err := p.referenceBlock(ref)
	if err != nil || !kept {
		return err
	}
	// 2. Wrap: reads only.
	L, err := p.findWrap(ref)
	if err != nil {
		return err
	}
	// 3. Rounds between a good block (lo) and the first bad one (hi; 0: none yet).
	s := search{ref: ref, wrap: L, lo: ref}
	for round := 1; ; round++ {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		more, err := p.round(round, &s, resol)
		if err != nil || s.refLost {
			return err
		}
		if !more {
			break
		}
	}
	p.judge(s)
	if !p.reset {
		p.res.CacheBound = p.cacheBound
	}
	return nil
}

// referenceBlock writes the reference block at ref and reads it back; when it does not come
// back the card keeps nothing, and that is the verdict (kept false).
func (p *prober) referenceBlock(ref uint64) (kept bool, err error) {
	res := p.res
	if err := p.write([]uint64{ref}); err != nil {
		return false, err
	}
	obs, settle, err := p.check([]uint64{ref}, false)
	if err != nil {
		return false, err
	}
	res.Steps = append(res.Steps, Step{What: "reference block at 1 MiB", Wrote: []uint64{ref}, Read: obs, Settle: settle})
	if !obs[0].Good() {
		res.Verdict, res.Usable, res.Uncertainty = VerdictDamaged, 0, ref+p.B
		res.Why = fmt.Sprintf("the block written at 1 MiB did not come back (%s): the card keeps nothing there", describe(obs[0]))
		return false, nil
	}
	return true, nil
}

// findWrap looks for the reference block at ref + 2^k by reading only, and confirms a hit
// with a write (a cache may show it without a wrap). It returns the wrap's period, p.N when
// the card does not wrap.
func (p *prober) findWrap(ref uint64) (uint64, error) {
	res := p.res
	L := p.N
	var aliasReads []Observation
	for k := uint64(2 * mib); ref+k+p.B <= p.N; k *= 2 {
		o, err := p.read(ref + k)
		if err != nil {
			return 0, err
		}
		aliasReads = append(aliasReads, o)
		if o.State == StateOverwritten && o.By == ref {
			L = k
			break
		}
	}
	wrapStep := Step{What: "wrap: read 1 MiB + 2^k (k ≥ 21) for the reference block", Read: aliasReads}
	if L == p.N {
		wrapStep.Note = "no address holds the reference block: the card does not wrap"
		res.Steps = append(res.Steps, wrapStep)
		return L, nil
	}
	// Confirm with a write: a wrap lands it on the reference block.
	p.limit = L
	if err := p.write([]uint64{ref + L}); err != nil {
		return 0, err
	}
	obs, settle, err := p.check([]uint64{ref}, false)
	if err != nil {
		return 0, err
	}
	wrapStep.Wrote, wrapStep.Settle = []uint64{ref + L}, settle
	wrapStep.Read = append(wrapStep.Read, obs...)
	if obs[0].State == StateOverwritten && obs[0].By == ref+L {
		wrapStep.Note = fmt.Sprintf("the block at %s holds the reference block, and a write there replaced it: the card wraps every %s", size(ref+L), size(L))
		res.Wrap = L
		// The reference block is checked again in every round: write it back.
		if err := p.write([]uint64{ref}); err != nil {
			return 0, err
		}
	} else {
		wrapStep.Note = fmt.Sprintf("the block at %s read as the reference block, but a write there did not land on it (%s): a cache, not a wrap", size(ref+L), describe(obs[0]))
		L = p.N
		p.limit = L
	}
	res.Steps = append(res.Steps, wrapStep)
	return L, nil
}

// search is the state of the rounds that close in on the end of the kept space.
type search struct {
	ref, wrap uint64 // the reference block; the wrap's period (p.N: none)
	lo, hi    uint64 // the last block kept, the first not kept (0: none yet)
	// damaged are blocks kept above a lost one: failing flash, not a counterfeit's end.
	damaged []Observation
	// refLost is set when the reference block was lost during the rounds: that is the verdict.
	refLost bool
}

// round writes a grid of blocks between s.lo and s.hi (or the end), reads them and the
// reference block back, and narrows s. It returns whether another round is worth it.
func (p *prober) round(round int, s *search, resol uint64) (more bool, err error) {
	res := p.res
	var pos []uint64
	if s.hi == 0 {
		pos = p.grid(s.lo, s.wrap-p.B, true)
	} else {
		pos = p.grid(s.lo, s.hi, false)
	}
	if len(pos) == 0 {
		return false, nil
	}
	if err := p.write(pos); err != nil {
		return false, err
	}
	obs, settle, err := p.check(append(slices.Clone(pos), s.ref), true)
	if err != nil {
		return false, err
	}
	refObs := obs[len(obs)-1]
	obs = obs[:len(obs)-1]
	step := Step{What: fmt.Sprintf("round %d: %d blocks over %s", round, len(pos), span(pos)), Wrote: pos, Read: obs, Settle: settle}
	if !refObs.Good() {
		step.Read = append(step.Read, refObs)
		res.Steps = append(res.Steps, step)
		res.Verdict, res.Usable, res.Uncertainty = VerdictDamaged, 0, s.ref+p.B
		res.Why = fmt.Sprintf("the reference block at 1 MiB, good at first, read back %s after more writes: the card held it only in a cache and keeps nothing", describe(refObs))
		s.refLost = true
		return false, nil
	}
	step.Note = p.narrow(s, pos, obs)
	res.Steps = append(res.Steps, step)
	p.logf("capacity: %s: %s", step.What, step.Note)
	return s.hi != 0 && s.hi-s.lo > resol, nil
}

// narrow moves s.lo and s.hi to the blocks around the first one of pos not kept, and notes
// the kept ones above it; it returns the round's note.
func (p *prober) narrow(s *search, pos []uint64, obs []Observation) string {
	first := slices.IndexFunc(obs, func(o Observation) bool { return !o.Good() })
	if first < 0 {
		s.lo = pos[len(pos)-1]
		return fmt.Sprintf("all kept, up to %s", size(s.lo))
	}
	for _, o := range obs[first+1:] {
		if o.Good() {
			s.damaged = append(s.damaged, o)
		}
	}
	if first > 0 {
		s.lo = pos[first-1]
	}
	s.hi = pos[first]
	p.firstBad = obs[first]
	return fmt.Sprintf("first block not kept: %s (%s); last kept before it: %s", size(s.hi), describe(obs[first]), size(s.lo))
}

// judge gives the verdict of a search that ended: failing flash, genuine, a wraparound, or a
// counterfeit whose space ends between s.lo and s.hi (limbo, or chain when it also wraps).
func (p *prober) judge(s search) {
	res := p.res
	lo, hi, L := s.lo, s.hi, s.wrap
	switch {
	case len(s.damaged) > 0:
		res.Verdict = VerdictDamaged
		res.Usable, res.Uncertainty = lo+p.B, hi-lo
		res.Why = fmt.Sprintf("blocks are lost from %s on, yet %d blocks above it were kept (the first at %s): not a counterfeit's pattern but failing flash", size(hi), len(s.damaged), size(s.damaged[0].Offset))
	case hi == 0 && L == p.N:
		res.Verdict, res.Usable = VerdictGenuine, p.t.Size
		res.Why = fmt.Sprintf("every block written, up to the last one at %s, came back as written, and no address wraps", size(L-p.B))
	case hi == 0:
		res.Verdict, res.Class, res.Usable = VerdictCounterfeit, "wraparound", L
		res.Why = fmt.Sprintf("it announces %s but wraps every %s: a write at %s + x overwrites x; everything below %s was kept", size(p.t.Size), size(L), size(L), size(L))
	default:
		res.Verdict, res.Usable, res.Uncertainty = VerdictCounterfeit, lo+p.B, hi-lo
		if o := p.firstBad; o.State == StateTorn && o.OwnPrefix > 0 && o.OwnPrefix == o.OwnSectors {
			// The first lost block kept its leading sectors and only those: the flash ends
			// inside it, at a sector boundary.
			res.Usable, res.Uncertainty = hi+uint64(o.OwnPrefix)*sectorSize, sectorSize
		}
		res.Class = "limbo"
		if L < p.N {
			res.Class = "chain"
		}
		res.Why = fmt.Sprintf("it announces %s but keeps only up to %s: the block at %s was kept, the one at %s was not (%s)", size(p.t.Size), size(res.Usable), size(lo), size(hi), describe(p.firstBad))
		if res.Class == "chain" {
			res.Why += fmt.Sprintf("; above %s addresses wrap onto the first %s", size(L), size(L))
		}
	}
}

// grid returns up to fanout block offsets spread over (lo, hi) (with last, hi itself is the
// last one), aligned to the block.
func (p *prober) grid(lo, hi uint64, last bool) []uint64 {
	var out []uint64
	add := func(o uint64) {
		o = o / p.B * p.B
		if o > lo && (o < hi || (last && o == hi)) && (len(out) == 0 || out[len(out)-1] < o) {
			out = append(out, o)
		}
	}
	n := uint64(p.fanout)
	if last {
		for i := uint64(1); i < n; i++ {
			add(lo + (hi-lo)*i/n)
		}
		add(hi)
		return out
	}
	for i := uint64(1); i <= n; i++ {
		add(lo + (hi-lo)*i/(n+1))
	}
	return out
}

// write saves the blocks at pos in the undo log, then writes this run's stamp on each.
func (p *prober) write(pos []uint64) error {
	ext := make([]extent, len(pos))
	for i, o := range pos {
		ext[i] = extent{o, p.B}
		p.probeSet[o] = true
	}
	return p.writeExtents(ext, false)
}

type extent struct{ off, n uint64 }

// writeExtents saves and then writes extents (multiples of the block), in batches of at most
// 4 MiB: each batch is read, logged and synced before it is written.
//
// The probe's own blocks get its stamp. The volume written past a cache (copy) gets back what
// it held: what a cache must be made to forget is only that the card saw writes, not what
// they held, and a block written back as it was needs no restore at the end, which halves
// what the card sees written (f3probe writes such a volume twice: its blocks, then the saved
// data back). It is logged all the same: a power loss while the card programs a block can tear
// it, old data or not, and the log puts it back after a crash. Two exceptions take a stamp:
// an extent that reads back as one of this run's own stamps (a loose cache returns another
// block's data there: written back, it would keep that block cached), and, without an undo
// log (a run that destroys the card next), every block, since nothing is read first.
func (p *prober) writeExtents(ext []extent, copyBack bool) error {
	const batch = 4 << 20
	for len(ext) > 0 {
		var cur []extent
		var n uint64
		for len(ext) > 0 && (n == 0 || n+ext[0].n <= batch) {
			cur = append(cur, ext[0])
			n += ext[0].n
			ext = ext[1:]
		}
		recs := make([]record, len(cur))
		for i, e := range cur {
			if p.undo == nil {
				break // NoUndo: nothing to save
			}
			buf := alignedBuf(int(e.n))
			if _, err := p.dev.ReadAt(buf, int64(e.off)); err != nil {
				if _, err = p.dev.ReadAt(buf, int64(e.off)); err != nil {
					return &ioFault{"read (to save them)", e.off, int(e.n), err}
				}
			}
			p.res.BytesRead += e.n
			recs[i] = record{off: e.off, data: buf, batch: p.batch, copy: copyBack && !p.holdsOwnStamp(buf)}
		}
		start := len(p.records)
		if p.undo != nil {
			if err := p.undo.save(recs); err != nil {
				return err
			}
			p.records = append(p.records, recs...)
		}
		p.batch++
		hook("logged")
		for i, e := range cur {
			var buf []byte
			if p.undo != nil && recs[i].copy {
				buf = recs[i].data
				p.res.BytesCopied += e.n
			} else {
				buf = alignedBuf(int(e.n))
				for o := uint64(0); o < e.n; o += p.B {
					fillStamp(buf[o:o+p.B], p.nonce, e.off+o)
				}
			}
			if _, err := p.dev.WriteAt(buf, int64(e.off)); err != nil {
				// Retried once, as a card may fail a write transiently; a second failure is
				// the verdict's business.
				if _, err = p.dev.WriteAt(buf, int64(e.off)); err != nil {
					// This extent and the rest of the batch were never written: nothing
					// of theirs to put back.
					if p.undo != nil {
						p.records = p.records[:start+i]
					}
					return &ioFault{"write", e.off, int(e.n), err}
				}
			}
			p.res.BytesWritten += e.n
		}
		hook("written")
		p.progress()
	}
	return nil
}

// holdsOwnStamp says whether any sector of b holds one of this run's stamps.
func (p *prober) holdsOwnStamp(b []byte) bool {
	for s := 0; s+sectorSize <= len(b); s += sectorSize {
		if string(b[s:s+len(stampMagic)]) == stampMagic && sectorIsOurs(b[s:s+sectorSize], p.nonce, p.scratch[:]) {
			return true
		}
	}
	return false
}

// progress logs what the probe has written so far, at most every progressEvery, with the
// rate the card has shown and the time left by the estimate.
func (p *prober) progress() {
	now := time.Now()
	if now.Sub(p.lastProgress) < progressEvery {
		return
	}
	p.lastProgress = now
	el := now.Sub(p.start)
	line := fmt.Sprintf("capacity: %s written, %s read in %v", size(p.res.BytesWritten), size(p.res.BytesRead), el.Round(time.Second))
	if el > 0 && p.res.BytesWritten > 0 {
		rate := float64(p.res.BytesWritten+p.res.BytesRead) / el.Seconds()
		line += fmt.Sprintf(" (%.1f MB/s read and written)", rate/1e6)
		if left := float64(p.res.Estimate.Written+p.res.Estimate.Read) - float64(p.res.BytesWritten+p.res.BytesRead); left > 0 {
			line += fmt.Sprintf("; a genuine card needs about %v more", (time.Duration(left/rate) * time.Second).Round(time.Second))
		}
	}
	p.logf("%s", line)
}

// progressEvery is the longest the probe stays silent while it writes or restores.
const progressEvery = 10 * time.Second

// read reads back the block at off.
func (p *prober) read(off uint64) (Observation, error) {
	buf := alignedBuf(int(p.B))
	if _, err := p.dev.ReadAt(buf, int64(off)); err != nil {
		if _, err2 := p.dev.ReadAt(buf, int64(off)); err2 != nil {
			return Observation{Offset: off, State: StateError, Err: err.Error()}, nil
		}
	}
	p.res.BytesRead += p.B
	return classify(buf, p.nonce, off, make([]byte, sectorSize)), nil
}

func (p *prober) readAll(pos []uint64) ([]Observation, error) {
	out := make([]Observation, len(pos))
	for i, o := range pos {
		var err error
		if out[i], err = p.read(o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// check makes the card forget what only its caches hold, then reads pos back. It returns the
// observations and a line saying how the caches were defeated. Without a reset, outrun says
// whether to write past a cache (the rounds) or only flush (the reference block and the wrap's
// confirmation, before the wrap is known: a flush volume could land on them).
func (p *prober) check(pos []uint64, outrun bool) ([]Observation, string, error) {
	if err := p.dev.Sync(); err != nil {
		return nil, "", fmt.Errorf("flush: %w", err)
	}
	if p.reset {
		if err := p.t.Reset(); err != nil {
			return nil, "", fmt.Errorf("reset the card: %w", err)
		}
		obs, err := p.readAll(pos)
		return obs, "flushed, card reset", err
	}
	if !outrun {
		obs, err := p.readAll(pos)
		return obs, "flushed", err
	}
	if p.cacheKnown {
		if p.cacheBound > 0 {
			if err := p.flushVolume(p.cacheBound); err != nil {
				return nil, "", err
			}
		}
		obs, err := p.readAll(pos)
		return obs, fmt.Sprintf("flushed, %s written past the cache", size(p.cacheBound)), err
	}
	// The cache is not known yet: write past ever more of it until blocks show as lost (then
	// once more, since a direct-mapped cache forgets blocks out of their order) or MaxCache
	// hides nothing.
	obs, err := p.readAll(pos)
	if err != nil {
		return nil, "", err
	}
	vol := uint64(0)
	seen := anyBad(obs)
	atOnce := obs // what came back before anything was written past a cache
	for v := uint64(firstFlush); v <= p.maxCache; v *= 2 {
		// Only the new part: what counts is how much the card saw since the probe's blocks.
		if err := p.flushRange(p.below(v), p.below(vol)); err != nil {
			return nil, "", err
		}
		vol = v
		if obs, err = p.readAll(pos); err != nil {
			return nil, "", err
		}
		if seen && anyBad(atOnce) && sameLosses(atOnce, obs) {
			// Every loss showed before anything was written past a cache, and writing past
			// the smallest volume showed no other: no cache held the round's lost blocks,
			// the last ones it wrote (a cache keeps those, and the volume evicts them). The
			// later rounds only flush, and are cheap: as narrow as with a reset.
			p.cacheKnown, p.cacheBound, p.flushAlt = true, 0, true
			p.fanout = min(p.fanout, 16)
			return obs, fmt.Sprintf("flushed, %s written past any cache: the lost blocks showed before it and no other after it: no cache holds them", size(vol)), nil
		}
		if seen {
			break // one more round after the first loss
		}
		seen = anyBad(obs)
	}
	// The next round writes the other region: this one is what a cache holds now.
	p.cacheKnown, p.cacheBound, p.flushAlt = true, vol, true
	if !seen {
		return obs, fmt.Sprintf("flushed, %s written past any cache: none up to that size hides a loss", size(vol)), nil
	}
	return obs, fmt.Sprintf("flushed, %s written past the cache (lost blocks showed)", size(vol)), nil
}

// firstFlush is the first volume written past a cache: a sixteenth of a MiB, so that a card
// whose losses show at once (no cache) costs little more than the probe's own blocks.
const firstFlush = 64 << 10

// sameLosses says whether two readings of the same blocks lost the same ones.
func sameLosses(a, b []Observation) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Good() != b[i].Good() {
			return false
		}
	}
	return true
}

func anyBad(obs []Observation) bool {
	return slices.ContainsFunc(obs, func(o Observation) bool { return !o.Good() })
}

// flushVolume writes vol bytes the card has not just seen, so that any cache of up to vol
// bytes holds none of the probe's blocks afterwards. The bytes are the top of the range in
// doubt, just below the wrap or the end: where a counterfeit's flash is missing, so that a
// cache that holds only what lands beyond the flash (f3's model) is written past as surely as
// one that holds everything. Two regions are written in turn (a cache holding one after a
// round is emptied by the other); the probe's blocks are skipped.
func (p *prober) flushVolume(vol uint64) error {
	top := p.below(0)
	if p.flushAlt {
		top = p.below(vol)
	}
	p.flushAlt = !p.flushAlt
	return p.flushRange(top-min(vol, top-2*mib), top)
}

// below is the address vol bytes below the top of the flush area (the limit), never under
// 2 MiB.
func (p *prober) below(vol uint64) uint64 {
	if vol >= p.limit-2*mib {
		return 2 * mib
	}
	return (p.limit - vol) / p.B * p.B
}

// flushRange writes [from, to) below the limit, skipping the probe's blocks.
func (p *prober) flushRange(from, to uint64) error {
	var ext []extent
	for o := from; o < to && o+p.B <= p.limit; o += p.B {
		if p.probeSet[o] {
			continue
		}
		if n := len(ext); n > 0 && ext[n-1].off+ext[n-1].n == o && ext[n-1].n < 1<<20 {
			ext[n-1].n += p.B
		} else {
			ext = append(ext, extent{o, p.B})
		}
	}
	return p.writeExtents(ext, true)
}

// restore replays the undo log (in reverse) and removes it. The blocks written back as they
// were (copy records) hold their data already: only the stamped ones are written.
func (p *prober) restore() error {
	var stamped []record
	for _, r := range p.records {
		if !r.copy {
			stamped = append(stamped, r)
		}
	}
	half := len(replayOrder(stamped)) / 2
	err := replay(p.dev, p.meta, stamped, false, func(done int, r record) {
		p.res.BytesWritten += uint64(len(r.data))
		if done == half {
			hook("restoring")
		}
		p.progress()
	})
	if err != nil {
		return err
	}
	return p.undo.remove()
}

// describe says what a block read back as.
func describe(o Observation) string {
	switch o.State {
	case StateOwn:
		return "as written"
	case StateOverwritten:
		return "the block written at " + size(o.By)
	case StateTorn:
		return fmt.Sprintf("%d of %d sectors as written", o.OwnSectors, o.Sectors)
	case StateError:
		return "a read error: " + o.Err
	case StateLost:
		if o.Zero {
			return "zeroes"
		}
		return "not what was written"
	}
	return o.State
}

// size prints a byte offset or size: bytesize.Format, with the exact count beside it where
// Format rounds.
func size(n uint64) string {
	f := bytesize.Format(n)
	if back, err := bytesize.Parse(f); err == nil && back == n {
		return f
	}
	return fmt.Sprintf("%s (%d bytes)", f, n)
}

// span prints the range of positions.
func span(pos []uint64) string {
	if len(pos) == 0 {
		return "nothing"
	}
	return size(pos[0]) + " … " + size(pos[len(pos)-1])
}
