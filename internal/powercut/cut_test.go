package powercut

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/golden"
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

// TestPowerLossRules applies each rule of the power-loss model alone, and all together, to
// the tiny stream at chosen cuts and seeds, and compares the card's state with the golden one.
func TestPowerLossRules(t *testing.T) {
	s := tinyStream()
	rules := []struct {
		name string
		pl   flash.PowerLoss
	}{
		{"lossless", flash.PowerLoss{}},
		{"volatile_cache", flash.PowerLoss{VolatileCache: true}},
		{"torn_page", flash.PowerLoss{TornPage: true}},
		{"merge_loss", flash.PowerLoss{MergeLoss: true}},
		{"all", flash.PowerLoss{VolatileCache: true, TornPage: true, MergeLoss: true}},
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
				o := Decide(s.Records, c, r.pl, tinyPage)
				fmt.Fprintf(&out, "seed %d %-40s %s\n", seed, pageMap(cutImage(t, s, o)), o)
			}
		}
	}
	golden.Check(t, "rules.golden", out.Bytes())
}

// TestRuleInvariants checks what each rule promises, over many seeds: a lossless card holds
// exactly the prefix; without a volatile cache nothing received before the cut is lost but
// the torn page; nothing flushed is ever lost without torn pages or merge loss.
func TestRuleInvariants(t *testing.T) {
	s := tinyStream()
	for pos := 1; pos <= len(s.Records); pos++ {
		prefix := cutImage(t, s, Outcome{Durable: pos})
		for seed := uint64(0); seed < 50; seed++ {
			c := Cut{Pos: pos, Seed: seed}
			if got := cutImage(t, s, Decide(s.Records, c, flash.PowerLoss{}, tinyPage)); !bytes.Equal(got, prefix) {
				t.Fatalf("lossless cut %d seed %d: %s, want the prefix %s", pos, seed, pageMap(got), pageMap(prefix))
			}
			o := Decide(s.Records, c, flash.PowerLoss{VolatileCache: true}, tinyPage)
			if o.Durable > pos || (o.Durable > 0 && s.Records[o.Durable-1].Op != flash.OpFlush) {
				t.Fatalf("volatile cut %d seed %d: durable %d is not the last flush", pos, seed, o.Durable)
			}
			if o.Torn != nil || len(o.Erased) > 0 {
				t.Fatalf("volatile cache alone tore or erased: %s", o)
			}
			for i := o.Durable; i < pos; i++ {
				if s.Records[i].FUA && !slices.Contains(o.Survivors, i) {
					t.Fatalf("cut %d seed %d: the FUA write %d was lost: %s", pos, seed, i, o)
				}
			}
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

// TestStreamRoundTrip writes a stream with the recorder and reads it back.
func TestStreamRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := NewRecorder(dir, 6000)
	if err != nil {
		t.Fatal(err)
	}
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
	w.Add(Record{Op: flash.OpWrite, Len: 2000}, make([]byte, 2000)) // past the limit
	if !w.Full() || w.Len() != uint64(len(src.Records)) {
		t.Fatalf("full %v len %d", w.Full(), w.Len())
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
