package powercut

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/testkit/golden"
)

// A tiny card for the model's rules: 8 pages of 512 bytes.
const (
	tinyPage = 512
	tinySize = 8 * tinyPage
)

// tinyStream is a hand-made write stream: each write fills its range with one letter, so that
// a page of the resulting image says which write it came from.
//
//	0 write A pages 0-1      1 flush
//	2 write B page 2         3 write C pages 3-5 (makes the card merge pages 4-7)
//	4 flush                  5 write D pages 1-2 (an overwrite of flushed data)
//	6 discard page 0         7 write E half of page 6 and half of page 7
//	8 FUA write F page 0
func tinyStream() *Stream {
	type w struct {
		op       flash.Op
		off, len uint64
		fill     byte
		merge    flash.Span
		fua      bool
	}
	ws := []w{
		{flash.OpWrite, 0, 2 * tinyPage, 'A', flash.Span{}, false},
		{flash.OpFlush, 0, 0, 0, flash.Span{}, false},
		{flash.OpWrite, 2 * tinyPage, tinyPage, 'B', flash.Span{}, false},
		{flash.OpWrite, 3 * tinyPage, 3 * tinyPage, 'C', flash.Span{Off: 4 * tinyPage, Len: 4 * tinyPage}, false},
		{flash.OpFlush, 0, 0, 0, flash.Span{}, false},
		{flash.OpWrite, 1 * tinyPage, 2 * tinyPage, 'D', flash.Span{}, false},
		{flash.OpDiscard, 0, tinyPage, 0, flash.Span{}, false},
		{flash.OpWrite, 6*tinyPage + tinyPage/2, tinyPage, 'E', flash.Span{Off: 4 * tinyPage, Len: 4 * tinyPage}, false},
		{flash.OpWrite, 0, tinyPage, 'F', flash.Span{}, true},
	}
	var data []byte
	s := &Stream{}
	for _, x := range ws {
		r := Record{Op: x.op, Off: x.off, Len: x.len, Merge: x.merge, FUA: x.fua}
		if x.op == flash.OpWrite {
			r.Data = uint64(len(data))
			data = append(data, bytes.Repeat([]byte{x.fill}, int(x.len))...)
		}
		s.Records = append(s.Records, r)
	}
	s.Data = bytes.NewReader(data)
	return s
}

// pageMap draws an image a half page at a time: the letter of the write it holds, '.' for
// zeroes, '#' for erased flash (0xff), '?' for anything else (garbage).
func pageMap(img []byte) string {
	var b strings.Builder
	for off := 0; off < len(img); off += tinyPage / 2 {
		h := img[off : off+tinyPage/2]
		c := h[0]
		switch {
		case !bytes.Equal(h, bytes.Repeat([]byte{c}, len(h))):
			b.WriteByte('?')
		case c == 0:
			b.WriteByte('.')
		case c == 0xff:
			b.WriteByte('#')
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c)
		default:
			b.WriteByte('?')
		}
		if off%tinyPage != 0 {
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

// cutImage builds a cut's image the way the cut builder does: the durable prefix applied to
// the base, the outcome in an overlay over it.
func cutImage(t *testing.T, s *Stream, o Outcome) []byte {
	t.Helper()
	base := make([]byte, tinySize)
	w := &memImage{base}
	if err := Apply(w, s, 0, o.Durable); err != nil {
		t.Fatal(err)
	}
	ov := NewOverlay(w, tinySize)
	if err := ApplyOutcome(ov, s, o); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, tinySize)
	if _, err := ov.ReadAt(out, 0); err != nil {
		t.Fatal(err)
	}
	return out
}

type memImage struct{ b []byte }

func (m *memImage) ReadAt(p []byte, off int64) (int, error)  { return copy(p, m.b[off:]), nil }
func (m *memImage) WriteAt(p []byte, off int64) (int, error) { return copy(m.b[off:], p), nil }

// tinyModel is the power-loss model pl on the tiny card: 512-byte pages, erase blocks of 4.
func tinyModel(pl flash.PowerLoss, cache uint64) Model {
	return Model{PowerLoss: pl, CacheSize: cache, PageSize: tinyPage, EraseBlock: 4 * tinyPage}
}

// TestPowerLossRules applies each rule of the power-loss model alone, and all together, to
// the tiny stream at chosen cuts and seeds, and compares the card's state with the golden one.
func TestPowerLossRules(t *testing.T) {
	s := tinyStream()
	rules := []struct {
		name string
		m    Model
	}{
		{"lossless", tinyModel(flash.PowerLoss{}, 0)},
		{"protected", tinyModel(flash.PowerLoss{Protected: true}, 0)},
		{"volatile_cache any, 2 pages", tinyModel(flash.PowerLoss{VolatileCache: true}, 2*tinyPage)},
		{"volatile_cache fifo, 8 pages", tinyModel(flash.PowerLoss{VolatileCache: true, CacheOrder: flash.CacheOrderFIFO}, 8*tinyPage)},
		{"volatile_cache none", tinyModel(flash.PowerLoss{VolatileCache: true, CacheOrder: flash.CacheOrderNone}, 8*tinyPage)},
		{"write_buffer 2 pages", tinyModel(flash.PowerLoss{WriteBuffer: 2 * tinyPage}, 0)},
		{"torn_page", tinyModel(flash.PowerLoss{TornPage: true}, 0)},
		{"torn_page, paired_page", tinyModel(flash.PowerLoss{TornPage: true, PairedPage: true}, 0)},
		{"merge_loss", tinyModel(flash.PowerLoss{MergeLoss: true}, 0)},
		{"write_buffer, torn, paired, merge", tinyModel(flash.PowerLoss{WriteBuffer: 2 * tinyPage, TornPage: true, PairedPage: true, MergeLoss: true}, 0)},
		{"cache, torn, merge", tinyModel(flash.PowerLoss{VolatileCache: true, TornPage: true, MergeLoss: true}, 4*tinyPage)},
	}
	cuts := []Cut{
		{Pos: 1, Kind: CutBeforeFlush}, {Pos: 2, Kind: CutAfterFlush}, {Pos: 3, Kind: CutRandom},
		{Pos: 4, Kind: CutBeforeFlush}, {Pos: 5, Kind: CutAfterFlush}, {Pos: 7, Kind: CutRandom}, {Pos: 8, Kind: CutRandom}, {Pos: 9, Kind: CutRandom},
	}
	var out bytes.Buffer
	for _, r := range rules {
		fmt.Fprintf(&out, "== %s\n", r.name)
		for _, c := range cuts {
			for _, seed := range []uint64{1, 2, 3} {
				c.Seed = seed
				o := Decide(s.Records, c, r.m)
				fmt.Fprintf(&out, "seed %d %-40s %s\n", seed, pageMap(cutImage(t, s, o)), o)
			}
		}
	}
	golden.Check(t, "rules.golden", out.Bytes())
}

// TestRuleInvariants checks what each kind of card promises, over many seeds: a lossless or
// protected card holds exactly the prefix; a cache never loses what was flushed, nor more than
// its size of what was not; a write buffer never loses more than its size; and what the card
// destroyed outside the filesystem's window since its last flush is card damage, never the
// filesystem's.
func TestRuleInvariants(t *testing.T) {
	s := tinyStream()
	for pos := 1; pos <= len(s.Records); pos++ {
		prefix := cutImage(t, s, Outcome{Durable: pos})
		for seed := uint64(0); seed < 50; seed++ {
			c := Cut{Pos: pos, Seed: seed}
			for _, pl := range []flash.PowerLoss{{}, {Protected: true}} {
				o := Decide(s.Records, c, tinyModel(pl, 0))
				if got := cutImage(t, s, o); !bytes.Equal(got, prefix) || len(o.CardDamage) > 0 {
					t.Fatalf("%+v cut %d seed %d: %s, want the prefix %s", pl, pos, seed, pageMap(got), pageMap(prefix))
				}
			}
			for _, order := range []string{flash.CacheOrderAny, flash.CacheOrderFIFO, flash.CacheOrderNone} {
				o := Decide(s.Records, c, tinyModel(flash.PowerLoss{VolatileCache: true, CacheOrder: order}, 2*tinyPage))
				if o.Durable > pos || o.Durable < o.SinceFlush || (o.SinceFlush > 0 && s.Records[o.SinceFlush-1].Op != flash.OpFlush) {
					t.Fatalf("cache %s cut %d seed %d: durable %d before the last flush (%d): %s", order, pos, seed, o.Durable, o.SinceFlush, o)
				}
				lost := uint64(0)
				for i := o.Durable; i < pos; i++ {
					r := s.Records[i]
					if r.FUA && !slices.Contains(o.Survivors, i) {
						t.Fatalf("cut %d seed %d: the FUA write %d was lost: %s", pos, seed, i, o)
					}
					if r.Op == flash.OpWrite && !slices.Contains(o.Survivors, i) {
						lost += pagesOf(r, tinyPage) * tinyPage
					}
				}
				if lost > 2*tinyPage || o.Torn != nil || len(o.Erased) > 0 || len(o.CardDamage) > 0 {
					t.Fatalf("cache %s cut %d seed %d: lost %d bytes of a 1 KiB cache, or damaged: %s", order, pos, seed, lost, o)
				}
				if order == flash.CacheOrderNone && len(o.Survivors) > 0 && !s.Records[o.Survivors[0]].FUA {
					t.Fatalf("cache none cut %d seed %d: a cached write survived: %s", pos, seed, o)
				}
			}
			o := Decide(s.Records, c, tinyModel(flash.PowerLoss{WriteBuffer: 2 * tinyPage}, 0))
			lost := uint64(0)
			for i := o.Durable; i < pos; i++ {
				if r := s.Records[i]; r.Op == flash.OpWrite {
					lost += pagesOf(r, tinyPage) * tinyPage
				}
			}
			if o.Partial != nil {
				lost -= o.Partial.Bytes
			}
			if lost > 2*tinyPage+tinyPage || len(o.Survivors) > 0 {
				t.Fatalf("write buffer cut %d seed %d: lost %d bytes of a 1 KiB buffer: %s", pos, seed, lost, o)
			}
			if o.Durable < o.SinceFlush && len(o.CardDamage) == 0 && lost > 0 {
				t.Fatalf("write buffer cut %d seed %d: a flushed write lost without card damage: %s", pos, seed, o)
			}
		}
	}
}

// TestPairedPage: the paired page is programmed before the torn one, never the torn one: a
// write into the same page before it is skipped for the page before that.
func TestPairedPage(t *testing.T) {
	recs := []Record{
		{Op: flash.OpWrite, Off: 0, Len: tinyPage},                     // page 0
		{Op: flash.OpWrite, Off: tinyPage, Len: tinyPage / 2},          // first half of page 1
		{Op: flash.OpFlush},                                            //
		{Op: flash.OpWrite, Off: tinyPage + tinyPage/2, Len: tinyPage}, // second half of page 1, first of page 2
		{Op: flash.OpWrite, Off: 5 * tinyPage, Len: tinyPage},          // page 5: another erase block
	}
	m := tinyModel(flash.PowerLoss{TornPage: true, PairedPage: true}, 0)
	tests := []struct {
		target, landed int
		want           *flash.Span
	}{
		{3, 1, &flash.Span{Off: tinyPage, Len: tinyPage}}, // page 2 torn: page 1 of the same write
		{3, 0, &flash.Span{Off: 0, Len: tinyPage}},        // page 1 torn: not page 1 again, page 0
		{4, 0, nil}, // page 5 torn: page 2 is in another block
	}
	for _, tc := range tests {
		got := pairedPage(recs, tc.target, tc.landed, m)
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("torn page %d of request %d: paired %v, want %v", tc.landed, tc.target, got, tc.want)
		}
	}
}

// TestCardDamage: damage inside what the filesystem wrote since its last flush is the
// filesystem's to cope with; outside it, the card's.
func TestCardDamage(t *testing.T) {
	s := tinyStream()
	tests := []struct {
		name string
		o    Outcome
		want []flash.Span
	}{
		{"garbage page over the write in flight only", Outcome{Cut: Cut{Pos: 3}, Durable: 3, SinceFlush: 2,
			Torn: &Torn{Record: 3, Page: flash.Span{Off: 3 * tinyPage, Len: tinyPage}, Mode: "garbage"}}, nil},
		{"garbage page beside a small write", Outcome{Cut: Cut{Pos: 7}, Durable: 7, SinceFlush: 5,
			Torn: &Torn{Record: 7, Page: flash.Span{Off: 7 * tinyPage, Len: tinyPage}, Mode: "garbage"}},
			[]flash.Span{{Off: 7*tinyPage + tinyPage/2, Len: tinyPage / 2}}},
		{"old page: nothing destroyed", Outcome{Cut: Cut{Pos: 7}, Durable: 7, SinceFlush: 5,
			Torn: &Torn{Record: 7, Page: flash.Span{Off: 7 * tinyPage, Len: tinyPage}, Mode: "old"}}, nil},
		{"a merge erasing flushed pages and the window's", Outcome{Cut: Cut{Pos: 7}, Durable: 7, SinceFlush: 5,
			Erased: []flash.Span{{Off: 4 * tinyPage, Len: 4 * tinyPage}}},
			[]flash.Span{{Off: 4 * tinyPage, Len: 2*tinyPage + tinyPage/2}, {Off: 7*tinyPage + tinyPage/2, Len: tinyPage / 2}}},
		{"a write buffer losing a flushed write", Outcome{Cut: Cut{Pos: 5}, Durable: 3, SinceFlush: 5,
			Partial: &Partial{Record: 3, Bytes: tinyPage}}, []flash.Span{{Off: 4 * tinyPage, Len: 2 * tinyPage}}},
	}
	for _, tc := range tests {
		if got := cardDamage(s.Records, tc.o, tinyPage); !slices.Equal(got, tc.want) {
			t.Errorf("%s: card damage %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPlanCuts(t *testing.T) {
	s := tinyStream()
	cuts := PlanCuts(s.Records, 6, 7)
	kinds := map[string]int{}
	for i, c := range cuts {
		if i > 0 && c.Pos <= cuts[i-1].Pos {
			t.Fatalf("cuts not ascending and distinct: %+v", cuts)
		}
		if c.Pos < 1 || c.Pos > len(s.Records) {
			t.Fatalf("cut %d outside the stream", c.Pos)
		}
		kinds[c.Kind]++
	}
	if kinds[CutBeforeFlush] == 0 || kinds[CutAfterFlush] == 0 {
		t.Errorf("no cut on each side of a flush: %+v", cuts)
	}
	if len(cuts) != 6 {
		t.Errorf("%d cuts, want 6", len(cuts))
	}
}

// TestOverlay checks reads through partial writes and that the base is never written.
func TestOverlay(t *testing.T) {
	base := bytes.Repeat([]byte{1}, 3*overlayBlock+100)
	orig := bytes.Clone(base)
	ov := NewOverlay(bytes.NewReader(base), int64(len(base)))
	ov.WriteAt(bytes.Repeat([]byte{2}, 10), overlayBlock-5)
	ov.WriteAt(bytes.Repeat([]byte{3}, overlayBlock), 2*overlayBlock)
	got := make([]byte, len(base))
	if n, err := ov.ReadAt(got, 0); err != nil || n != len(base) {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
	want := bytes.Clone(orig)
	copy(want[overlayBlock-5:], bytes.Repeat([]byte{2}, 10))
	copy(want[2*overlayBlock:], bytes.Repeat([]byte{3}, overlayBlock))
	if !bytes.Equal(got, want) || !bytes.Equal(base, orig) {
		t.Fatal("overlay content wrong or base changed")
	}
	if _, err := ov.WriteAt([]byte{1}, int64(len(base))); err == nil {
		t.Error("write past the end accepted")
	}
}

// recordTiny records the tiny stream with w and returns it.
func recordTiny(t *testing.T, w *Recorder) *Stream {
	t.Helper()
	src := tinyStream()
	for _, r := range src.Records {
		data := make([]byte, r.Len)
		if r.Op == flash.OpWrite {
			src.Data.ReadAt(data, int64(r.Data))
		}
		if err := w.Add(r, data); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// TestStreamRoundTrip writes a stream with the recorder and reads it back.
func TestStreamRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := NewRecorder(dir, 6000)
	if err != nil {
		t.Fatal(err)
	}
	src := recordTiny(t, w)
	w.Add(Record{Op: flash.OpWrite, Len: 2000}, make([]byte, 2000)) // past the limit
	if !w.Full() || w.Recorded() != uint64(len(src.Records)) || w.Len() != w.Recorded()+1 {
		t.Fatalf("full %v, %d recorded of %d", w.Full(), w.Recorded(), w.Len())
	}
	w.Close()
	s, err := OpenStream(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o := Outcome{Durable: len(s.Records)}
	if a, b := cutImage(t, s, o), cutImage(t, src, o); !bytes.Equal(a, b) {
		t.Errorf("replayed stream differs: %s vs %s", pageMap(a), pageMap(b))
	}
}

// TestTruncatedRecording: a stream that fills up stops recording but goes on counting, so that
// its cuts are drawn within what it holds, and an acknowledgement given after it ended (at a
// position past it) is never required at them. Before, the position stopped with the stream
// and such an acknowledgement was required at the last cut, of data the stream never held.
func TestTruncatedRecording(t *testing.T) {
	tests := []struct {
		name     string
		limit    uint64
		wantFull bool
	}{
		{"room for everything", 1 << 20, false},
		{"full after the tiny stream's 5 KiB", 6000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := NewRecorder(dir, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			recordTiny(t, w)
			for i := 0; i < 3; i++ { // a file written and acknowledged: write, flush
				w.Add(Record{Op: flash.OpWrite, Off: 0, Len: 2000}, make([]byte, 2000))
				w.Add(Record{Op: flash.OpFlush}, nil)
			}
			ack := w.Len() // what the workload's Pos reads after the fsync
			if w.Full() != tc.wantFull || (w.Recorded() < w.Len()) != tc.wantFull {
				t.Fatalf("full %v, %d of %d requests recorded", w.Full(), w.Recorded(), w.Len())
			}
			w.Close()
			s, err := OpenStream(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if uint64(len(s.Records)) != w.Recorded() {
				t.Fatalf("stream holds %d requests, recorder says %d", len(s.Records), w.Recorded())
			}
			man := &Manifest{Files: []*File{{Path: "late", Versions: []Version{at(version(content(1, 2000), OpCreate), ack-2, ack)}}}}
			empty := t.TempDir()
			cuts := PlanCuts(s.Records, 30, 1)
			for _, c := range cuts {
				if c.Pos > len(s.Records) {
					t.Fatalf("cut at %d beyond the %d requests recorded", c.Pos, len(s.Records))
				}
				chk, err := man.Verify(empty, uint64(c.Pos))
				if err != nil {
					t.Fatal(err)
				}
				if required := uint64(c.Pos) >= ack; (chk.AckedLost == 1) != required {
					t.Errorf("cut %d, acknowledgement at %d: acked lost %d, want the file required: %v", c.Pos, ack, chk.AckedLost, required)
				}
			}
			if last := cuts[len(cuts)-1].Pos; tc.wantFull == (uint64(last) >= ack) {
				t.Errorf("last cut %d, acknowledgement at %d: want it past the stream only when the stream was full", last, ack)
			}
		})
	}
}

// TestFloor: the prefix a cut builder advances the card to in place is never past any cut's
// durable prefix at that point, and never goes back as the cuts move forward.
func TestFloor(t *testing.T) {
	s := tinyStream()
	models := []Model{
		tinyModel(flash.PowerLoss{}, 0), tinyModel(flash.PowerLoss{Protected: true}, 0),
		tinyModel(flash.PowerLoss{VolatileCache: true}, 2*tinyPage), tinyModel(flash.PowerLoss{VolatileCache: true, CacheOrder: flash.CacheOrderFIFO}, 8*tinyPage),
		tinyModel(flash.PowerLoss{WriteBuffer: 2 * tinyPage, TornPage: true, PairedPage: true}, 0), tinyModel(flash.PowerLoss{WriteBuffer: 8 * tinyPage}, 0),
	}
	for _, m := range models {
		prev := 0
		for pos := 0; pos <= len(s.Records); pos++ {
			f := Floor(s.Records, pos, m)
			if f < prev || f > pos {
				t.Fatalf("%+v: floor %d at %d after %d", m.PowerLoss, f, pos, prev)
			}
			prev = f
			for seed := uint64(0); seed < 50; seed++ {
				if o := Decide(s.Records, Cut{Pos: pos, Seed: seed}, m); o.Durable < f {
					t.Fatalf("%+v cut %d seed %d: durable %d below the floor %d", m.PowerLoss, pos, seed, o.Durable, f)
				}
			}
		}
	}
}
