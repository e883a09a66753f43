package powercut

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/flash"
)

// Kinds of cut point.
const (
	CutBeforeFlush = "before-flush" // the flush had not reached the card: its epoch is volatile
	CutAfterFlush  = "after-flush"  // the flush had returned: everything before it is durable
	CutRandom      = "random"       // anywhere, often in the middle of a write
)

// Cut is one power cut: the card had received Pos whole requests of the stream when its
// power went, and request Pos (if any) was arriving. Seed chooses what the power-loss model
// leaves to chance (which cached writes survive, how the page in flight tears).
type Cut struct {
	Pos  int    `json:"pos"`
	Seed uint64 `json:"seed"`
	Kind string `json:"kind"`
}

// PlanCuts chooses n cut points over a stream of records, in ascending order: a third just
// before a flush, a third just after one (both spread over all the flushes), the rest at
// seeded random points, so that both sides of every kind of durability point are tried.
func PlanCuts(recs []Record, n int, seed uint64) []Cut {
	if n <= 0 || len(recs) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x63757473))
	var flushes []int
	for i, r := range recs {
		if r.Op == flash.OpFlush {
			flushes = append(flushes, i)
		}
	}
	seen := map[int]bool{}
	var cuts []Cut
	add := func(pos int, kind string) {
		if pos < 1 || pos > len(recs) || seen[pos] {
			return
		}
		seen[pos] = true
		cuts = append(cuts, Cut{Pos: pos, Kind: kind, Seed: rng.Uint64()})
	}
	third := n / 3
	for i := 0; i < third && len(flushes) > 0; i++ {
		f := flushes[(i*len(flushes))/third]
		add(f, CutBeforeFlush)
		add(f+1, CutAfterFlush)
	}
	for tries := 0; len(cuts) < n && tries < 20*n; tries++ {
		add(1+rng.IntN(len(recs)), CutRandom)
	}
	slices.SortFunc(cuts, func(a, b Cut) int { return a.Pos - b.Pos })
	return cuts
}

// Torn is the page the card was programming when the power went.
type Torn struct {
	Record int        `json:"record"` // the write in flight
	Page   flash.Span `json:"page"`
	// Mode is what the page holds: "old", "new" or "garbage".
	Mode string `json:"mode"`
	// Landed is how many of the write's pages before the torn one were programmed whole.
	Landed int `json:"landed"`
}

// Outcome is what the power-loss model makes of a cut: the card holds records [0, Durable)
// in order, then the Survivors of the volatile ones, then the torn page and the erased spans.
type Outcome struct {
	Cut       Cut          `json:"cut"`
	Durable   int          `json:"durable"`
	Survivors []int        `json:"survivors,omitempty"`
	LostWrite int          `json:"lost_writes"` // volatile writes that did not survive
	Torn      *Torn        `json:"torn,omitempty"`
	Erased    []flash.Span `json:"erased,omitempty"` // allocation units damaged by a merge in progress
}

// String is a one-line description, for logs and the golden tests.
func (o Outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cut %d (%s): durable %d, survivors %v, lost %d", o.Cut.Pos, o.Cut.Kind, o.Durable, o.Survivors, o.LostWrite)
	if o.Torn != nil {
		fmt.Fprintf(&b, ", torn page %d+%d of request %d (%s, %d pages landed)", o.Torn.Page.Off, o.Torn.Page.Len, o.Torn.Record, o.Torn.Mode, o.Torn.Landed)
	}
	for _, e := range o.Erased {
		fmt.Fprintf(&b, ", erased %d+%d", e.Off, e.Len)
	}
	return b.String()
}

// Decide applies the power-loss model pl of a card with pages of pageSize bytes to a cut.
func Decide(recs []Record, c Cut, pl flash.PowerLoss, pageSize uint64) Outcome {
	rng := rand.New(rand.NewPCG(c.Seed, 0x6c6f7373))
	o := Outcome{Cut: c, Durable: c.Pos}
	if pl.VolatileCache {
		// Everything up to and including the last flush the card received is durable;
		// each write after it survives or not, independently: a cache written back in
		// any order, of which the power cut stops an arbitrary part.
		o.Durable = 0
		for i := c.Pos - 1; i >= 0; i-- {
			if recs[i].Op == flash.OpFlush {
				o.Durable = i + 1
				break
			}
		}
		for i := o.Durable; i < c.Pos; i++ {
			if recs[i].FUA || rng.IntN(2) == 0 {
				o.Survivors = append(o.Survivors, i)
			} else if recs[i].Op == flash.OpWrite {
				o.LostWrite++
			}
		}
	}
	if c.Pos >= len(recs) {
		return o
	}
	in := recs[c.Pos] // arriving when the power went
	if pl.TornPage && in.Op == flash.OpWrite && in.Len > 0 {
		first, last := in.Off/pageSize, (in.Off+in.Len-1)/pageSize
		pages := int(last - first + 1)
		k := rng.IntN(pages + 1)
		if k < pages {
			o.Torn = &Torn{Record: c.Pos, Page: flash.Span{Off: (first + uint64(k)) * pageSize, Len: pageSize},
				Mode: []string{"old", "new", "garbage"}[rng.IntN(3)], Landed: k}
		} else {
			// The whole write was programmed before the power went.
			o.Survivors = append(o.Survivors, c.Pos)
		}
	}
	if pl.MergeLoss && in.Merge.Len > 0 {
		// The merge copies page after page into a fresh AU and switches the map to it as
		// it starts: the pages it had not copied yet read back erased.
		n := in.Merge.Len / pageSize
		k := uint64(rng.IntN(int(n)))
		o.Erased = append(o.Erased, flash.Span{Off: in.Merge.Off + k*pageSize, Len: (n - k) * pageSize})
	}
	return o
}

// Image is a card image being built.
type Image interface {
	io.ReaderAt
	io.WriterAt
}

// Apply writes records [from, to) of the stream into img, in order: data for writes, zeroes
// for discards (what the simulated card returns for discarded data).
func Apply(img Image, s *Stream, from, to int) error {
	for i := from; i < to; i++ {
		if err := applyOne(img, s, s.Records[i]); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	return nil
}

// chunk bounds the buffer Apply copies a write's data through.
const chunk = 1 << 20

func applyOne(img Image, s *Stream, r Record) error {
	var buf []byte
	switch r.Op {
	case flash.OpWrite:
		buf = make([]byte, min(r.Len, chunk))
		for done := uint64(0); done < r.Len; {
			n := min(r.Len-done, chunk)
			if _, err := s.Data.ReadAt(buf[:n], int64(r.Data+done)); err != nil {
				return fmt.Errorf("read recorded data: %w", err)
			}
			if _, err := img.WriteAt(buf[:n], int64(r.Off+done)); err != nil {
				return err
			}
			done += n
		}
	case flash.OpDiscard:
		buf = make([]byte, min(r.Len, chunk))
		for done := uint64(0); done < r.Len; {
			n := min(r.Len-done, chunk)
			if _, err := img.WriteAt(buf[:n], int64(r.Off+done)); err != nil {
				return err
			}
			done += n
		}
	}
	return nil
}

// ApplyOutcome writes what a cut's outcome adds to the durable prefix (records [0,
// o.Durable), already in img): the surviving volatile requests, the write in flight up to
// its torn page, the torn page, and the erased spans.
func ApplyOutcome(img Image, s *Stream, o Outcome) error {
	for _, i := range o.Survivors {
		if err := applyOne(img, s, s.Records[i]); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	if t := o.Torn; t != nil {
		r := s.Records[t.Record]
		// The pages before the torn one landed whole.
		if t.Page.Off > r.Off {
			part := r
			part.Len = t.Page.Off - r.Off
			if err := applyOne(img, s, part); err != nil {
				return fmt.Errorf("landed pages of request %d: %w", t.Record, err)
			}
		}
		switch t.Mode {
		case "new":
			// The page as the card meant to program it: its old content with the written
			// part replaced (a read-modify-write of a partial page).
			s0, e0 := max(r.Off, t.Page.Off), min(r.Off+r.Len, t.Page.Off+t.Page.Len)
			part := Record{Op: flash.OpWrite, Off: s0, Len: e0 - s0, Data: r.Data + (s0 - r.Off)}
			if err := applyOne(img, s, part); err != nil {
				return fmt.Errorf("torn page of request %d: %w", t.Record, err)
			}
		case "garbage":
			g := make([]byte, t.Page.Len)
			rng := rand.New(rand.NewPCG(o.Cut.Seed, t.Page.Off))
			for i := range g {
				g[i] = byte(rng.Uint32())
			}
			if _, err := img.WriteAt(g, int64(t.Page.Off)); err != nil {
				return err
			}
		}
	}
	for _, e := range o.Erased {
		ff := make([]byte, e.Len)
		for i := range ff {
			ff[i] = 0xff
		}
		if _, err := img.WriteAt(ff, int64(e.Off)); err != nil {
			return err
		}
	}
	return nil
}
