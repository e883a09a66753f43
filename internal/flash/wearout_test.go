package flash

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// wornCard is a fresh sd-typical card of size bytes with the given end of life, its blocks'
// endurance scaled to mean erases on average.
func wornCard(t *testing.T, size uint64, eol EndOfLife, mean float64, seed uint64) *Model {
	t.Helper()
	p, err := Lookup("sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	p.EndOfLife = eol
	base, err := NewModel(p, size)
	if err != nil {
		t.Fatal(err)
	}
	m, err := base.WithEndurance(seed, mean/float64(p.Endurance))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// writeWhole writes the whole card once in 1 MiB writes, stopping at the first failed write.
func writeWhole(m *Model) error {
	for off := uint64(0); off < m.Size(); off += MiB {
		if _, err := m.Do(Request{Op: OpWrite, Off: off, Len: MiB}); err != nil {
			return err
		}
	}
	return nil
}

// TestEndOfLife: a card written whole again and again replaces its worn blocks with spares,
// one by one, while it stays healthy; the block that wears out with no spare left ends its
// life as the profile says: read-only refuses writes and discards and still reads, dead
// refuses everything, wrong-data keeps working and reads back wrong what lies in the worn block.
func TestEndOfLife(t *testing.T) {
	for _, behaviour := range EOLBehaviours {
		t.Run(behaviour, func(t *testing.T) {
			m := wornCard(t, 64*MiB, EndOfLife{Spread: 0.2, Spare: 0.05, Behaviour: behaviour}, 8, 1)
			spares := m.WearOut().SpareBlocks
			if spares == 0 {
				t.Fatal("no spares")
			}
			var lastBad uint64
			cycles := 0
			var err error
			for ; m.Health() == Healthy && cycles < 100; cycles++ {
				err = writeWhole(m)
				w := m.WearOut()
				if w.BadBlocks < lastBad {
					t.Fatalf("bad blocks went down: %d after %d", w.BadBlocks, lastBad)
				}
				lastBad = w.BadBlocks
				if m.Health() == Healthy && (err != nil || w.SpareLeft+w.BadBlocks != spares || w.FirstErrorWrites != 0) {
					t.Fatalf("cycle %d: healthy card with error %v, %+v: want no error and every bad block replaced by a spare", cycles, err, w)
				}
			}
			w := m.WearOut()
			t.Logf("%s after %d cycles: %+v", behaviour, cycles, w)
			if m.Health() == Healthy {
				t.Fatalf("still healthy after %d cycles of a card whose blocks last 8 erases", cycles)
			}
			if w.SpareLeft != 0 || w.BadBlocks != spares+1 || w.FirstErrorWrites == 0 || w.FirstErrorHostBytes == 0 {
				t.Errorf("end of life with %+v: want no spare left, %d bad blocks and the first error's position", w, spares+1)
			}
			read := func() error { _, err := m.Do(Request{Op: OpRead, Off: 0, Len: 4096}); return err }
			write := func() error { _, err := m.Do(Request{Op: OpWrite, Off: 16 * MiB, Len: MiB}); return err }
			discard := func() error { _, err := m.Do(Request{Op: OpDiscard, Off: 16 * MiB, Len: 4 * MiB}); return err }
			flush := func() error { _, err := m.Do(Request{Op: OpFlush}); return err }
			switch behaviour {
			case EOLReadOnly:
				if !errors.Is(err, ErrReadOnly) {
					t.Errorf("the write that ended its life returned %v, want ErrReadOnly", err)
				}
				for name, op := range map[string]func() error{"write": write, "discard": discard} {
					if err := op(); !errors.Is(err, ErrReadOnly) {
						t.Errorf("%s on a read-only card: %v, want ErrReadOnly", name, err)
					}
				}
				if err := read(); err != nil {
					t.Errorf("read on a read-only card: %v", err)
				}
				if err := flush(); err != nil {
					t.Errorf("flush on a read-only card: %v", err)
				}
			case EOLDead:
				for name, op := range map[string]func() error{"read": read, "write": write, "discard": discard, "flush": flush} {
					if err := op(); !errors.Is(err, ErrDead) {
						t.Errorf("%s on a dead card: %v, want ErrDead", name, err)
					}
				}
			case EOLWrongData:
				if err != nil || m.Health() != WornWrong || w.WornInService != 1 {
					t.Fatalf("wrong-data card: write error %v, health %q, %d worn blocks in service: want none, %q, 1", err, m.Health(), w.WornInService, WornWrong)
				}
				if err := writeWhole(m); err != nil {
					t.Fatalf("a wrong-data card refused a write: %v", err)
				}
				// Pages stored in worn blocks read back wrong; the others right. A whole-card read
				// finds some of each.
				var wrong uint64
				for off := uint64(0); off < m.Size(); off += MiB {
					for _, s := range m.Corrupt(off, MiB) {
						if s.Off < off || s.Off+s.Len > off+MiB || s.Len%m.ps != 0 {
							t.Fatalf("corrupt span %+v outside the read %d+1MiB or not whole pages", s, off)
						}
						wrong += s.Len
					}
				}
				if wrong == 0 || wrong >= m.Size()/2 {
					t.Errorf("%d bytes of %d read back wrong, want some (the worn blocks' pages) but not most", wrong, m.Size())
				}
				if got := m.WearOut(); got.CorruptReads == 0 || got.CorruptBytes != wrong {
					t.Errorf("counters %+v, want the corrupt reads and %d corrupt bytes", got, wrong)
				}
			}
		})
	}
}

// TestEnduranceDraws: a seed draws the same blocks every time, another seed other blocks;
// their endurances have the profile's mean and spread.
func TestEnduranceDraws(t *testing.T) {
	eol := EndOfLife{Spread: 0.1, Spare: 0.02, Behaviour: EOLReadOnly}
	a, b, c := wornCard(t, 1<<30, eol, 1000, 7), wornCard(t, 1<<30, eol, 1000, 7), wornCard(t, 1<<30, eol, 1000, 8)
	if !slicesEqual(a.wear.endur, b.wear.endur) || !slicesEqual(a.wear.spares, b.wear.spares) {
		t.Error("the same seed drew different blocks")
	}
	if slicesEqual(a.wear.endur, c.wear.endur) {
		t.Error("two seeds drew the same blocks")
	}
	var sum, sq float64
	for _, e := range a.wear.endur {
		sum += float64(e)
		sq += float64(e) * float64(e)
	}
	n := float64(len(a.wear.endur))
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	if math.Abs(mean-1000) > 15 || math.Abs(sd-100) > 15 {
		t.Errorf("%d blocks: mean %.0f, standard deviation %.0f; want 1000 and 100", len(a.wear.endur), mean, sd)
	}
	// The (spares+1)-th weakest block sets the first error: near the 2 % quantile of the
	// normal, 2.05 standard deviations below the mean.
	if got := a.FirstErrorCycles(); got < 770 || got > 830 {
		t.Errorf("FirstErrorCycles = %.0f, want about 1000 × (1 − 2.05 × 0.1) = 795", got)
	}
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestWithEnduranceRefuses a scale that is not a positive number or leaves blocks no erase.
func TestWithEnduranceRefuses(t *testing.T) {
	p, _ := Lookup("sd-typical")
	m, err := NewModel(p, 64*MiB)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []float64{0, -1, math.Inf(1), math.NaN(), 1e-6} {
		if _, err := m.WithEndurance(1, s); err == nil {
			t.Errorf("scale %g accepted", s)
		}
	}
}

// TestEndOfLifeProfile: a profile's [end_of_life] table sets what it names, the rest is the
// default; a bad value names its line.
func TestEndOfLifeProfile(t *testing.T) {
	base := strings.Replace(string(mustSource(t, "sd-typical")), "[end_of_life]", "[end_of_life_old]", 1)
	base = base[:strings.Index(base, "[end_of_life_old]")]
	p, err := Parse("x.toml", []byte(base+"[end_of_life]\nbehaviour = \"dead\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (EndOfLife{Spread: DefaultEndOfLife.Spread, Spare: DefaultEndOfLife.Spare, Behaviour: EOLDead}); p.EndOfLife != want {
		t.Errorf("end of life %+v, want %+v", p.EndOfLife, want)
	}
	_, err = Parse("x.toml", []byte(base+"[end_of_life]\nbehaviour = \"melts\"\n"))
	if err == nil || !strings.Contains(err.Error(), "behaviour") || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a bad behaviour: %v, want an error naming the key and the choices", err)
	}
	if p, err := Parse("x.toml", []byte(base)); err != nil || p.EndOfLife != DefaultEndOfLife {
		t.Errorf("no table: %+v, %v; want the default", p.EndOfLife, err)
	}
}

func mustSource(t *testing.T, name string) []byte {
	t.Helper()
	b, err := BuiltinSource(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEnduranceMatchesSurvey: the whole-card write cycles before the first error, counted as
// the Great microSD Card Survey counted them (the card written whole and read back, again and
// again), meet the survey's brand means for the profiles fitted to them (docs/cards.md, "End of
// life"). Counted on a 1 GiB card with every block's endurance scaled to about 60 erases, then
// scaled back.
func TestEnduranceMatchesSurvey(t *testing.T) {
	targets := []struct {
		profile string
		cycles  float64
		source  string
	}{
		{"sd-typical", 4634, "SanDisk"},
		{"sd-a1-modern", 4634, "SanDisk"},
		{"sd-cheap-old", 3555, "Kingston"},
		{"sd-2010-worst", 291, "Lenovo"},
	}
	for _, tt := range targets {
		t.Run(tt.profile, func(t *testing.T) {
			p, err := Lookup(tt.profile)
			if err != nil {
				t.Fatal(err)
			}
			base, err := NewModel(p, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			scale := 60 / float64(p.Endurance)
			m, err := base.WithEndurance(1, scale)
			if err != nil {
				t.Fatal(err)
			}
			cycles := 0
			for ; m.Health() == Healthy && cycles < 200; cycles++ {
				writeWhole(m)
			}
			got := float64(cycles) / scale
			t.Logf("%s: %d cycles at scale %.4g: %.0f at scale 1 (survey, %s: %.0f)", tt.profile, cycles, scale, got, tt.source, tt.cycles)
			if got < 0.9*tt.cycles || got > 1.1*tt.cycles {
				t.Errorf("%.0f whole-card cycles before the first error, want %s's %.0f within 10 %%", got, tt.source, tt.cycles)
			}
		})
	}
}

// TestLifetimeAtAnyScale: the lifetime estimate does not depend on the scale it runs the card
// at (the model prediction the endurance suite checks against a card run to its end): a day of
// writes run to the first error on cards scaled to last about 30 and about 120 days, scaled
// back, agree with the estimate within a few per cent, on an AU card and a page-mapped one.
func TestLifetimeAtAnyScale(t *testing.T) {
	for _, name := range []string{"sd-typical", "emmc"} {
		t.Run(name, func(t *testing.T) {
			p, _ := Lookup(name)
			m, err := NewModel(p, 256*MiB)
			if err != nil {
				t.Fatal(err)
			}
			// A day: a 32 MiB file rewritten in 512 KiB writes, 300 scattered 4 KiB writes
			// (metadata), a flush.
			var day []Request
			for off := uint64(64 * MiB); off < 96*MiB; off += 512 * KiB {
				day = append(day, Request{Op: OpWrite, Off: off, Len: 512 * KiB})
			}
			for i := uint64(0); i < 300; i++ {
				day = append(day, Request{Op: OpWrite, Off: (i * 7919 * 4096) % (256 * MiB), Len: 4096})
			}
			day = append(day, Request{Op: OpFlush})
			est, ok, err := Lifetime(m, day, Before{})
			if err != nil || !ok {
				t.Fatalf("Lifetime: %v, %v", ok, err)
			}
			for _, runDays := range []float64{30, 120} {
				scale := runDays / est
				card, err := m.WithEndurance(0, scale)
				if err != nil {
					t.Fatal(err)
				}
				d, ok, err := DaysToFirstError(card, day, 1000)
				if err != nil || !ok {
					t.Fatalf("DaysToFirstError: %v, %v", ok, err)
				}
				t.Logf("estimate %.0f days; at scale %.3g the card failed after %.1f days: %.0f scaled back", est, scale, d, d/scale)
				if r := d / scale / est; r < 0.9 || r > 1.1 {
					t.Errorf("at scale %.3g the card lasted %.0f days scaled back, the estimate %.0f: ratio %.2f, want within 10 %%", scale, d/scale, est, r)
				}
			}
		})
	}
}
