package probe

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// AlignTest is the alignment test's data, smallest alignment first.
type AlignTest struct {
	// ReadSize is the size of each read (twice the logical block size, as flashbench
	// --blocksize=1024 on a 512-byte-sector card): the read "on" a boundary has half on each
	// side of it.
	ReadSize uint64       `json:"read_size"`
	Tries    int          `json:"tries"`
	Points   []AlignPoint `json:"points"`
	// NoiseNs is the robust spread (1.4826 × median absolute deviation) of the per-boundary
	// diffs, the median over alignments; ThresholdNs is the difference between two levels
	// that counts as a real step (see analyzeAlign).
	NoiseNs     float64 `json:"noise_ns"`
	ThresholdNs float64 `json:"threshold_ns"`
	// Steps are the alignments A where diff(A) − diff(A/2) exceeds the threshold: the
	// boundaries the device has (pages, plane groups, AUs).
	Steps []uint64 `json:"steps"`
	// Rechecked are the alignments read a second time, with twice the tries, because the
	// first reading gave an AU it could not confirm (see suspects).
	Rechecked []uint64 `json:"rechecked,omitempty"`
	// DurationNs is the wall time of the test.
	DurationNs int64 `json:"duration_ns"`
}

// AlignPoint is one alignment: the medians over its boundaries of the fastest of Tries reads
// before, across and after each boundary, and diff = on − (pre + post)/2.
type AlignPoint struct {
	Align  uint64    `json:"align"`
	PreNs  float64   `json:"pre_ns"`
	OnNs   float64   `json:"on_ns"`
	PostNs float64   `json:"post_ns"`
	DiffNs float64   `json:"diff_ns"`
	Diffs  []float64 `json:"diffs_ns"` // per boundary
}

// alignments returns the alignments to test, largest first: from opts.MaxAlign down to
// the read size, keeping only those with at least two odd multiples inside the device.
func alignments(size, readSize, maxAlign uint64) []uint64 {
	var out []uint64
	for a := maxAlign; a >= readSize; a /= 2 {
		if 3*a+readSize <= size {
			out = append(out, a)
		}
	}
	return out
}

// boundaries returns up to n boundaries of alignment a spread over the device. Only odd
// multiples of a: an even multiple is also a boundary of 2a, and would mix the larger
// boundary's cost into this alignment's figure. With odd multiples, diff(a) is the cost of
// the largest boundary that is exactly a, so each level of the device's geometry shows as
// a plateau and the step between two plateaus is sharp.
func boundaries(size, readSize, a uint64, n int) []uint64 {
	jmax := (size - readSize) / a
	odd := (jmax + 1) / 2 // odd j in [1, jmax]
	if odd == 0 {
		return nil
	}
	cnt := min(uint64(n), odd)
	out := make([]uint64, 0, cnt)
	for i := uint64(0); i < cnt; i++ {
		k := i * odd / cnt // spread evenly over the odd multiples
		out = append(out, (2*k+1)*a)
	}
	return out
}

func alignTest(ctx context.Context, dev Device, buf []byte, opts Options) (AlignTest, error) {
	rs := 2 * dev.BlockSize()
	t := AlignTest{ReadSize: rs, Tries: opts.AlignTries}
	start := time.Now()
	defer func() { t.DurationNs = int64(time.Since(start)) }()
	b := buf[:rs]
	// best holds, per alignment and boundary, the fastest pre/on/post read seen so far: a
	// recheck adds tries to the same boundaries instead of replacing what was measured.
	best := map[uint64][][3]time.Duration{}
	measure := func(a uint64, tries int) (AlignPoint, error) {
		p := AlignPoint{Align: a}
		pos := boundaries(dev.Size(), rs, a, opts.AlignPositions)
		if best[a] == nil {
			best[a] = make([][3]time.Duration, len(pos))
			for i := range best[a] {
				best[a][i] = [3]time.Duration{math.MaxInt64, math.MaxInt64, math.MaxInt64}
			}
		}
		var pres, ons, posts []float64
		for j, pos := range pos {
			bb := &best[a][j]
			// Interleaved, so that a slow moment of the host affects all three alike.
			for range tries {
				for i, off := range []uint64{pos - rs, pos - rs/2, pos} {
					d, err := dev.ReadAt(b, off)
					if err != nil {
						return p, err
					}
					bb[i] = min(bb[i], d)
				}
			}
			pre, on, post := float64(bb[0]), float64(bb[1]), float64(bb[2])
			pres, ons, posts = append(pres, pre), append(ons, on), append(posts, post)
			p.Diffs = append(p.Diffs, on-(pre+post)/2)
		}
		p.PreNs, p.OnNs, p.PostNs, p.DiffNs = median(pres), median(ons), median(posts), median(p.Diffs)
		return p, nil
	}
	logPoint := func(p AlignPoint, note string) {
		opts.Log("  align %-8s pre %6.0f µs  on %6.0f µs  post %6.0f µs  diff %6.1f µs%s",
			formatSize(p.Align), p.PreNs/1e3, p.OnNs/1e3, p.PostNs/1e3, p.DiffNs/1e3, note)
	}
	for _, a := range alignments(dev.Size(), rs, opts.MaxAlign) {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		p, err := measure(a, opts.AlignTries)
		if err != nil {
			return t, err
		}
		logPoint(p, "")
		t.Points = append(t.Points, p)
	}
	slices.SortFunc(t.Points, func(x, y AlignPoint) int { return cmp.Compare(x.Align, y.Align) })

	// One noisy moment must not decide the AU. When the analysis rests on points it cannot
	// confirm (see suspects), those alignments are read again with twice the tries, keeping
	// the fastest of all tries per read, and the analysis runs on the result.
	first := t
	au, _ := analyzeAlign(&first)
	for _, i := range suspects(first, au) {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		p, err := measure(t.Points[i].Align, 2*opts.AlignTries)
		if err != nil {
			return t, err
		}
		logPoint(p, "  (rechecked)")
		t.Points[i] = p
		t.Rechecked = append(t.Rechecked, p.Align)
	}
	t.DurationNs = int64(time.Since(start))
	return t, nil
}

// suspects returns the indexes of the alignment points worth reading again before trusting
// au: when the AU is only a lower bound or of low confidence, every alignment from the
// highest step below the AU (the table's own candidate) up to the largest one; a step that
// shows at the top of the sweep, where few boundaries fit in the device, is where a burst of
// host load most easily passes for structure.
func suspects(t AlignTest, au Estimate) []int {
	if au.Value == 0 || (!au.AtLeast && au.Confidence != Low) {
		return nil
	}
	from := len(t.Points) - 1
	for i, p := range t.Points {
		if slices.Contains(t.Steps, p.Align) && p.Align < au.Value {
			from = i
		}
	}
	var out []int
	for i := from; i < len(t.Points); i++ {
		out = append(out, i)
	}
	return out
}

// minThresholdNs is the smallest step analyzeAlign believes whatever the measured noise: the
// resolution of timing one request through the kernel is a few microseconds.
const minThresholdNs = 5000

// smallestAU is the smallest step that may be an AU when the evidence names candidates:
// smaller structures are pages and plane groups (flashbench's survey of cards found AUs of
// 512 KiB and more; eMMC erase groups start at 256 KiB).
const smallestAU = 256 << 10

// zSteps is how many standard errors apart two levels must be to count as different.
const zSteps = 4

// analyzeAlign finds the AU and the page size in the alignment data (smallest alignment
// first) and fills t's noise, threshold and steps.
//
// Noise: the diffs of the boundaries of one alignment all measure the same thing, so their
// spread is measurement noise: σ = 1.4826 × MAD per alignment, the median over alignments.
// The median of n diffs has a standard error of about 1.2533 σ / √n, so two medians of n
// and m diffs are "clearly different" when they differ by more than
// T(n, m) = 4 × 1.2533 σ √(1/n + 1/m), and at least 5 µs and 2 % of one read's time (the
// host's timing of a request is not finer). Large alignments have few boundaries inside the
// device (two for 64 MiB on a 256 MiB card), so their thresholds are wider: a lone noisy
// level at the top does not decide anything.
//
// AU: the device's largest boundary costs the most, and every alignment above it costs the
// same (an odd multiple of 8 MiB is also an AU boundary when the AU is 4 MiB). So the AU is
// the bottom of the top plateau. Walking down from the largest alignment, an alignment joins
// the plateau unless its diff is more than T below the plateau's level (the median of all
// the diffs of its members so far), and the points that contradict their neighbours are
// passed over (see noise below); the AU is the smallest member, provided that the plateau is
// clearly above zero and the alignment below it clearly lower (otherwise there is no
// structure to see: every boundary costs the same). Confidence: high when the plateau holds
// at least two alignments (a larger one confirms the AU) and the step down from it is at least
// 2T; medium when one of those holds; low otherwise. An AU equal to the largest alignment
// tested is only a lower bound (AtLeast, low).
//
// Page: the smallest alignment from which on every diff is clearly above zero, if a smaller
// alignment was tested that is not: crossing a page boundary means reading two pages, inside
// a page one. With the smallest alignment tested already above zero the page is at most the
// read size and is not resolved.
func analyzeAlign(t *AlignTest) (au, page Estimate) {
	au = Estimate{Confidence: None, Method: "alignment test (flashbench -a): read-time diff across boundaries vs alignment"}
	page = Estimate{Confidence: None, Method: "alignment test: smallest alignment whose boundary costs extra read time"}
	pts := t.Points
	if len(pts) < 2 {
		au.Evidence = "fewer than two alignments fit in the device"
		page.Evidence = au.Evidence
		return au, page
	}
	s := newAlignSweep(pts)
	t.NoiseNs = s.sigma
	t.ThresholdNs = s.thr(len(pts[0].Diffs), len(pts[0].Diffs)) // the threshold between two well-sampled levels
	t.Steps = s.steps()
	s.markContradictions()
	lo, pool := s.topPlateau()
	au = s.estimateAU(au, t, lo, pool)
	page = s.estimatePage(page)
	return au, page
}

// alignSweep is the alignment data with its noise model and the points taken as noise, shared
// by the steps of analyzeAlign.
type alignSweep struct {
	pts []AlignPoint
	// sigma is the noise of one diff (the median over alignments of 1.4826 × MAD); floor is
	// the smallest threshold believed whatever sigma says.
	sigma, floor float64
	// noise marks the points whose diffs do not set a plateau's level; noisy describes them
	// for the evidence.
	noise []bool
	noisy []string
}

func newAlignSweep(pts []AlignPoint) *alignSweep {
	var sigmas, reads []float64
	for _, p := range pts {
		if len(p.Diffs) >= 4 {
			sigmas = append(sigmas, 1.4826*mad(p.Diffs))
		}
		reads = append(reads, (p.PreNs+p.PostNs)/2)
	}
	return &alignSweep{
		pts:   pts,
		sigma: median(sigmas),
		floor: max(minThresholdNs, 0.02*median(reads)),
		noise: make([]bool, len(pts)),
	}
}

// thr is T(n, m), how far apart two medians of n and m diffs must be to count as different
// (m == 0: one median against zero).
func (s *alignSweep) thr(n, m int) float64 {
	v := 1 / float64(max(n, 1))
	if m > 0 {
		v += 1 / float64(m)
	}
	return max(zSteps*1.2533*s.sigma*math.Sqrt(v), s.floor)
}

// steps lists the alignments whose diff is clearly above the one below them.
func (s *alignSweep) steps() []uint64 {
	var out []uint64
	for i := 1; i < len(s.pts); i++ {
		if s.pts[i].DiffNs-s.pts[i-1].DiffNs > s.thr(len(s.pts[i].Diffs), len(s.pts[i-1].Diffs)) {
			out = append(out, s.pts[i].Align)
		}
	}
	return out
}

// markNoise takes point i as noise and says so in the evidence.
func (s *alignSweep) markNoise(i int) {
	p := s.pts[i]
	s.noise[i] = true
	s.noisy = append(s.noisy, fmt.Sprintf("%s (%.1f µs over %d boundaries)", formatSize(p.Align), p.DiffNs/1e3, len(p.Diffs)))
}

// near says whether points i and j read at the same level.
func (s *alignSweep) near(i, j int) bool {
	pts := s.pts
	return math.Abs(pts[i].DiffNs-pts[j].DiffNs) <= s.thr(len(pts[i].Diffs), len(pts[j].Diffs))
}

// markContradictions marks the points that contradict the sweep as noise: a spike (one
// alignment clearly above or below both neighbours while those agree) and a largest alignment
// clearly below the one under it (a boundary of a larger alignment is also one of every
// smaller one, so the true diff never falls as the alignment grows). Both are typical of the
// largest alignments, of which two or four boundaries fit in the device, read during a burst
// of host load; taken at face value, one of them made "an AU of at least 64 MiB" out of a
// sweep whose steps said 4 MiB. They stay members of the plateau they sit in, but their diffs
// do not set its level.
func (s *alignSweep) markContradictions() {
	pts := s.pts
	for i := 1; i < len(pts); i++ {
		spike := i+1 < len(pts) && s.near(i-1, i+1) && !s.near(i, i-1) && !s.near(i, i+1) &&
			(pts[i].DiffNs > pts[i-1].DiffNs) == (pts[i].DiffNs > pts[i+1].DiffNs)
		fallsAtTop := i == len(pts)-1 && !s.noise[i-1] && pts[i-1].DiffNs-pts[i].DiffNs > s.thr(len(pts[i].Diffs), len(pts[i-1].Diffs))
		if spike || fallsAtTop {
			s.markNoise(i)
		}
	}
}

// dip returns how many points from i down (1 or 2) are a dip the sweep climbs back out of:
// the two alignments below them read at the plateau's level again. The true diff never
// rises again below the AU (a smaller alignment's boundaries include none of the larger
// structure), so a return to the level means the low readings were the host's. Seen on
// sd-cheap-old (then an AU of 128 KiB) with QEMU guests running beside the probe: 8 and 4 MiB read
// low together while 2 MiB down to 128 KiB sat at the level, which made a 16 MiB AU.
func (s *alignSweep) dip(i int, pool []float64) int {
	atLevel := func(j int) bool {
		return j >= 0 && median(pool)-s.pts[j].DiffNs <= s.thr(len(s.pts[j].Diffs), len(pool))
	}
	for k := 1; k <= 2; k++ {
		if atLevel(i-k) && atLevel(i-k-1) {
			return k
		}
		if i-k < 0 {
			break
		}
	}
	return 0
}

// topPlateau walks down from the largest alignment and returns the index of the plateau's
// smallest member and the diffs that set its level.
func (s *alignSweep) topPlateau() (lo int, pool []float64) {
	pts := s.pts
	seed := len(pts) - 1
	for seed > 0 && s.noise[seed] {
		seed--
	}
	pool = slices.Clone(pts[seed].Diffs)
	lo = seed
	for i := seed - 1; i >= 0; i-- {
		if s.noise[i] {
			lo = i
			continue
		}
		// Only a clearly lower level ends the plateau: a higher one below it contradicts the
		// sweep (the true diff never falls as the alignment grows), so the plateau's own
		// points read low, and the level is better taken with it.
		if median(pool)-pts[i].DiffNs > s.thr(len(pts[i].Diffs), len(pool)) {
			k := s.dip(i, pool)
			if k == 0 {
				break
			}
			for j := i; j > i-k; j-- {
				s.markNoise(j)
			}
			lo = i - k + 1
			i -= k - 1
			continue
		}
		pool = append(pool, pts[i].Diffs...)
		lo = i
	}
	for lo < seed && s.noise[lo] { // a spike at the bottom of the plateau is not its edge
		lo++
	}
	return lo, pool
}

// estimateAU reads the AU off the top plateau starting at lo: none when its level is within
// the noise or it spans the whole sweep, else its smallest member, with the confidence the
// plateau's width and the step below it give.
func (s *alignSweep) estimateAU(au Estimate, t *AlignTest, lo int, pool []float64) Estimate {
	pts := s.pts
	top := len(pts) - 1
	level := median(pool)
	switch {
	case level <= s.thr(len(pool), 0):
		au.Evidence = fmt.Sprintf("no boundary costs extra: diff at the largest alignments %.1f µs, within the noise (%.1f µs)", level/1e3, s.thr(len(pool), 0)/1e3)
		return au
	case lo == 0:
		au.Evidence = fmt.Sprintf("diff %.1f µs at every alignment from %s to %s: no step, so no AU boundary inside that range", level/1e3, formatSize(pts[0].Align), formatSize(pts[top].Align))
		return au
	}
	below := pts[lo-1]
	step := level - below.DiffNs
	st := s.thr(len(below.Diffs), len(pool))
	au.Value = pts[lo].Align
	au.AtLeast = lo == top
	plateau := top - lo + 1
	score := 0
	if plateau >= 2 {
		score++
	}
	if step >= 2*st {
		score++
	}
	au.Confidence = [...]string{Low, Medium, High}[score]
	if au.AtLeast {
		au.Confidence = Low
	}
	au.Evidence = fmt.Sprintf("diff %.1f µs at %s and every larger alignment tested (%d up to %s), %.1f µs at %s: a step of %.1f µs against a threshold of %.1f µs (noise σ %.1f µs)",
		level/1e3, formatSize(pts[lo].Align), plateau, formatSize(pts[top].Align), below.DiffNs/1e3, formatSize(below.Align), step/1e3, st/1e3, s.sigma/1e3)
	if au.AtLeast {
		au.Evidence += atLeastEvidence(t.Steps, au.Value)
	}
	if len(s.noisy) > 0 {
		au.Evidence += "; taken as noise: " + strings.Join(s.noisy, ", ")
	}
	if len(t.Rechecked) > 0 {
		au.Evidence += fmt.Sprintf("; %d alignments read again with twice the tries", len(t.Rechecked))
	}
	return au
}

// atLeastEvidence explains an AU that is only a lower bound, and names the lower steps the
// table shows, so that the reader can weigh the two readings.
func atLeastEvidence(steps []uint64, au uint64) string {
	out := "; the plateau was not seen above it, so the AU may be larger: probe a larger device or raise --max-align"
	var lower []string
	for _, a := range steps {
		if a < au && a >= smallestAU {
			lower = append(lower, formatSize(a))
		}
	}
	if len(lower) > 0 {
		out += fmt.Sprintf("; the table also steps at %s: if the top step is the host's noise, the AU is %s (probe again on a quiet machine)",
			strings.Join(lower, ", "), lower[len(lower)-1])
	}
	return out
}

// estimatePage finds the page: the smallest alignment from which on every diff is clearly
// above zero. A page boundary costs a whole extra page read: the diff falls from that to about
// zero below the page. A small positive diff under a level many times its size is noise (seen:
// 29 µs under 646 µs on a busy host, which made an 8 KiB page of a 16 KiB one).
func (s *alignSweep) estimatePage(page Estimate) Estimate {
	pts := s.pts
	first := len(pts)
	for i := len(pts) - 1; i >= 0 && pts[i].DiffNs > s.thr(len(pts[i].Diffs), 0) &&
		(i == len(pts)-1 || pts[i].DiffNs >= pts[i+1].DiffNs/4); i-- {
		first = i
	}
	switch {
	case first == len(pts):
		page.Evidence = fmt.Sprintf("the largest alignment's diff %.1f µs is within the noise", pts[len(pts)-1].DiffNs/1e3)
	case first == 0:
		page.Value = pts[0].Align
		page.Confidence = Low
		page.Evidence = fmt.Sprintf("already the smallest alignment tested (%s) costs %.1f µs extra: the page is %s or smaller", formatSize(pts[0].Align), pts[0].DiffNs/1e3, formatSize(pts[0].Align))
	default:
		p, b := pts[first], pts[first-1]
		page.Value = p.Align
		step := p.DiffNs - b.DiffNs
		st := s.thr(len(p.Diffs), len(b.Diffs))
		page.Confidence = Medium
		if step >= 2*st {
			page.Confidence = High
		}
		page.Evidence = fmt.Sprintf("diff %.1f µs at %s, %.1f µs at %s (threshold %.1f µs)", p.DiffNs/1e3, formatSize(p.Align), b.DiffNs/1e3, formatSize(b.Align), st/1e3)
	}
	return page
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// mad is the median absolute deviation from the median.
func mad(xs []float64) float64 {
	m := median(xs)
	d := make([]float64, len(xs))
	for i, x := range xs {
		d[i] = math.Abs(x - m)
	}
	return median(d)
}
