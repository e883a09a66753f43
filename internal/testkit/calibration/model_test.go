package calibration

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/probe"
)

// The in-model check: each target's measurement replayed on the model alone, as request
// streams shaped like those of the randio suite and the probe (no filesystem, no host), in
// modelled time. It runs in a second and says whether a profile can pass its targets at all;
// make bench-calibration measures the same through ext4, the loop device and the served card in
// real time.

// modelCard is the card size of the in-model randio measurements (fsbench run's default size).
const modelCard = 1 << 30

// randioShape is what the randio suite does to the card, without the filesystem: a file of
// fileSize written sequentially in 512 KiB requests and flushed, then random 4 KiB writes in it
// for runtime (modelled), then random 4 KiB reads. The file starts where the AU-mapped part
// starts (a filesystem puts a file anywhere; the FAT area would flatter an AU card).
type randioShape struct {
	fileSize uint64
	runtime  time.Duration
	seqBlock uint64 // the sequential write's request size (0: the suite's 512 KiB)
	used     bool   // the run starts from a used card (--card-state used)
}

// IozoneRandio is the randio configuration of the sources' iozone runs (iozone -e -I -s 100M
// -r 4k): a 100 MiB file; 20 s per random test, long enough that a card with a random-write log
// is measured mostly with its log full, as iozone's 25600 writes measured it.
var IozoneRandio = randioShape{fileSize: 100 << 20, runtime: 20 * time.Second}

// defaultRandio is fsbench's own randio defaults (plan.DefaultSuiteParams).
var defaultRandio = randioShape{fileSize: 256 << 20, runtime: 10 * time.Second}

func newModel(t testing.TB, profile string, size uint64) *flash.Model {
	t.Helper()
	p, err := flash.Lookup(profile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := flash.NewModel(p, size)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func do(t testing.TB, m *flash.Model, r flash.Request) time.Duration {
	t.Helper()
	d, err := m.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fileStart is where the in-model file begins: after the page-mapped FAT area, AU-aligned.
func fileStart(p flash.Profile) uint64 {
	if p.FTL == flash.FTLPage {
		return 0
	}
	return uint64(p.PageMappedArea) + uint64(p.AUSize)
}

// randio returns the randio figures of the shape on a fresh model card.
func (s randioShape) randio(t testing.TB, profile string) (seqMBps, writeIOPS, readIOPS float64) {
	m := newModel(t, profile, modelCard)
	start := fileStart(m.Profile())
	var wt time.Duration
	for off := start; off < start+s.fileSize; off += 512 << 10 {
		wt += do(t, m, flash.Request{Op: flash.OpWrite, Off: off, Len: 512 << 10})
	}
	wt += do(t, m, flash.Request{Op: flash.OpFlush})
	seqMBps = float64(s.fileSize) / wt.Seconds() / 1e6
	rng := rand.New(rand.NewPCG(1, 11))
	var rw time.Duration
	n := 0
	for rw < s.runtime {
		rw += do(t, m, flash.Request{Op: flash.OpWrite, Off: start + rng.Uint64N(s.fileSize/4096)*4096, Len: 4096})
		n++
	}
	rw += do(t, m, flash.Request{Op: flash.OpFlush})
	writeIOPS = float64(n) / rw.Seconds()
	var rr time.Duration
	const reads = 2000
	for i := 0; i < reads; i++ {
		rr += do(t, m, flash.Request{Op: flash.OpRead, Off: start + rng.Uint64N(s.fileSize/4096)*4096, Len: 4096})
	}
	return seqMBps, writeIOPS, reads / rr.Seconds()
}

// modelDevice is the probe's view of a model card: latencies are the model's, nothing else.
type modelDevice struct{ m *flash.Model }

func (d modelDevice) io(op flash.Op, off uint64, n int) (time.Duration, error) {
	// The loop device and the FUSE server split requests at 1 MiB.
	var total time.Duration
	for done := uint64(0); done < uint64(n); done += 1 << 20 {
		l, err := d.m.Do(flash.Request{Op: op, Off: off + done, Len: min(uint64(n)-done, 1<<20)})
		if err != nil {
			return 0, err
		}
		total += l
	}
	return total, nil
}
func (d modelDevice) ReadAt(p []byte, off uint64) (time.Duration, error) {
	return d.io(flash.OpRead, off, len(p))
}
func (d modelDevice) WriteAt(p []byte, off uint64) (time.Duration, error) {
	return d.io(flash.OpWrite, off, len(p))
}
func (d modelDevice) Discard(off, n uint64) error {
	_, err := d.m.Do(flash.Request{Op: flash.OpDiscard, Off: off, Len: n})
	return err
}
func (d modelDevice) Size() uint64      { return d.m.Size() }
func (d modelDevice) BlockSize() uint64 { return 512 }
func (d modelDevice) Direct() bool      { return true }

// probeCard is the card size the probe measurements use (the bench's too).
const probeCard = 256 << 20

// openAU returns the probe's open-AU figures on a fresh model card.
func openAU(t testing.TB, profile string) (two, three float64, est probe.Estimate) {
	r, err := probe.Run(context.Background(), modelDevice{newModel(t, profile, probeCard)}, probe.Options{Write: true, MaxReadBlock: 1 << 20})
	if err != nil {
		t.Fatalf("probe %s: %v", profile, err)
	}
	return OpenAUFigures(r)
}

// modelFigures measures every target of profile in the model alone.
func modelFigures(t testing.TB, profile string) map[Measure]float64 {
	out := map[Measure]float64{}
	need := map[Measure]bool{}
	for _, tg := range For(profile) {
		need[tg.Measure] = true
	}
	if need[SeqWrite] || need[RandWrite] || need[RandRead] {
		out[SeqWrite], out[RandWrite], out[RandRead] = IozoneRandio.randio(t, profile)
	}
	if need[RandWriteDefault] {
		_, out[RandWriteDefault], _ = defaultRandio.randio(t, profile)
	}
	if need[OpenAU2] || need[OpenAU3] || need[OpenAURatio] || need[OpenAUs] {
		two, three, est := openAU(t, profile)
		out[OpenAU2], out[OpenAU3], out[OpenAURatio], out[OpenAUs] = two, three, two/three, float64(est.Value)
	}
	if need[QueueReadGain] || need[QueueWriteGain] || need[QueueRead] || need[QueueWrite] {
		p, err := flash.Lookup(profile)
		if err != nil {
			t.Fatal(err)
		}
		// A 4 GiB card: the class test's 256 MiB area runs inside an SLC cache of 1/8 of the
		// card, as on the sources' 32-64 GB cards.
		r1, w1, err := flash.QueuedIOPS(p, 4<<30, probeCard, 1, 4000, 1)
		if err != nil {
			t.Fatal(err)
		}
		r32, w32, err := flash.QueuedIOPS(p, 4<<30, probeCard, 32, 4000, 1)
		if err != nil {
			t.Fatal(err)
		}
		out[QueueReadGain], out[QueueWriteGain], out[QueueRead], out[QueueWrite] = r32/r1, w32/w1, r32, w32
	}
	if need[SLCFound] || need[SLCAfter] || need[SLCAfterRatio] {
		out[SLCFound], out[SLCAfter], out[SLCAfterRatio] = sustainedFigures(t, profile)
	}
	for m := range need {
		if m.FSOnly() {
			out[m] = math.NaN() // see Measure.FSOnly: the benchmark measures it
		}
	}
	return out
}

// sustainedCard is the card size of the sustained-write measurements (the bench's too).
const sustainedCard = 512 << 20

// sustainedFigures runs the probe's sustained-write test on a fresh model card: the cache it
// finds ÷ the profile's, the rate after it, and that rate ÷ the burst.
func sustainedFigures(t testing.TB, profile string) (found, after, ratio float64) {
	m := newModel(t, profile, sustainedCard)
	r, err := probe.Sustained(context.Background(), modelDevice{m}, probe.SustainedOptions{Idle: -1})
	if err != nil {
		t.Fatalf("sustained %s: %v", profile, err)
	}
	return sustainedRatios(r, m.Profile())
}

// sustainedRatios are the SLC targets' figures from a sustained test of a card of profile.
func sustainedRatios(r *probe.SustainedResult, p flash.Profile) (found, after, ratio float64) {
	if !r.First.Cliff || p.SLC == nil {
		return math.NaN(), math.NaN(), math.NaN()
	}
	found = float64(r.CacheBytes) / float64(p.SLC.FreshBytes(r.SizeBytes, uint64(p.PageSize)))
	return found, r.First.AfterMBps, r.First.AfterMBps / r.First.BurstMBps
}

// TestTargetsInModel: every profile meets every target in the model alone. A profile that
// cannot is wrong before any host adds to it.
func TestTargetsInModel(t *testing.T) {
	for _, profile := range Profiles() {
		t.Run(profile, func(t *testing.T) {
			figs := modelFigures(t, profile)
			for _, tg := range For(profile) {
				v := figs[tg.Measure]
				if tg.Measure.FSOnly() {
					t.Logf("%-20s %-55s only through a filesystem (make bench-calibration)", tg.Measure, tg.What)
					continue
				}
				t.Logf("%-20s %-55s %10.4g %-5s want %s", tg.Measure, tg.What, v, tg.Measure.Unit(), tg.Tolerance())
				if !tg.Within(v) {
					t.Errorf("%s: %s %.4g %s, want %s (%s)", profile, tg.What, v, tg.Measure.Unit(), tg.Tolerance(), tg.Source)
				}
			}
		})
	}
}

// TestTargetsCoverProfiles: every built-in profile has targets and says which calibration it
// carries; every target names a built-in profile.
func TestTargetsCoverProfiles(t *testing.T) {
	for _, name := range flash.Builtins() {
		p, err := flash.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(For(name)) == 0 {
			t.Errorf("profile %s has no calibration targets", name)
		}
		if p.Calibration < 1 {
			t.Errorf("profile %s: calibration %d, want the version of its check (>= 1)", name, p.Calibration)
		}
	}
	for _, tg := range Targets {
		if _, err := flash.Lookup(tg.Profile); err != nil {
			t.Errorf("target %s of %s: %v", tg.Measure, tg.Profile, err)
		}
		if tg.Source == "" || tg.What == "" || math.IsNaN(tg.Min) {
			t.Errorf("target %s of %s has no source or description", tg.Measure, tg.Profile)
		}
	}
}
