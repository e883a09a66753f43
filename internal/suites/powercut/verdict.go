package powercut

import (
	"fmt"
	"math"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/stats"
	"github.com/fsbench/fsbench/internal/verdict"
)

// powerLossPriority is the powercut suite's verdict, in its own terms.
const powerLossPriority = "whole after a cut"

// mPowerLoss is the power-loss concern: per recording (repetition), the share of power cuts a
// variant came through whole (mounted without repair, fsck clean, no promise broken).
var mPowerLoss = func() verdict.Metric {
	m := verdict.FigureMetric(entry)
	// At the same share of whole cuts, the variant that broke fewer promises of its own (on
	// cuts the card did not damage) is the safer one.
	m.Tiebreak = func(r *results.Run, variant string) float64 { return ackLossRate(r, variant) }
	return m
}()

// PowerLossRules explains the power-loss concern, for the report footer (Suite.Rules).
const PowerLossRules = `Power cuts: the share of power cuts of the simulated card after which the filesystem ` +
	`mounted without repair, its checker found it clean, and it kept every promise: what it acknowledged (fsync, fdatasync, syncfs) ` +
	`read back, acknowledged deletions stayed deleted, and an atomic replace in flight showed the old or the new file. ` +
	`The cuts are made on the card's recorded request stream by its profile's power-loss model: a protected card loses nothing; ` +
	`a volatile cache loses at most its size of what was not flushed; a write buffer no flush empties loses at most its size of ` +
	`the last writes, flushed or not, so no filesystem can keep a promise within that bound; torn, paired and merged pages where the profile says so. ` +
	`Whose fault: a broken promise on a cut where the card destroyed nothing outside what the filesystem wrote since its last flush ` +
	`is the filesystem's; where it did (flushed writes a write buffer lost, a torn page's neighbours, a paired page, a merge's pages) ` +
	`the table says how the filesystem came through: unharmed, detected (a mount or read that failed, or the checker), repaired, or silently wrong. ` +
	`Each repetition is one recording with its own seed; cuts of one recording are related, so the interval of a share is over ` +
	`the recordings (cluster-robust, t with recordings-1 degrees of freedom, never narrower than Wilson's over the cuts), and ` +
	`Wilson's over the cuts, which treats them as independent, only for a variant with one recording. The verdict compares the ` +
	`recordings' shares with the Mann-Whitney U test at p <= 0.05, as every verdict does; unacknowledged work lost is expected and not counted.`

// hasPowerCut reports whether the run has powercut figures.
func hasPowerCut(r *results.Run) bool {
	for _, m := range r.Measurements {
		if m.PowerCut != nil {
			return true
		}
	}
	return false
}

// powerCutRecordings is a variant's powercut figures, one per recording (repetition).
func powerCutRecordings(r *results.Run, variant string) []*results.PowerCut {
	var out []*results.PowerCut
	for _, m := range r.Cell(variant, Test) {
		if m.PowerCut != nil && !m.Warmup {
			out = append(out, m.PowerCut)
		}
	}
	return out
}

// fsBroken is the number of cuts of p where the filesystem broke a promise the card did not
// make it break. Results written before the card's damage was told apart count every cut
// that lost acknowledged data.
func fsBroken(p *results.PowerCut) int {
	if p.Live != nil {
		return p.Live.BrokenCuts // live cuts: broken, whoever's fault
	}
	if p.FSBrokenCuts.Of > 0 {
		return p.FSBrokenCuts.Count
	}
	return p.AckLossCuts.Count
}

// ackLossRate is the share of a variant's cuts, over all its recordings, where the filesystem
// broke a promise of its own.
func ackLossRate(r *results.Run, variant string) float64 {
	cuts, broken := 0, 0
	for _, p := range powerCutRecordings(r, variant) {
		cuts += p.Cuts
		broken += fsBroken(p)
	}
	if cuts == 0 {
		return 0
	}
	return float64(broken) / float64(cuts)
}

// mAckLoss is, per repetition, the share of power cuts where the filesystem broke a promise
// of its own: compare's regression that needs no significance.
var mAckLoss = verdict.Metric{Regressed: func(a, b *results.Run, variant string) bool { return ackLossRate(b, variant) > ackLossRate(a, variant) },
	Key: "acked_loss", Title: "power cuts where the filesystem broke a promise", Short: "broken", Unit: catalog.Percent,
	Better: catalog.LowerIsBetter, Quantity: catalog.Amount, Tests: []string{Test},
	Combine: verdict.Single(Test, func(m results.Measurement) (float64, bool) {
		if m.PowerCut == nil || m.PowerCut.Cuts == 0 {
			return 0, false
		}
		return 100 * float64(fsBroken(m.PowerCut)) / float64(m.PowerCut.Cuts), true
	})}

// share is a count of a variant's cuts over all its recordings, with its 95 % interval.
type share struct {
	k, n       int
	pct        float64
	lo, hi     float64
	recordings int
}

// String is "94.0 (89.0-96.8)".
func (s share) String() string {
	return fmt.Sprintf("%s (%s-%s)", figure.Format(s.pct), figure.Format(s.lo), figure.Format(s.hi))
}

// recordingShare pools per-recording counts ks of ns cuts. Cuts of one recording share its
// stream and its filesystem's history, so they are not independent trials: with several
// recordings the interval is the cluster-robust one of the pooled share (the ratio estimator's
// variance over recordings, t with recordings-1 degrees of freedom), widened to Wilson's over
// the cuts where that is wider (recordings that happen to agree do not make cuts certain);
// with one recording, Wilson's over its cuts, which treats them as independent.
func recordingShare(ks, ns []int) share {
	s := share{recordings: len(ks)}
	for i := range ks {
		s.k += ks[i]
		s.n += ns[i]
	}
	if s.n == 0 {
		return s
	}
	p := float64(s.k) / float64(s.n)
	wlo, whi := stats.Wilson(s.k, s.n)
	s.pct, s.lo, s.hi = 100*p, 100*wlo, 100*whi
	if m := len(ks); m >= 2 {
		var ss float64
		for i := range ks {
			d := float64(ks[i]) - p*float64(ns[i])
			ss += d * d
		}
		se := math.Sqrt(float64(m)/float64(m-1)*ss) / float64(s.n)
		t := t975(m - 1)
		s.lo = min(s.lo, 100*max(0, p-t*se))
		s.hi = max(s.hi, 100*min(1, p+t*se))
	}
	return s
}

// t975 is the 97.5 % quantile of Student's t with df degrees of freedom (a two-sided 95 %
// interval).
func t975(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < 1 {
		return math.Inf(1)
	}
	if df <= len(table) {
		return table[df-1]
	}
	return 1.96
}

// intervalWords says which interval a share has.
func intervalWords(recordings int) string {
	if recordings >= 2 {
		return fmt.Sprintf("95 %% interval over %d recordings", recordings)
	}
	return "95 % Wilson interval over the cuts of one recording, as if independent"
}

// variantCuts sums a variant's recordings.
type variantCuts struct {
	sum                      results.PowerCut
	whole, broken            share
	recoveryP50, unsyncedP50 float64
}

func sumRecordings(recs []*results.PowerCut) variantCuts {
	var v variantCuts
	var wk, bk, ns []int
	var p50, p50u []float64
	s := &v.sum
	for _, p := range recs {
		s.AddCounts(p)
		p50 = append(p50, p.RecoveryP50Seconds)
		p50u = append(p50u, p.UnsyncedP50Seconds)
		wk = append(wk, p.Safe.Count)
		bk = append(bk, fsBroken(p))
		ns = append(ns, p.Cuts)
	}
	v.whole, v.broken = recordingShare(wk, ns), recordingShare(bk, ns)
	v.recoveryP50, _ = verdict.Median(p50)
	v.unsyncedP50, _ = verdict.Median(p50u)
	return v
}

// powerLossVerdict names the variant that came through the most cuts whole, or every variant
// the recordings cannot tell from the best ("no clear winner"); then whose fault the broken
// promises were: the filesystems' own, and how each came through the card's damage.
func powerLossVerdict(r *results.Run, alpha float64) verdict.Verdict {
	t := verdict.Evaluate(r, mPowerLoss, alpha)
	v := verdict.Pick(powerLossPriority, t, alpha)
	v.Basis = "share of power cuts come through whole, per recording"
	if v.Winner == "" {
		return v
	}
	var notes []string
	if v.RunnerUp != "" && !v.Significant {
		tied := []string{v.Winner}
		best := t.Cells[v.Winner].Samples
		for _, name := range t.Order {
			if _, sig := verdict.Significance(best, t.Cells[name].Samples, alpha); name != v.Winner && t.SameGroup(name, v.Winner) && !sig {
				tied = append(tied, name)
			}
		}
		notes = append(notes, fmt.Sprintf("no clear winner: %s within noise (%s)", strings.Join(tied, ", "), v.Significance))
		v.Winner, v.RunnerUp, v.Margin = "", "", 0
	}
	var broken, card []string
	var model *results.PowerCut
	for _, rv := range verdict.RanVariants(r) {
		recs := powerCutRecordings(r, rv.Name)
		if len(recs) == 0 {
			continue
		}
		if model == nil {
			model = recs[0]
		}
		c := sumRecordings(recs)
		if c.broken.k > 0 {
			var kinds []string
			if n := c.sum.FSAckLossCuts; n > 0 {
				kinds = append(kinds, fmt.Sprintf("acknowledged data lost in %d", n))
			}
			if n := c.sum.FSAtomicityCuts; n > 0 {
				kinds = append(kinds, fmt.Sprintf("an atomic replace torn in %d", n))
			}
			what := ""
			if len(kinds) > 0 {
				what = ": " + strings.Join(kinds, ", ")
			}
			broken = append(broken, fmt.Sprintf("%s in %d of %d cuts (%s %%)%s", rv.Name, c.broken.k, c.broken.n, c.broken, what))
		}
		if s := c.sum; s.CardDamageCuts.Count > 0 {
			card = append(card, fmt.Sprintf("%s %d of %d (%s)", rv.Name, s.CardDamageCuts.Count, s.Cuts, throughWords(s)))
		}
	}
	if model != nil && model.Live != nil {
		notes = append(notes, liveBrokenNote(broken))
	} else if len(broken) > 0 {
		notes = append(notes, "broke promises on cuts the card did not damage (the filesystem's fault): "+strings.Join(broken, "; "))
	} else {
		notes = append(notes, "no filesystem broke a promise on a cut the card did not damage")
	}
	if len(card) > 0 {
		notes = append(notes, "cuts where the card destroyed data the filesystem had flushed or not written, and how it came through: "+strings.Join(card, "; "))
	}
	if model != nil && model.WriteBufferBytes > 0 {
		notes = append(notes, bufferBound(model))
	}
	if v.Note != "" {
		notes = append([]string{v.Note}, notes...)
	}
	v.Note = strings.Join(notes, "; ")
	return v
}

// bufferBound says what a write buffer no flush empties means for every filesystem.
func bufferBound(p *results.PowerCut) string {
	return fmt.Sprintf("on %s no filesystem can keep a promise made within the last %s it was sent: the card completes writes from a %s buffer that no flush empties (Linux sends none to a card without a cache)",
		p.Profile, bytesize.Format(p.WriteBufferBytes), bytesize.Format(p.WriteBufferBytes))
}

// throughWords is how a variant came through the card's damage.
func throughWords(s results.PowerCut) string {
	var parts []string
	for _, x := range []struct {
		n    int
		word string
	}{{s.CardUnharmed, "unharmed"}, {s.CardDetected, "detected"}, {s.CardRepaired, "repaired"}, {s.CardSilent, "silently wrong"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.word))
		}
	}
	return strings.Join(parts, ", ")
}

// PowerCutTable is the power-cut figures of every variant, over its recordings: the detail
// behind the matrix's power-loss column.
type PowerCutTable struct {
	Model   string // the card's power-loss model, in words
	Caption string // what the columns mean
	Header  []string
	Rows    [][]string
}

// PowerCutDetail builds the table; nil when the run has no powercut figures.
func PowerCutDetail(r *results.Run) *PowerCutTable {
	if !hasPowerCut(r) {
		return nil
	}
	t := &PowerCutTable{Header: []string{"variant", "recordings", "cuts", "whole %", "mounted %", "fsck clean %", "unrecoverable %",
		"broken by the fs", "ack'd lost / corrupt / unreadable", "torn renames", "deletes undone", "zero tails",
		"card damage", "through it: unharmed / detected / repaired / silent", "recovery p50 / max s", "unsynced lost p50 / max s", "leaked blocks"}}
	most := 0
	var full []string
	for _, v := range verdict.RanVariants(r) {
		recs := powerCutRecordings(r, v.Name)
		if len(recs) == 0 {
			continue
		}
		if t.Model == "" {
			t.Model = modelWords(recs[0])
		}
		c := sumRecordings(recs)
		s := c.sum
		most = max(most, len(recs))
		if s.StreamFull {
			full = append(full, fmt.Sprintf("%s (%d acknowledgements after it not checked)", v.Name, s.AcksUnrecorded))
		}
		pooled := func(get func(p *results.PowerCut) int) string {
			var ks, ns []int
			for _, p := range recs {
				ks, ns = append(ks, get(p)), append(ns, p.Cuts)
			}
			return recordingShare(ks, ns).String()
		}
		leaked := "n/a"
		if s.LeakedCuts > 0 {
			leaked = fmt.Sprint(s.LeakedBlocks)
		}
		fsck := pooled(func(p *results.PowerCut) int { return p.FsckClean.Count })
		if s.NoChecker == s.Cuts {
			fsck = "no checker" // nilfs2: judged by its mount and the verifier alone
		}
		through := "-"
		if s.CardDamageCuts.Count > 0 {
			through = fmt.Sprintf("%d / %d / %d / %d", s.CardUnharmed, s.CardDetected, s.CardRepaired, s.CardSilent)
		}
		brokenFS, damage := fmt.Sprintf("%d of %d", c.broken.k, s.Cuts), fmt.Sprintf("%d of %d", s.CardDamageCuts.Count, s.Cuts)
		if isLive(recs) {
			// Whose fault is unknown: the broken promises are counted, not charged.
			brokenFS, damage = fmt.Sprintf("%d of %d (live: fault unknown)", c.broken.k, s.Cuts), "unknown (live)"
		}
		t.Rows = append(t.Rows, []string{v.Name, fmt.Sprint(len(recs)), fmt.Sprint(s.Cuts), c.whole.String(),
			pooled(func(p *results.PowerCut) int { return p.MountWithoutRepair.Count }), fsck,
			pooled(func(p *results.PowerCut) int { return p.Unrecoverable.Count }),
			brokenFS,
			fmt.Sprintf("%d / %d / %d", s.AckedLost, s.AckedCorrupt, s.AckedUnreadable), fmt.Sprint(s.TornRenames),
			fmt.Sprint(s.Resurrected), fmt.Sprint(s.ZeroTails), damage, through,
			figure.Format(c.recoveryP50) + " / " + figure.Format(s.RecoveryMaxSeconds), figure.Format(c.unsyncedP50) + " / " + figure.Format(s.UnsyncedMaxSeconds), leaked})
	}
	t.Caption = fmt.Sprintf("%% of the cuts (%s) the filesystem came through whole (mounted without repair, checked clean, every promise kept), "+
		"mounted without repair, checked clean, could not be repaired; cuts where the filesystem broke a promise the card did not make it break; "+
		"files summed over the cuts; the cuts where the card destroyed data outside what the filesystem wrote since its last flush, and how the filesystem came through them",
		intervalWords(most))
	t.Caption += liveCaption(r)
	if len(full) > 0 {
		t.Caption += "; the recording filled its limit for " + strings.Join(full, ", ") + ": cuts were drawn within what it held"
	}
	return t
}

// modelWords names the kind of card and the rules of its power-loss model.
func modelWords(p *results.PowerCut) string {
	if p.Live != nil {
		return liveModelWords(p)
	}
	var kind string
	switch {
	case p.Protected:
		return p.Profile + ": power-loss protection, loses nothing it received"
	case p.VolatileCache:
		order := p.CacheOrder
		if order == "" {
			order = flash.CacheOrderAny
		}
		kind = fmt.Sprintf("a %s volatile cache, written back in %s order, lost unless flushed", bytesize.Format(p.CacheBytes), order)
		if p.CacheBytes == 0 {
			kind = "a volatile cache lost unless flushed" // results from before caches had a size
		}
	case p.WriteBufferBytes > 0:
		kind = fmt.Sprintf("a %s write buffer no flush empties", bytesize.Format(p.WriteBufferBytes))
	default:
		kind = "writes complete once programmed"
	}
	rules := []string{kind}
	for _, x := range []struct {
		on   bool
		word string
	}{{p.TornPage, "torn page"}, {p.PairedPage, "paired page"}, {p.MergeLoss, "merge loss"}} {
		if x.on {
			rules = append(rules, x.word)
		}
	}
	if len(rules) == 1 && !p.VolatileCache && p.WriteBufferBytes == 0 {
		return p.Profile + ": loses nothing it received"
	}
	return p.Profile + ": " + strings.Join(rules, ", ")
}
