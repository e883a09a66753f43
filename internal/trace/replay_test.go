package trace

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsbench/fsbench/internal/flash"
)

func profile(t *testing.T, name string) flash.Profile {
	t.Helper()
	p, err := flash.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReplaySequentialAUs: whole AUs written in order, then a flush, cost exactly their own
// pages on every shipped profile: in-card write amplification 1.0.
func TestReplaySequentialAUs(t *testing.T) {
	for _, name := range flash.Builtins() {
		t.Run(name, func(t *testing.T) {
			p := profile(t, name)
			au := uint64(p.AUSize)
			size := uint64(p.PageMappedArea) + 8*au
			start := uint64(p.PageMappedArea) // past the page-mapped (FAT) area: the AU part
			tr := &Trace{Device: "loop0"}
			req := min(uint64(1<<20), au)
			for off := start; off < start+4*au; off += req {
				tr.Requests = append(tr.Requests, Request{Issue: time.Duration(len(tr.Requests)), Sector: off / SectorSize, Sectors: req / SectorSize, Op: OpWrite})
			}
			tr.Requests = append(tr.Requests, Request{Issue: time.Duration(len(tr.Requests)), Op: OpFlush, Flags: FlagPreflush})
			c, err := Replay(tr, p, size)
			if err != nil {
				t.Fatal(err)
			}
			if c.WriteAmplification != 1.0 || c.HostBytesWritten != 4*au || c.PagesProgrammed != 4*au/uint64(p.PageSize) || c.Flushes != 1 {
				t.Errorf("WA %v, host %d, pages %d, flushes %d; want 1.0, %d, %d, 1", c.WriteAmplification, c.HostBytesWritten, c.PagesProgrammed, c.Flushes, 4*au, 4*au/uint64(p.PageSize))
			}
		})
	}
}

// TestReplayMatchesModel: Replay is the model fed the same requests by hand, including the
// preflush split and the write-zeroes-as-write rule.
func TestReplayMatchesModel(t *testing.T) {
	p := profile(t, "sd-typical")
	const size = 64 << 20
	tr := &Trace{Requests: []Request{
		{Issue: 0, Sector: 20000, Sectors: 8, Op: OpWrite, Flags: FlagMeta},
		{Issue: 1, Sector: 40000, Sectors: 64, Op: OpWrite, Flags: FlagPreflush | FlagFUA},
		{Issue: 2, Op: OpFlush, Flags: FlagPreflush},
		{Issue: 3, Sector: 8, Sectors: 8, Op: OpRead},
		{Issue: 4, Sector: 30000, Sectors: 16, Op: OpOther},
		{Issue: 5, Sector: 16384, Sectors: 8192, Op: OpDiscard},
		{Issue: 6, Sector: 20008, Sectors: 8, Op: OpWrite},
		{Issue: 7, Sector: 100, Sectors: 0, Op: OpWrite}, // empty: nothing reaches the card
	}}
	direct := []flash.Request{
		{Op: flash.OpWrite, Off: 20000 * 512, Len: 4096},
		{Op: flash.OpFlush},
		{Op: flash.OpWrite, Off: 40000 * 512, Len: 32768, FUA: true},
		{Op: flash.OpFlush},
		{Op: flash.OpRead, Off: 4096, Len: 4096},
		{Op: flash.OpWrite, Off: 30000 * 512, Len: 8192},
		{Op: flash.OpDiscard, Off: 8 << 20, Len: 4 << 20},
		{Op: flash.OpWrite, Off: 20008 * 512, Len: 4096},
	}
	if d := cmp.Diff(direct, Requests(tr)); d != "" {
		t.Fatalf("Requests (-want +got):\n%s", d)
	}
	m, err := flash.NewModel(p, size)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range direct {
		if _, err := m.Do(q); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Replay(tr, p, size)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(m.Counters(), got); d != "" {
		t.Errorf("Replay differs from the model (-model +replay):\n%s", d)
	}
	again, _ := Replay(tr, p, size)
	if d := cmp.Diff(got, again); d != "" {
		t.Errorf("Replay is not deterministic:\n%s", d)
	}
}

func TestReplayBeyondCard(t *testing.T) {
	tr := &Trace{Device: "loop9", Requests: []Request{{Sector: 1 << 20, Sectors: 8, Op: OpWrite}}}
	_, err := Replay(tr, profile(t, "sd-typical"), 64<<20)
	if err == nil || !strings.Contains(err.Error(), "card size") {
		t.Errorf("Replay beyond the card = %v, want an error telling to use a larger card", err)
	}
}

// TestReplayTraceFile replays the golden sample trace: stored traces stay replayable.
func TestReplayTraceFile(t *testing.T) {
	tr := sample()
	tr.Requests = tr.Requests[:6] // the secure erase at sector 2^40 is beyond any test card
	c, err := Replay(tr, profile(t, "emmc"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	// 2 × 1 MiB + 4 KiB (FUA) written, the 1 MiB cache emptied by the flush after them.
	if c.HostBytesWritten != 2<<20+4096 || c.Flushes != 1 || c.Discards != 1 || c.PagesProgrammed == 0 {
		t.Errorf("counters %+v", c)
	}
}

// TestReplayIgnoresTiming: the modelled device time of a replay depends on the requests and
// their order, not on when they were issued: the model has no clock (no idle-time work), so
// the same requests spread over an hour or issued back to back give the same counters.
func TestReplayIgnoresTiming(t *testing.T) {
	p := profile(t, "sd-typical")
	spaced := func(gap time.Duration) *Trace {
		tr := &Trace{Device: "loop0"}
		for i := 0; i < 400; i++ {
			op := OpWrite
			if i%5 == 0 {
				op = OpRead
			}
			sector := uint64((i*7919)%8192) * 64
			tr.Requests = append(tr.Requests, Request{Issue: time.Duration(i) * gap, Sector: sector, Sectors: 8 + uint64(i%3)*8, Op: op})
		}
		return tr
	}
	var first flash.Counters
	for i, gap := range []time.Duration{0, time.Microsecond, 10 * time.Second} {
		c, err := Replay(spaced(gap), p, 256<<20)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = c
			if c.BusyNs == 0 {
				t.Fatal("the replay modelled no busy time")
			}
			continue
		}
		if d := cmp.Diff(first, c); d != "" {
			t.Errorf("requests %v apart give other counters than back to back:\n%s", gap, d)
		}
	}
}
