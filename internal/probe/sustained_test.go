package probe

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
)

// TestSustainedModel runs the sustained-write test against the model of every profile with an
// SLC cache, fresh and used, and of one without: it must find the cache the profile gives (10 %)
// at its rates (15 %), the smaller cache of a used card, what an idle spell brings back, and no
// cliff where there is no cache.
func TestSustainedModel(t *testing.T) {
	const size = 512 << 20
	for _, c := range []struct {
		profile, state string
	}{{"sd-a1-modern", CardFresh}, {"emmc", CardFresh}, {"sd-a1-modern", CardUsed}, {"emmc", CardUsed}, {"sd-typical", CardFresh}} {
		t.Run(c.profile+"/"+c.state, func(t *testing.T) {
			d := newModelDevice(t, c.profile, size)
			p := d.m.Profile()
			var capAtStart uint64
			idle := 300 * time.Millisecond
			sleeps := 0
			opt := SustainedOptions{CardState: c.state, Idle: idle, Sleep: func(x time.Duration) {
				d.m.Idle(x)
				if sleeps++; sleeps == 1 {
					used, capacity, _, _ := d.m.SLC()
					capAtStart = capacity - used
				}
			}}
			if c.state == CardFresh {
				_, capAtStart, _, _ = d.m.SLC()
			}
			r, err := Sustained(context.Background(), d, opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: first pass %s; cache %d MiB; recovery after %v: %s, recovered %.1f MiB (at least: %v); longest write %.1f ms; notes %q",
				c.profile, c.state, passLine(&r.First), r.CacheBytes>>20, idle, passLine(r.Recovery), float64(r.RecoveredBytes)/(1<<20), r.RecoveredAtLeast, float64(r.First.MaxWriteNs)/1e6, r.Notes)
			if p.SLC == nil {
				if r.First.Cliff {
					t.Errorf("a cliff at %d MiB on a card without a cache", r.CacheBytes>>20)
				}
				return
			}
			fresh := flash.Measure(mustFreshModel(t, c.profile, size), 1)
			want := float64(capAtStart) // the room the cache has when the pass starts
			if c.state == CardFresh {
				want = float64(p.SLC.FreshBytes(size, uint64(p.PageSize)))
			}
			if !r.First.Cliff || math.Abs(float64(r.CacheBytes)/want-1) > 0.10 {
				t.Errorf("cache %d MiB (cliff %v), the model's %.0f MiB: want within 10 %%", r.CacheBytes>>20, r.First.Cliff, want/(1<<20))
			}
			if c.state == CardFresh {
				if ratio := r.First.AfterMBps / fresh.SeqWriteAfterMBps; math.Abs(ratio-1) > 0.15 {
					t.Errorf("after the cache %.1f MB/s, the profile's %.1f: want within 15 %%", r.First.AfterMBps, fresh.SeqWriteAfterMBps)
				}
				if ratio := r.First.BurstMBps / fresh.SeqWriteMBps; math.Abs(ratio-1) > 0.15 {
					t.Errorf("burst %.1f MB/s, the profile's %.1f: want within 15 %%", r.First.BurstMBps, fresh.SeqWriteMBps)
				}
			} else if fresh := p.SLC.FreshBytes(size, uint64(p.PageSize)); r.CacheBytes >= fresh/2 {
				t.Errorf("used card: cache %d MiB, not much smaller than a fresh card's %d MiB", r.CacheBytes>>20, fresh>>20)
			}
			// The idle spell folds (idle − fold_after) ÷ fold_page_time pages, at most the
			// cache the now full card has room for.
			folded := float64((idle-time.Duration(p.SLC.FoldAfter))/time.Duration(p.SLC.FoldPageTime)) * float64(p.PageSize)
			_, capNow, _, _ := d.m.SLC()
			exp := math.Min(folded, float64(capNow))
			if math.Abs(float64(r.RecoveredBytes)-exp) > 0.15*exp+float64(2*p.SLC.FoldUnit) {
				t.Errorf("recovered %.1f MiB after %v idle, the model folds %.1f MiB", float64(r.RecoveredBytes)/(1<<20), idle, exp/(1<<20))
			}
		})
	}
}

// mustFreshModel is a fresh model of profile: the profile's own figures (flash.Measure).
func mustFreshModel(t *testing.T, profile string, size uint64) *flash.Model {
	t.Helper()
	return newModelDevice(t, profile, size).m
}

// TestFitCliff: the two-line fit finds a synthetic cliff where it is, with stalls, and none
// in a flat pass with noise.
func TestFitCliff(t *testing.T) {
	mk := func(n, cliff int, burst, after float64, stallEvery int) []RateSample {
		var s []RateSample
		for i := 0; i < n; i++ {
			rate := burst
			if i >= cliff {
				rate = after
			}
			ns := int64(1e9 * (1 << 20) / (rate * 1e6))
			if stallEvery > 0 && i >= cliff && (i-cliff)%stallEvery == 0 {
				ns += int64(stallEvery) * int64(1e9*(1<<20)/(after*1e6)) / 4
			}
			s = append(s, RateSample{End: uint64(i+1) << 20, Bytes: 1 << 20, Ns: ns, MBps: float64(1<<20) / float64(ns) * 1e3})
		}
		return s
	}
	if c, at, b, a := fitCliff(mk(400, 100, 40, 20, 4)); !c || at < 98<<20 || at > 102<<20 || b < 38 || b > 42 || a > 20 {
		t.Errorf("cliff at 100 MiB, 40 → 20 MB/s: got %v at %d MiB, %.1f → %.1f", c, at>>20, b, a)
	}
	// A host stall early in the burst (three slow samples) is not the cliff, the real one is.
	stalled := mk(400, 64, 37, 18, 4)
	for i := 13; i < 16; i++ {
		stalled[i].Ns *= 3
		stalled[i].MBps /= 3
	}
	if c, at, b, a := fitCliff(stalled); !c || at < 62<<20 || at > 66<<20 {
		t.Errorf("cliff at 64 MiB after a host stall at 13 MiB: got %v at %d MiB, %.1f → %.1f", c, at>>20, b, a)
	}
	// A busy host: one sample in seven of the whole pass twice as slow, the cliff still found.
	busy := mk(400, 64, 37, 18, 4)
	for i := 3; i < len(busy); i += 7 {
		busy[i].Ns *= 2
		busy[i].MBps /= 2
	}
	if c, at, b, a := fitCliff(busy); !c || at < 60<<20 || at > 68<<20 {
		t.Errorf("cliff at 64 MiB on a busy host: got %v at %d MiB, %.1f → %.1f", c, at>>20, b, a)
	}
	// Flat passes with the host's noise: small and steady, and rare stalls of 40 to 120 ms.
	for _, stall := range []int64{40e6, 80e6, 120e6} {
		flat := mk(400, 1000, 30, 30, 0)
		for i := range flat {
			flat[i].Ns += int64(i%7) * 1e6
			if i%9 == 5 {
				flat[i].Ns += stall
			}
			flat[i].MBps = float64(flat[i].Bytes) / float64(flat[i].Ns) * 1e3
		}
		if c, at, b, a := fitCliff(flat); c {
			t.Errorf("flat 30 MB/s with stalls of %d ms: a cliff at %d MiB, %.1f → %.1f", stall/1e6, at>>20, b, a)
		}
	}
}
