// Package endurance is the endurance suite: a card run to its end, per variant. On a fresh
// card a day of a device's writes (the workload) is repeated round after round, and what the
// filesystem promised is read back from the card after every round, until the card fails. It
// records when each milestone came, how the card's bad blocks grew, what the filesystem did
// and how fast it still was, and checks the wear line's predicted lifetime against the rounds
// the card really took. The loop is internal/endurance's; this package declares the suite:
// its test, its [endurance] table, its verdict and its tables.
package endurance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/endurance"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Name is the suite's name; Test its one test.
const (
	Name = plan.EnduranceSuite
	Test = "endurance"
)

// entry is the test's catalog entry.
var entry = catalog.Test{Name: Test, Unit: catalog.Rounds, Better: catalog.HigherIsBetter, Quantity: catalog.Amount,
	Title: "rounds to the first error",
	Doc: "a fresh card per variant and repetition; a day of writes (--workload: bootlin, logging or update) repeated round after round, " +
		"what the filesystem promised read back from the card after each round, until the card fails; headline: the rounds to the first error the host saw " +
		"(an I/O error or wrong data); also the card turning read-only, the end, bad blocks, what the filesystem did, its speed, and the wear line's prediction"}

// Params are the suite's sizes: its [endurance] table.
type Params struct {
	// Workload is the day repeated: bootlin (the default run's write tests), logging or
	// update (--workload).
	Workload string `json:"workload"`
	// DayBytes sizes the logging and update days (0: 32 and 64 MiB).
	DayBytes uint64 `json:"day_bytes"`
	// AfterError is how many rounds a card that still works runs after its first error.
	AfterError int `json:"after_error"`
	// MaxRounds bounds a card's rounds (0: none).
	MaxRounds int `json:"max_rounds"`
	// Seed draws the cards: card N of every variant is the same card, in every run with the
	// same seed.
	Seed uint64 `json:"seed"`
	// SnapshotEvery is how often a simulated card's state is saved for a resumed run.
	SnapshotEvery plan.Duration `json:"snapshot_every"`
}

// DefaultParams are the suite's defaults.
func DefaultParams() *Params {
	d := endurance.DefaultParams()
	return &Params{Workload: d.Workload, AfterError: d.AfterError, Seed: d.Seed, SnapshotEvery: plan.Duration{Duration: d.SnapshotEvery}}
}

// Check refuses a workload fsbench does not know and bounds that make no sense.
func (p *Params) Check() error {
	if !slices.Contains(endurance.Workloads, p.Workload) {
		return fmt.Errorf("workload %q: want one of %s", p.Workload, strings.Join(endurance.Workloads, ", "))
	}
	if p.AfterError < 0 || p.MaxRounds < 0 {
		return fmt.Errorf("after_error (%d) and max_rounds (%d) must not be negative", p.AfterError, p.MaxRounds)
	}
	if p.SnapshotEvery.Duration < 0 {
		return fmt.Errorf("snapshot_every must not be negative, not %s", p.SnapshotEvery.Duration)
	}
	return nil
}

// Suite is the endurance suite.
var Suite = suites.Suite{
	Name: Name, Rank: 55, OwnSetup: true,
	Title:    "the card run to its end: which filesystem keeps it alive longest",
	Tests:    []suites.Test{{Test: entry, Setup: true, Long: true, Run: run}},
	Params:   DefaultParams(),
	Verdicts: verdicts,
	Tables:   tables,
	Rules:    rules,
}

func init() { suites.Register(Suite) }

// run runs one card to its end for the repetition's variant.
func run(ctx context.Context, rep suites.Rep) ([]results.Measurement, error) {
	p := rep.Params(Name).(*Params)
	wl, err := endurance.NewWorkload(p.Workload, p.DayBytes)
	if err != nil {
		return nil, err
	}
	v := rep.Variant()
	dir, err := rep.StateDir(filepath.Join(Name, fmt.Sprintf("%s.rep%d", strings.ReplaceAll(v.Name, "/", "_"), rep.N())))
	if err != nil {
		return nil, err
	}
	tree, video, copies, videoCopies := rep.Dataset()
	card := rep.Card()
	profile := rep.CardProfile()
	r := &endurance.Runner{
		FS: repFS{rep: rep}, Card: card, Workload: wl, Dir: dir,
		Env: endurance.Env{
			Timed: rep.Timed, Source: tree, Video: video, Copies: copies, VideoCopies: videoCopies,
			RunTest: func(ctx context.Context, test string) ([]results.Measurement, error) {
				tctx, cancel := context.WithTimeout(ctx, rep.Timeout())
				defer cancel()
				return rep.RunTest(tctx, test)
			},
		},
		Params: endurance.Params{Workload: p.Workload, DayBytes: p.DayBytes, AfterError: p.AfterError, MaxRounds: p.MaxRounds,
			Seed: p.Seed, SnapshotEvery: p.SnapshotEvery.Duration},
		Name: fmt.Sprintf("%s #%d", v.Name, rep.N()), Trace: rep.Trace, Log: rep.Logf,
		// Card N of every variant is the same card: the variants are compared on equal cards.
		CardSeed: p.Seed*1000003 + uint64(rep.N()),
	}
	rated := profile
	if card != nil {
		prof, err := flash.CardProfile(profile)
		if err != nil {
			return nil, err
		}
		st, err := card.Status()
		if err != nil {
			return nil, err
		}
		r.CardName, r.Behaviour, r.Scale, rated = prof.Name, prof.EndOfLife.Behaviour, st.Scale, prof.Name
	} else {
		r.CardName = rep.Device()
		rated = verdict.DefaultCard // a real card: the estimate is the default card's
		r.Scale = 1
	}
	r.Predict = predictor(rated, r.Scale)
	res, err := r.Run(ctx)
	if err != nil {
		return nil, err
	}
	return []results.Measurement{measurement(res)}, nil
}

// measurement is the card's record as the test's measurement: its headline the rounds to the
// first error, or, for a card that never failed within the run's bounds, the rounds it ran
// (a lower bound, as the note says).
func measurement(res *results.Endurance) results.Measurement {
	m := results.Measurement{Test: Test, Status: results.OK, Unit: catalog.Rounds, Endurance: res,
		LogicalBytes: uint64(res.DayBytes * float64(res.Rounds))}
	if res.FirstError.Reached() {
		m.Value = results.Float(res.FirstError.Round)
	} else {
		m.Value = results.Float(float64(res.Rounds))
		m.Note = fmt.Sprintf("no error within %d rounds (%s): a lower bound", res.Rounds, res.End.What)
	}
	return m
}

// predictor turns the first round's measurements into the wear line's prediction: the
// day_lifetime_years on the rated card of the last of them that has one (the wear line's
// write tests of the Bootlin day, run one after the other as one day; the logging or update
// day as a whole), × 365.25 days × the card's endurance scale.
func predictor(card string, scale float64) func([]results.Measurement) (float64, float64, string) {
	return func(day []results.Measurement) (float64, float64, string) {
		var years float64
		var from []string
		for _, m := range day {
			if m.Trace == nil {
				continue
			}
			if rp, ok := m.Trace.Replay[card]; ok && rp.DayLifetimeYears > 0 {
				years = rp.DayLifetimeYears
				if m.Test != catalog.Day {
					from = append(from, m.Test)
				}
			}
		}
		if years == 0 {
			return 0, 0, ""
		}
		what := "the day"
		if len(from) > 0 {
			what = strings.Join(from, ", ")
		}
		return years * 365.25 * scale, years, fmt.Sprintf("day_lifetime_years of round 1's %s on %s, as the wear line computes it", what, card)
	}
}

// repFS is the repetition's filesystem as the endurance loop sees it.
type repFS struct{ rep suites.Rep }

func (f repFS) Dir() string                         { return f.rep.Mountpoint() }
func (f repFS) Make(ctx context.Context) error      { return f.rep.Make(ctx) }
func (f repFS) Mount(ctx context.Context) error     { return f.rep.Mount(ctx) }
func (f repFS) Unmount(ctx context.Context) error   { return f.rep.Unmount(ctx) }
func (f repFS) DeviceBytesWritten() (uint64, error) { return deviceWritten(f.rep.Device()) }
func (f repFS) State() endurance.FSState            { return fsState(f.rep.Device(), f.rep.Mountpoint()) }

// deviceWritten is the device's written bytes (sysfs), or its partition's.
func deviceWritten(dev string) (uint64, error) {
	st, err := blockdev.ReadStat("/sys", filepath.Base(dev))
	if err != nil {
		return 0, err
	}
	return st.WriteBytes(), nil
}

// errNoCounter marks a counter a filesystem does not keep.
var errNoCounter = errors.New("no such counter")

// fsState is what the filesystem mounted on dir says about itself: mounted read-only (the
// mount table), ext4's errors_count, btrfs's device error counters.
func fsState(dev, dir string) endurance.FSState {
	s := endurance.FSState{Errors: -1, Corruption: -1}
	s.ReadOnly = mountedReadOnly(dir)
	name := filepath.Base(dev)
	if b, err := os.ReadFile(filepath.Join("/sys/fs/ext4", name, "errors_count")); err == nil {
		fmt.Sscan(string(b), &s.Errors)
	}
	if e, c, err := btrfsErrors(name); err == nil {
		s.Errors, s.Corruption = e, c
	}
	return s
}

// mountedReadOnly reports whether dir is mounted read-only (a filesystem that remounted itself
// after an error).
func mountedReadOnly(dir string) bool {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[1] == dir {
			return slices.Contains(strings.Split(f[3], ","), "ro")
		}
	}
	return false
}

// btrfsErrors reads the error counters btrfs keeps for device name: read, write and flush
// errors, and corruption (checksum) errors (/sys/fs/btrfs/FSID/devinfo/N/error_stats).
func btrfsErrors(name string) (errs, corrupt int64, err error) {
	links, _ := filepath.Glob("/sys/fs/btrfs/*/devices/" + name)
	if len(links) == 0 {
		return 0, 0, errNoCounter
	}
	fsDir := filepath.Dir(filepath.Dir(links[0]))
	stats, _ := filepath.Glob(filepath.Join(fsDir, "devinfo", "*", "error_stats"))
	if len(stats) == 0 {
		return 0, 0, errNoCounter
	}
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			return 0, 0, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			var k string
			var v int64
			if n, _ := fmt.Sscan(line, &k, &v); n != 2 {
				continue
			}
			switch k {
			case "corruption_errs":
				corrupt += v
			case "read_errs", "write_errs", "flush_errs":
				errs += v
			}
		}
	}
	return errs, corrupt, nil
}
