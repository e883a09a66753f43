package endurance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/results"
)

// fakeCard is a card that wears by the bytes written to it: every round's day writes
// dayBytes, and the card fails (as behaviour says) once it has taken failAt bytes; it has
// spares blocks, one more going bad every badEvery bytes. Its state is its bytes, which Save
// and Restore keep in a file, as a simulated card keeps its model.
type fakeCard struct {
	behaviour        string
	failAt, badEvery uint64
	spares           uint64
	bytes            uint64
	seed             uint64
	renewals         int
}

func (c *fakeCard) Renew(seed uint64) error { c.bytes, c.seed = 0, seed; c.renewals++; return nil }

func (c *fakeCard) Status() (Status, error) {
	s := Status{Behaviour: c.behaviour, HostBytesWritten: c.bytes}
	s.SpareBlocks, s.Seed, s.Scale = c.spares, c.seed, 0.01
	s.BadBlocks = min(c.bytes/c.badEvery, c.spares+1)
	s.SpareLeft = c.spares - min(s.BadBlocks, c.spares)
	if c.bytes >= c.failAt {
		s.Health = flash.Health(c.behaviour)
		s.FirstErrorWrites, s.FirstErrorHostBytes = 1, c.failAt
	}
	return s, nil
}

func (c *fakeCard) healthy() bool { return c.bytes < c.failAt }

func (c *fakeCard) Save(dir string) error {
	return os.WriteFile(filepath.Join(dir, "fake"), []byte(fmt.Sprint(c.bytes, " ", c.seed)), 0o644)
}

func (c *fakeCard) Restore(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "fake"))
	if err != nil {
		return err
	}
	_, err = fmt.Sscan(string(b), &c.bytes, &c.seed)
	return err
}

// fakeFS is a directory standing for the mounted filesystem.
type fakeFS struct {
	dir     string
	mounted bool
	card    *fakeCard
}

func (f *fakeFS) Dir() string { return f.dir }
func (f *fakeFS) Make(ctx context.Context) error {
	os.RemoveAll(f.dir)
	f.mounted = true
	return os.MkdirAll(f.dir, 0o755)
}
func (f *fakeFS) Mount(ctx context.Context) error {
	if f.card != nil && f.card.behaviour == flash.EOLDead && !f.card.healthy() {
		return syscall.EIO
	}
	f.mounted = true
	return nil
}
func (f *fakeFS) Unmount(ctx context.Context) error   { f.mounted = false; return nil }
func (f *fakeFS) State() FSState                      { return FSState{Errors: -1, Corruption: -1} }
func (f *fakeFS) DeviceBytesWritten() (uint64, error) { return f.card.bytes, nil }

// fakeDay writes one file a day of dayBytes, content of (seed, day), through the card: a
// read-only or dead card refuses it with EIO; a wrong-data card takes it and, once worn,
// gives the first promised file back wrong. A day can be made to stop halfway (cancel).
type fakeDay struct {
	card     *fakeCard
	dayBytes uint64
	cancelAt int // day number whose write cancels the context halfway (0: none)
	cancel   context.CancelFunc
}

func (w *fakeDay) Name() string { return "fake" }

func (w *fakeDay) Day(ctx context.Context, env Env, n int, m *Manifest) (Day, error) {
	data := []byte(fmt.Sprintf("seed %d day %d\n", env.Seed, n))
	if w.card.behaviour != flash.EOLWrongData && !w.card.healthy() {
		return Day{}, fmt.Errorf("write day %d: %w", n, syscall.EIO)
	}
	w.card.bytes += w.dayBytes / 2
	if n == w.cancelAt {
		w.cancel()
		return Day{}, ctx.Err()
	}
	w.card.bytes += w.dayBytes - w.dayBytes/2
	name := fmt.Sprintf("day%03d", n)
	if err := os.WriteFile(filepath.Join(env.Dir, name), data, 0o644); err != nil {
		return Day{}, err
	}
	m.Put(name, data)
	if w.card.behaviour == flash.EOLWrongData && !w.card.healthy() {
		os.WriteFile(filepath.Join(env.Dir, "day001"), []byte("garbage"), 0o644)
	}
	return Day{Logical: uint64(len(data)), Seconds: 1}, nil
}

func (w *fakeDay) Resume(ctx context.Context, env Env, m *Manifest) error { return nil }

// fakeRunner is a runner of a fake card that fails after failRounds rounds' bytes, in dir.
func fakeRunner(t *testing.T, dir, behaviour string, failRounds float64) (*Runner, *fakeCard, *fakeDay) {
	t.Helper()
	const day = 100 << 20
	card := &fakeCard{behaviour: behaviour, failAt: uint64(failRounds * day), badEvery: uint64(failRounds * day / 5), spares: 4}
	w := &fakeDay{card: card, dayBytes: day}
	clock := time.Unix(1e9, 0)
	r := &Runner{FS: &fakeFS{dir: filepath.Join(dir, "fs"), card: card}, Card: card, Workload: w, Dir: filepath.Join(dir, "state"),
		Params: Params{AfterError: 2, Seed: 7, MaxRounds: 100}, Name: "fake #1", CardName: "fake", Behaviour: behaviour, Scale: 0.01, CardSeed: 9,
		Now: func() time.Time { clock = clock.Add(time.Second); return clock },
		Predict: func([]results.Measurement) (float64, float64, string) {
			return failRounds, failRounds / 365.25 / 0.01, "the fake's"
		}}
	return r, card, w
}

// TestRunnerMilestones: a card that fails as its profile says gives the milestones of its end
// where they came: the first error at the share of the round the card had taken (a read-only
// card failing 40 % into round 8: 7.4), bad blocks at 10, 25 and 50 % of the spares, the
// wrong data the verifier caught, and the end's reason.
func TestRunnerMilestones(t *testing.T) {
	tests := []struct {
		behaviour            string
		fail                 float64
		firstError, readOnly float64
		wrong                float64
		end                  float64
		endWhat              string
	}{
		{flash.EOLReadOnly, 7.4, 7.4, 7.4, 0, 8, "the card turned read-only"},
		{flash.EOLDead, 5.5, 5.5, 0, 0, 6, "the card stopped responding"},
		// The verifier catches the wrong data at the end of the round the card went bad in;
		// the card still answers, and the run stops it two rounds later.
		{flash.EOLWrongData, 4.2, 5, 0, 5, 7, "2 rounds after the first error"},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			r, card, _ := fakeRunner(t, t.TempDir(), tt.behaviour, tt.fail)
			res, err := r.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
			if !near(res.FirstError.Round, tt.firstError) || !near(res.ReadOnly.Round, tt.readOnly) || !near(res.WrongData.Round, tt.wrong) ||
				!near(res.End.Round, tt.end) {
				t.Errorf("first error %v, read-only %v, wrong data %v, end %v; want %v, %v, %v, %v",
					res.FirstError.Round, res.ReadOnly.Round, res.WrongData.Round, res.End.Round, tt.firstError, tt.readOnly, tt.wrong, tt.end)
			}
			if got := res.End.What; len(got) < len(tt.endWhat) || got[:len(tt.endWhat)] != tt.endWhat {
				t.Errorf("end %q, want %q", got, tt.endWhat)
			}
			if card.renewals != 1 || res.Seed != 9 || len(res.Series) != int(tt.end) || res.Rounds != int(tt.end) {
				t.Errorf("%d renewals, seed %d, %d points for %d rounds; want 1, 9, %v", card.renewals, res.Seed, len(res.Series), res.Rounds, tt.end)
			}
			// A bad block every fifth of the card's life: 10 % of 4 spares is 1 bad block (the
			// end of round 2 for a 7.4-round card, whose second fifth ends at 2.96 rounds).
			if len(res.BadBlocks) != 3 || !res.BadBlocks[0].Reached() || res.BadBlocks[0].Round != math.Ceil(tt.fail/5) {
				t.Errorf("bad-block milestones %+v", res.BadBlocks)
			}
			if tt.behaviour == flash.EOLWrongData && (res.Wrong == 0 || len(res.Problems) == 0) {
				t.Errorf("wrong data: %d wrong files, problems %v", res.Wrong, res.Problems)
			}
			if !near(res.PredictedRounds, tt.fail) {
				t.Errorf("prediction %v, want %v", res.PredictedRounds, tt.fail)
			}
			csv, err := os.ReadFile(filepath.Join(r.Dir, csvFile))
			if err != nil || len(csv) == 0 {
				t.Errorf("round log: %v", err)
			}
		})
	}
}

// TestRunnerResume: a run killed in the middle of a round (its context cancelled) and run
// again from its state directory goes on from the last round it completed (a simulated card
// from its snapshot), and gives the same milestones, bytes and series as a run that was never
// interrupted; a card that reached its end gives its record back without running again.
func TestRunnerResume(t *testing.T) {
	whole, _, _ := fakeRunner(t, t.TempDir(), flash.EOLReadOnly, 9.3)
	want, err := whole.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, killAt := range []int{4, 7} {
		r, _, w := fakeRunner(t, dir, flash.EOLReadOnly, 9.3)
		ctx, cancel := context.WithCancel(context.Background())
		w.cancelAt, w.cancel = killAt, cancel
		if _, err := r.Run(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("a run killed in round %d: %v, want context.Canceled", killAt, err)
		}
		var st State
		b, _ := os.ReadFile(filepath.Join(dir, "state", stateFile))
		if err := json.Unmarshal(b, &st); err != nil || st.Round != killAt-1 {
			t.Fatalf("after a kill in round %d the state says round %d (%v)", killAt, st.Round, err)
		}
	}
	r, card, _ := fakeRunner(t, dir, flash.EOLReadOnly, 9.3)
	got, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if card.renewals != 0 {
		t.Errorf("the resumed run put a fresh card in")
	}
	if got.Resumed != 2 {
		t.Errorf("resumed %d times, want 2", got.Resumed)
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(results.Endurance{}, "Resumed")); diff != "" {
		t.Errorf("resumed run (-uninterrupted +resumed):\n%s", diff)
	}
	again, _, _ := fakeRunner(t, dir, flash.EOLReadOnly, 9.3)
	if done, err := again.Run(context.Background()); err != nil || !cmp.Equal(done, got) {
		t.Errorf("a finished card run again: %v, %v", done, err)
	}
}
