package flash

import (
	"strings"
	"testing"
	"time"
)

// seqWrites writes [from, to) in 1 MiB requests and returns each request's latency.
func seqWrites(t *testing.T, m *Model, from, to uint64) []time.Duration {
	t.Helper()
	var out []time.Duration
	for off := from; off < to; off += MiB {
		d, err := m.Do(Request{Op: OpWrite, Off: off, Len: MiB})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// TestSLCCliff: on a fresh card the writes run at the burst rate until the cache holds
// share × capacity, then at the rate after it, with a stall of fold_unit every fold_unit
// bytes; left idle, the card folds and the burst comes back; a card whose every block holds
// data has a smaller cache (its spare blocks, a third of them in SLC mode).
func TestSLCCliff(t *testing.T) {
	for _, name := range []string{"sd-a1-modern", "emmc"} {
		t.Run(name, func(t *testing.T) {
			p, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if p.SLC == nil {
				t.Fatalf("%s has no [slc_cache]", name)
			}
			const size = 512 * MiB
			m := mustModel(t, name, size)
			cache := p.SLC.FreshBytes(size, uint64(p.PageSize))
			lats := seqWrites(t, m, 0, size)
			// The burst: the writes before the first one 1.5 times slower than the second (the
			// first may go into a volatile cache only: emmc's).
			first := lats[1]
			cliff := -1
			for i, d := range lats[1:] {
				i++
				if float64(d) > 1.5*float64(first) {
					cliff = i
					break
				}
			}
			if cliff < 0 {
				t.Fatalf("no write slower than the first (%v): no cache cliff", first)
			}
			if got := uint64(cliff) * MiB; got+MiB < cache || got > cache+MiB {
				t.Errorf("first stall after %d MiB, the cache holds %d MiB", cliff, cache/MiB)
			}
			// After the cache: the mean rate over the next 64 MiB (later the card fills up, and
			// its cache shrinks to what its free blocks hold), against Measure's figure.
			window := lats[cliff : cliff+64]
			var rest time.Duration
			for _, d := range window {
				rest += d
			}
			after := float64(len(window)) * MiB / rest.Seconds() / 1e6
			burst := MiB / first.Seconds() / 1e6
			f := Measure(mustModel(t, name, size), 1)
			t.Logf("%s: cache %d MiB, burst %.1f MB/s, after %.1f MB/s (Measure: %.1f, %.1f), longest write %v",
				name, cache/MiB, burst, after, f.SeqWriteMBps, f.SeqWriteAfterMBps, maxDur(window))
			if r := after / f.SeqWriteAfterMBps; r < 0.95 || r > 1.05 {
				t.Errorf("after the cache %.1f MB/s, Measure says %.1f", after, f.SeqWriteAfterMBps)
			}
			if after > 0.7*burst {
				t.Errorf("after the cache %.1f MB/s is no cliff below the burst's %.1f", after, burst)
			}
			stall := time.Duration(uint64(p.SLC.FoldUnit)/uint64(p.PageSize)) * time.Duration(p.SLC.FoldPageTime)
			if got := maxDur(window); got < stall || got > stall+2*first {
				t.Errorf("longest write %v, want the fold unit's stall %v and the write's own %v", got, stall, first)
			}

			// The card is now used (every block holds data): its cache is its spare blocks'.
			_, capacity, _, _ := m.SLC()
			spare := uint64(len(m.pool.rev))*m.ps - size
			// (emmc's volatile cache still holds pages, whose blocks count as free.)
			if want := spare / slcBitsPerCell; capacity > want+uint64(p.CacheSize)/slcBitsPerCell+m.ps || capacity+m.ps < want {
				t.Errorf("used card: cache %d bytes, want the spare's third %d", capacity, want)
			}
			if capacity >= cache {
				t.Errorf("used card: cache %d bytes, not smaller than the fresh card's %d", capacity, cache)
			}

			// Idle: nothing folds before fold_after; then one page per fold_page_time.
			used0, _, _, _ := m.SLC()
			m.Idle(time.Duration(p.SLC.FoldAfter))
			if u, _, _, _ := m.SLC(); u != used0 {
				t.Errorf("idle for fold_after folded %d bytes, want none", used0-u)
			}
			m.Idle(time.Duration(p.SLC.FoldAfter) + 100*time.Duration(p.SLC.FoldPageTime))
			if u, _, _, _ := m.SLC(); used0-u != 100*m.ps {
				t.Errorf("idle folded %d pages, want 100", (used0-u)/m.ps)
			}
			m.Idle(time.Hour)
			if u, _, _, _ := m.SLC(); u != 0 {
				t.Errorf("an hour idle left %d bytes in the cache", u)
			}
			if d, _ := m.Do(Request{Op: OpWrite, Off: 0, Len: MiB}); d > first+first/5 {
				t.Errorf("after the idle hour a write took %v, the burst's %v", d, first)
			}
		})
	}
}

func maxDur(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func TestSLCProfileErrors(t *testing.T) {
	base := `name = "x"
ftl = "page"
page_size = "16KiB"
erase_block = "1MiB"
au_size = "1MiB"
open_aus = 1
overprovision = 0.07
read_page_time = "100us"
program_page_time = "100us"
endurance = 1000
`
	for _, c := range []struct{ extra, says string }{
		{"[slc_cache]\nshare = 0.5\nfold_page_time = \"1ms\"\n", "share: must be in (0, 1/3]"},
		{"[slc_cache]\nshare = 0.1\n", "fold_page_time: must be set"},
		{"[slc_cache]\nshare = 0.1\nfold_page_time = \"1ms\"\nfold_unit = 1000\n", "fold_unit: must be a multiple of page_size"},
	} {
		_, err := Parse("x.toml", []byte(base+c.extra))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want %q", c.extra, err, c.says)
		}
	}
	au := strings.Replace(base, `ftl = "page"`, `ftl = "au"`, 1)
	if _, err := Parse("x.toml", []byte(au+"[slc_cache]\nshare = 0.1\nfold_page_time = \"1ms\"\n")); err == nil || !strings.Contains(err.Error(), "slc_cache") {
		t.Errorf("an AU card with an SLC cache: %v, want it refused", err)
	}
	p, err := Parse("x.toml", []byte(base+"[slc_cache]\nshare = 0.1\nfold_page_time = \"1ms\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.SLC.FoldUnit != 4<<20 || time.Duration(p.SLC.FoldAfter) != 100*time.Millisecond {
		t.Errorf("defaults: fold_unit %d, fold_after %v", p.SLC.FoldUnit, time.Duration(p.SLC.FoldAfter))
	}
}
