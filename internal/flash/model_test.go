package flash

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

func mustModel(t testing.TB, profile string, size uint64) *Model {
	t.Helper()
	p, err := Lookup(profile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(p, size)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func do(t testing.TB, m *Model, r Request) time.Duration {
	t.Helper()
	d, err := m.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestBuiltinProfilesLoad(t *testing.T) {
	names := Builtins()
	if diff := cmp.Diff([]string{"emmc", "sd-2010-worst", "sd-a1-modern", "sd-a2", "sd-cheap-old", "sd-typical"}, names); diff != "" {
		t.Fatalf("built-in profiles (-want +got):\n%s", diff)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			p, err := Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != name {
				t.Errorf("name = %q, want the file name %q", p.Name, name)
			}
			if p.Description == "" {
				t.Error("no description")
			}
			// Every key documented: each key line of the file has a comment on it or above it.
			src, _ := BuiltinSource(name)
			lines := strings.Split(string(src), "\n")
			for i, l := range lines {
				if strings.Contains(l, "=") && !strings.HasPrefix(l, "#") && !strings.Contains(l, "#") &&
					(i == 0 || !strings.HasPrefix(lines[i-1], "#")) && !strings.HasPrefix(l, "name") && !strings.HasPrefix(l, "description") && !strings.HasPrefix(l, "cache_page_time") {
					t.Errorf("line %d %q has no comment saying what it is and where it comes from", i+1, l)
				}
			}
			if _, err := NewModel(p, 2*GiB); err != nil {
				t.Fatalf("2 GiB card: %v", err)
			}
		})
	}
}

// TestProfileFigures checks each shipped profile against the figures it claims, measured
// through the model the way dd and fio would: sequential 512 KiB writes, random 4 KiB reads,
// random 4 KiB writes (on a fresh card, as the A1 test does).
func TestProfileFigures(t *testing.T) {
	tests := []struct {
		profile              string
		seqMin, seqMax       float64 // MB/s
		rrIOPSMin, rwIOPSMin float64
	}{
		{"sd-typical", 11, 16, 1300, 150},
		{"sd-cheap-old", 7, 9.5, 1300, 0},
		{"sd-2010-worst", 3, 6, 1300, 0},
		{"sd-a1-modern", 35, 40, 2400, 800},
		{"emmc", 90, 145, 2300, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			f := Measure(mustModel(t, tt.profile, 256*MiB), 1)
			t.Logf("%s: seq write %.2f MB/s, random read %.0f IOPS, random write %.0f IOPS, random-write WA %.1f",
				tt.profile, f.SeqWriteMBps, f.RandReadIOPS, f.RandWriteIOPS, f.RandWriteWA)
			if f.SeqWriteMBps < tt.seqMin || f.SeqWriteMBps > tt.seqMax {
				t.Errorf("sequential write %.2f MB/s, profile says %g-%g", f.SeqWriteMBps, tt.seqMin, tt.seqMax)
			}
			if f.RandReadIOPS < tt.rrIOPSMin {
				t.Errorf("random read %.0f IOPS < %g", f.RandReadIOPS, tt.rrIOPSMin)
			}
			if f.RandWriteIOPS < tt.rwIOPSMin {
				t.Errorf("random write %.0f IOPS < %g", f.RandWriteIOPS, tt.rwIOPSMin)
			}
		})
	}
}

func TestSequentialWholeAUsHaveWA1(t *testing.T) {
	for _, name := range Builtins() {
		t.Run(name, func(t *testing.T) {
			m := mustModel(t, name, 64*MiB)
			p := m.Profile()
			start := uint64(p.PageMappedArea) // the AU-mapped part, where the claim is about AUs
			for off := start; off < m.Size(); off += 512 * KiB {
				do(t, m, Request{Op: OpWrite, Off: off, Len: 512 * KiB})
			}
			do(t, m, Request{Op: OpFlush})
			c := m.Counters()
			if c.WriteAmplification != 1.0 {
				t.Errorf("write amplification %v, want exactly 1.0 (%d pages for %d bytes)", c.WriteAmplification, c.PagesProgrammed, c.HostBytesWritten)
			}
			if c.PagesCopied != 0 || c.AUMerges != 0 {
				t.Errorf("copied %d pages in %d merges, want none", c.PagesCopied, c.AUMerges)
			}
		})
	}
}

// TestRandomWritesAmplifyByAU: with the card full of data and writes spread over far more
// AUs than are open, every 4 KiB write ends up costing a whole AU (Bergmann's worst case).
func TestRandomWritesAmplifyByAU(t *testing.T) {
	// Cards without a random-write log (which would take these writes instead).
	for _, name := range []string{"sd-2010-worst", oldTypical, oldCheap} {
		t.Run(name, func(t *testing.T) {
			m := mustModel(t, name, 512*MiB)
			p := m.Profile()
			fill(t, m)
			before := m.Counters()
			rng := rand.New(rand.NewPCG(1, 2))
			area := m.Size() - uint64(p.PageMappedArea)
			for i := 0; i < 300; i++ {
				off := uint64(p.PageMappedArea) + rng.Uint64N(area/(4*KiB))*4*KiB
				do(t, m, Request{Op: OpWrite, Off: off, Len: 4 * KiB})
			}
			d := m.Counters().Sub(before)
			want := float64(p.AUSize) / (4 * KiB)
			t.Logf("WA %.1f, AU/4KiB = %.0f", d.WriteAmplification, want)
			if d.WriteAmplification < 0.85*want || d.WriteAmplification > 1.01*want {
				t.Errorf("write amplification %.1f, want close to AU/4KiB = %.0f", d.WriteAmplification, want)
			}
		})
	}
}

func fill(t testing.TB, m *Model) {
	for off := uint64(0); off < m.Size(); off += 1 * MiB {
		do(t, m, Request{Op: OpWrite, Off: off, Len: 1 * MiB})
	}
	do(t, m, Request{Op: OpFlush})
}

func TestFATAreaIsPageMapped(t *testing.T) {
	m := mustModel(t, oldTypical, 256*MiB) // without a random-write log to take the AU area's writes
	p := m.Profile()
	fill(t, m)
	rng := rand.New(rand.NewPCG(3, 4))
	run := func(base, span uint64) (time.Duration, Counters) {
		before := m.Counters()
		var total time.Duration
		const n = 400
		for i := 0; i < n; i++ {
			off := base + rng.Uint64N(span/(4*KiB))*4*KiB
			total += do(t, m, Request{Op: OpWrite, Off: off, Len: 4 * KiB})
		}
		return total / n, m.Counters().Sub(before)
	}
	fatLat, fat := run(0, uint64(p.PageMappedArea))
	auLat, au := run(uint64(p.PageMappedArea), m.Size()-uint64(p.PageMappedArea))
	t.Logf("4 KiB random writes: FAT area %v each (WA %.1f), AU area %v each (WA %.1f)", fatLat, fat.WriteAmplification, auLat, au.WriteAmplification)
	if fat.AUMerges != 0 {
		t.Errorf("%d AU merges in the FAT area, want none", fat.AUMerges)
	}
	if fatLat*10 > auLat {
		t.Errorf("FAT area random write %v not 10× cheaper than AU area %v", fatLat, auLat)
	}
	// Each 4 KiB write programs a 16 KiB page (WA 4) plus garbage collection; far below AU/4KiB.
	if fat.WriteAmplification < 4 || fat.WriteAmplification > 40 {
		t.Errorf("FAT area WA %.1f, want between 4 (page/4KiB) and 40", fat.WriteAmplification)
	}
	if fat.GCCollections == 0 {
		t.Error("no garbage collection in a full FAT area after 400 random writes")
	}
}

// TestHandTrace follows a short trace on a 24 MiB card of the pre-calibration sd-typical (8 MiB FAT area, then AUs
// 0-3 of 4 MiB) whose latencies and counters were worked out by hand from the profile:
// command 100us, read page 600us, cross page 50us, cross AU 300us, program 1820us, copy
// 703us, AU close 60ms, erase 2ms per 2 MiB block. Every command programs the pages it
// touches, partial ones included (read first when they hold data); closing a partly written
// AU that has an older physical copy costs the AU close time plus its copies.
func TestHandTrace(t *testing.T) {
	m := mustModel(t, oldTypical, 24*MiB)
	us := time.Microsecond
	au := func(i uint64) uint64 { return 8*MiB + i*4*MiB }
	steps := []struct {
		what string
		r    Request
		want time.Duration
	}{
		{"open AU0, program 2 pages", Request{OpWrite, au(0), 32 * KiB, false}, 100*us + 2*1820*us},
		{"8 KiB into page 2: the partial page is programmed with the command", Request{OpWrite, au(0) + 32*KiB, 8 * KiB, false}, 100*us + 1820*us},
		{"page 3 follows page 2: nothing to copy", Request{OpWrite, au(0) + 48*KiB, 16 * KiB, false}, 100*us + 1820*us},
		{"backwards: AU0 (first written, no old copy) closes free, reopens: copy page 0, read-modify-write page 1", Request{OpWrite, au(0) + 16*KiB, 4 * KiB, false}, 100*us + 703*us + 600*us + 1820*us},
		{"flush: no cache", Request{Op: OpFlush}, 100 * us},
		{"whole AU1 in one request", Request{OpWrite, au(1), 4 * MiB, false}, 100*us + 256*1820*us},
		{"AU2 closes LRU AU0: merge copying pages 2 and 3", Request{OpWrite, au(2), 16 * KiB, false}, 100*us + 60000*us + 2*703*us + 1820*us},
		{"read across a page boundary", Request{OpRead, au(0) + 12*KiB, 8 * KiB, false}, 100*us + 2*600*us + 50*us},
		{"read across an AU boundary", Request{OpRead, au(1) - 16*KiB, 32 * KiB, false}, 100*us + 2*600*us + 300*us},
		{"discard open AU2", Request{OpDiscard, au(2), 4 * MiB, false}, 100*us + 100*us},
		{"AU3 closes full AU1 for free", Request{OpWrite, au(3), 16 * KiB, false}, 100*us + 1820*us},
		{"AU1 again closes AU2 (empty) for free", Request{OpWrite, au(1), 16 * KiB, false}, 100*us + 1820*us},
		{"AU2 closes LRU AU3 (no old copy: free), gets the recycled physical AU: 2 erases", Request{OpWrite, au(2), 16 * KiB, false}, 100*us + 2*2000*us + 1820*us},
	}
	var busy time.Duration
	for _, s := range steps {
		got := do(t, m, s.r)
		busy += s.want
		if got != s.want {
			t.Errorf("%s: latency %v, want %v", s.what, got, s.want)
		}
	}
	c := m.Counters()
	c.Wear = nil
	want := Counters{
		Reads: 2, Writes: 9, Discards: 1, Flushes: 1,
		HostBytesRead: 40 * KiB, HostBytesWritten: 4*MiB + 76*KiB + 3*16*KiB, HostBytesDiscard: 4 * MiB,
		PagesRead: 1 + 4, PagesProgrammed: 2 + 1 + 1 + 2 + 256 + 3 + 3, PagesCopied: 3, BlocksErased: 2, AUMerges: 1,
		BusyNs: uint64(busy), PageSize: 16 * KiB, Endurance: 3000, MaxErases: 1,
		EraseBlocks: 7 + 6*2, // FAT pool: 4 data + 3 spare blocks; AU pool: (4 + 2 open) × 2
		// 2 % of the 19 blocks, rounded up: one spare for bad blocks, none used.
		EndOfLife: &WearOut{Scale: 1, SpareBlocks: 1, SpareLeft: 1},
	}
	want.FlashBytesWrite = want.PagesProgrammed * 16 * KiB
	want.WriteAmplification = float64(want.FlashBytesWrite) / float64(want.HostBytesWritten)
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
}

func TestEMMCCache(t *testing.T) {
	m := mustModel(t, "emmc", 64*MiB)
	// Four 4 KiB writes into one 16 KiB page merge in the cache: nothing programmed yet.
	for i := uint64(0); i < 4; i++ {
		do(t, m, Request{Op: OpWrite, Off: i * 4 * KiB, Len: 4 * KiB})
	}
	if c := m.Counters(); c.PagesProgrammed != 0 {
		t.Fatalf("programmed %d pages before a flush, want 0 (cached)", c.PagesProgrammed)
	}
	lat := do(t, m, Request{Op: OpFlush})
	if c := m.Counters(); c.PagesProgrammed != 1 {
		t.Fatalf("after flush programmed %d pages, want 1", c.PagesProgrammed)
	}
	if lat < time.Duration(m.Profile().ProgramPageTime) {
		t.Errorf("flush took %v, less than one page program", lat)
	}
	// FUA goes straight to flash.
	do(t, m, Request{Op: OpWrite, Off: 1 * MiB, Len: 16 * KiB, FUA: true})
	if c := m.Counters(); c.PagesProgrammed != 2 {
		t.Errorf("after FUA write programmed %d pages, want 2", c.PagesProgrammed)
	}
	// Overflowing the 1 MiB cache programs the oldest pages.
	do(t, m, Request{Op: OpWrite, Off: 2 * MiB, Len: 2 * MiB})
	if c := m.Counters(); c.PagesProgrammed != 2+64 {
		t.Errorf("after 2 MiB through a 1 MiB cache programmed %d pages, want 66", c.PagesProgrammed)
	}
}

func TestDeterminism(t *testing.T) {
	for _, name := range Builtins() {
		t.Run(name, func(t *testing.T) {
			run := func() ([]time.Duration, Counters, []uint32) {
				m := mustModel(t, name, 64*MiB)
				rng := rand.New(rand.NewPCG(7, 8))
				var lats []time.Duration
				for i := 0; i < 3000; i++ {
					off := rng.Uint64N(m.Size()/512) * 512
					n := min((1+rng.Uint64N(256))*512, m.Size()-off)
					op := []Op{OpRead, OpWrite, OpWrite, OpWrite, OpDiscard, OpFlush}[rng.IntN(6)]
					lats = append(lats, do(t, m, Request{Op: op, Off: off, Len: n}))
				}
				return lats, m.Counters(), m.EraseCounts()
			}
			l1, c1, e1 := run()
			l2, c2, e2 := run()
			if diff := cmp.Diff(l1, l2); diff != "" {
				t.Errorf("latencies differ between identical runs:\n%s", diff)
			}
			if diff := cmp.Diff(c1, c2, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("counters differ between identical runs:\n%s", diff)
			}
			if diff := cmp.Diff(e1, e2); diff != "" {
				t.Errorf("erase counts differ:\n%s", diff)
			}
			if c1.PagesProgrammed == 0 || c1.BlocksErased == 0 {
				t.Errorf("the mixed trace programmed %d pages and erased %d blocks; want both > 0", c1.PagesProgrammed, c1.BlocksErased)
			}
		})
	}
}

func TestOutOfRange(t *testing.T) {
	m := mustModel(t, "sd-typical", 16*MiB)
	if _, err := m.Do(Request{Op: OpWrite, Off: 16*MiB - 512, Len: 1024}); err == nil {
		t.Error("write past the end accepted")
	}
	if _, err := NewModel(m.Profile(), 10*MiB); err == nil || !strings.Contains(err.Error(), "AU size") {
		t.Errorf("10 MiB sd-typical card (not a multiple of 4 MiB AUs): err = %v", err)
	}
}

func TestParseErrorsHaveLines(t *testing.T) {
	good, err := BuiltinSource("sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(key string) int {
		for i, l := range strings.Split(string(good), "\n") {
			if strings.HasPrefix(l, key+" ") {
				return i + 1
			}
		}
		t.Fatalf("no %s in sd-typical", key)
		return 0
	}
	replace := func(key, value string) string {
		var out []string
		for _, l := range strings.Split(string(good), "\n") {
			if strings.HasPrefix(l, key+" ") {
				l = key + " = " + value
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}
	tests := []struct {
		name, text, want string
	}{
		{"syntax", "name = \"x\"\nftl = \"au\"\npage_size = = 3\n", "p.toml:3:"},
		{"unknown key", "name = \"x\"\npagesize = 4096\n", "p.toml:2: unknown key \"pagesize\""},
		{"page size not a power of two", replace("page_size", `"3KiB"`), "p.toml:" + itoa(lineOf("page_size")) + ": page_size: must be a power of two"},
		{"bad duration", replace("erase_time", `"2 parsecs"`), "p.toml:"},
		{"au not multiple of erase block", replace("au_size", `"3MiB"`), "p.toml:" + itoa(lineOf("au_size")) + ": au_size"},
		{"bad ftl", replace("ftl", `"log"`), "p.toml:" + itoa(lineOf("ftl")) + ": ftl: must be"},
		{"no endurance", replace("endurance", `0`), "p.toml:" + itoa(lineOf("endurance")) + ": endurance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.toml", []byte(tt.text))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
