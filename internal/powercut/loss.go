package powercut

import (
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/fsbench/fsbench/internal/flash"
)

// Model is what the power-loss model needs to know of a card: its rules (flash.PowerLoss) and
// the sizes they act on.
type Model struct {
	flash.PowerLoss
	// CacheSize is how many bytes a volatile cache holds.
	CacheSize uint64
	// PageSize is the card's program granularity; EraseBlock the block a paired page shares
	// with the page torn over it.
	PageSize, EraseBlock uint64
	// PageMapped: the FTL programs pages in the order it receives them, wherever they belong
	// (a paired page is the page written just before, at any address); otherwise a page's
	// neighbours in program order are its neighbours in its allocation unit.
	PageMapped bool
}

// ModelOf is the power-loss model of a card profile.
func ModelOf(p flash.Profile) Model {
	return Model{PowerLoss: p.PowerLoss, CacheSize: uint64(p.CacheSize), PageSize: uint64(p.PageSize),
		EraseBlock: uint64(p.EraseBlock), PageMapped: p.FTL == flash.FTLPage}
}

// Torn is the page the card was programming when the power went.
type Torn struct {
	Record int        `json:"record"` // the write being programmed
	Page   flash.Span `json:"page"`
	// Mode is what the page holds: "old", "new" or "garbage".
	Mode string `json:"mode"`
	// Landed is how many of the write's pages before the torn one were programmed whole.
	Landed int `json:"landed"`
}

// Partial is a write of which the card had programmed only the first Bytes when the power went
// (a write buffer's oldest data, on a card whose model does not tear pages).
type Partial struct {
	Record int    `json:"record"`
	Bytes  uint64 `json:"bytes"`
}

// Outcome is what the power-loss model makes of a cut: the card holds records [0, Durable) in
// order, then the Survivors of the later ones, the Partial write or the Torn page, the Paired
// page destroyed, and the Erased spans.
type Outcome struct {
	Cut       Cut   `json:"cut"`
	Durable   int   `json:"durable"`
	Survivors []int `json:"survivors,omitempty"`
	// LostWrite counts the writes received before the cut that did not land whole.
	LostWrite int      `json:"lost_writes"`
	Partial   *Partial `json:"partial,omitempty"`
	Torn      *Torn    `json:"torn,omitempty"`
	// Paired is a page programmed before the torn one that the torn program destroyed.
	Paired *flash.Span  `json:"paired,omitempty"`
	Erased []flash.Span `json:"erased,omitempty"` // allocation units damaged by a merge in progress
	// SinceFlush is the first record after the last flush the card received before the cut:
	// records [SinceFlush, Cut.Pos], the one arriving included, are what the filesystem wrote
	// since its last flush, which any card may lose.
	SinceFlush int `json:"since_flush"`
	// CardDamage is what the card destroyed outside that: flushed writes a write buffer lost,
	// the torn page's neighbours, the paired page, the merge's pages. A filesystem cannot be
	// blamed for it; how it came through it is its own figure.
	CardDamage []flash.Span `json:"card_damage,omitempty"`
}

// CardDamageBytes is the size of the card-caused damage.
func (o Outcome) CardDamageBytes() uint64 {
	var n uint64
	for _, s := range o.CardDamage {
		n += s.Len
	}
	return n
}

// String is a one-line description, for logs and the golden tests.
func (o Outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cut %d (%s): durable %d, survivors %v, lost %d", o.Cut.Pos, o.Cut.Kind, o.Durable, o.Survivors, o.LostWrite)
	if p := o.Partial; p != nil {
		fmt.Fprintf(&b, ", request %d landed %d bytes", p.Record, p.Bytes)
	}
	if t := o.Torn; t != nil {
		fmt.Fprintf(&b, ", torn page %d+%d of request %d (%s, %d pages landed)", t.Page.Off, t.Page.Len, t.Record, t.Mode, t.Landed)
	}
	if p := o.Paired; p != nil {
		fmt.Fprintf(&b, ", paired page %d+%d", p.Off, p.Len)
	}
	for _, e := range o.Erased {
		fmt.Fprintf(&b, ", erased %d+%d", e.Off, e.Len)
	}
	if len(o.CardDamage) > 0 {
		fmt.Fprintf(&b, "; card damage")
		for _, d := range o.CardDamage {
			fmt.Fprintf(&b, " %d+%d", d.Off, d.Len)
		}
	}
	return b.String()
}

// Decide applies the power-loss model m to a cut. What it leaves to chance (which cached
// writes survive, how much of a write buffer is lost, how the page in flight tears) is drawn
// from the cut's seed, so that the same cut always gives the same card.
func Decide(recs []Record, c Cut, m Model) Outcome {
	rng := rand.New(rand.NewPCG(c.Seed, 0x6c6f7373))
	ps := max(m.PageSize, 1)
	o := Outcome{Cut: c, Durable: c.Pos}
	for i := c.Pos - 1; i >= 0; i-- {
		if recs[i].Op == flash.OpFlush {
			o.SinceFlush = i + 1
			break
		}
	}
	if m.Protected {
		return o // capacitors finish everything received; the request arriving was not
	}
	// target is the first write the card had not wholly programmed, landed the pages of it
	// that had been: the torn page, the paired page and the merge in progress are its.
	target, landed := -1, 0
	switch {
	case m.VolatileCache:
		target, landed = decideCache(recs, c, m, rng, &o)
	case m.WriteBuffer > 0:
		target, landed = decideBuffer(recs, c, m, rng, &o)
	case c.Pos < len(recs) && recs[c.Pos].Op == flash.OpWrite && recs[c.Pos].Len > 0:
		// The write arriving is programmed page by page as it comes.
		target, landed = c.Pos, -1
	}
	if target >= 0 {
		r := recs[target]
		first, last := r.Off/ps, (r.Off+r.Len-1)/ps
		pages := int(last - first + 1)
		if landed < 0 {
			// A write programmed as it arrives: it got anywhere, possibly to its end.
			landed = rng.IntN(pages + 1)
			if landed == pages {
				if m.TornPage {
					o.Survivors = append(o.Survivors, target)
				}
				target = -1
			}
		}
		if target >= 0 {
			switch {
			case m.TornPage:
				o.Torn = &Torn{Record: target, Page: flash.Span{Off: (first + uint64(landed)) * ps, Len: ps},
					Mode: []string{"old", "new", "garbage"}[rng.IntN(3)], Landed: landed}
				if m.PairedPage && rng.IntN(2) == 0 {
					o.Paired = pairedPage(recs, target, landed, m)
				}
			case landed > 0 && target < c.Pos:
				// Without torn pages a write received but not wholly programmed keeps its
				// programmed part (the one arriving is simply not received).
				o.Partial = &Partial{Record: target, Bytes: (first+uint64(landed))*ps - r.Off}
			}
		}
	}
	mergeRec := c.Pos
	if target >= 0 {
		mergeRec = target
	}
	if m.MergeLoss && mergeRec < len(recs) && recs[mergeRec].Merge.Len > 0 {
		// The merge copies page after page into a fresh AU and switches the map to it as it
		// starts: the pages it had not copied yet read back erased.
		mg := recs[mergeRec].Merge
		n := mg.Len / ps
		k := uint64(rng.IntN(int(n)))
		o.Erased = append(o.Erased, flash.Span{Off: mg.Off + k*ps, Len: (n - k) * ps})
	}
	o.CardDamage = cardDamage(recs, o, ps)
	return o
}

// Floor is the fewest records any cut at pos keeps in order, whatever its seed: the prefix a
// cut builder may apply to the card in place. It never decreases as pos grows, so cuts built in
// ascending order can share one image advanced in place; each cut's records between the floor
// and its Durable go into its overlay.
func Floor(recs []Record, pos int, m Model) int {
	ps := max(m.PageSize, 1)
	switch {
	case m.Protected:
		return pos
	case m.VolatileCache:
		since := 0
		for i := pos - 1; i >= 0; i-- {
			if recs[i].Op == flash.OpFlush {
				since = i + 1
				break
			}
		}
		return cacheStart(recs, since, pos, m.CacheSize, ps)
	case m.WriteBuffer > 0:
		held := uint64(0)
		for i := pos - 1; i >= 0; i-- {
			if r := recs[i]; r.Op == flash.OpWrite {
				held += pagesOf(r, ps) * ps
				if held >= uint64(m.WriteBuffer) {
					return i
				}
			}
		}
		return 0
	}
	return pos
}

// cacheStart is the first record after since that a cache of size bytes still holds at pos:
// the older writes were written back as it filled, oldest first. Discards and FUA writes take
// no room in it.
func cacheStart(recs []Record, since, pos int, size, ps uint64) int {
	start, held := pos, uint64(0)
	for i := pos - 1; i >= since; i-- {
		r := recs[i]
		if r.Op != flash.OpWrite || r.FUA {
			start = i
			continue
		}
		sz := pagesOf(r, ps) * ps
		if held+sz > size {
			break
		}
		held += sz
		start = i
	}
	return start
}

// decideCache applies a volatile cache of m.CacheSize bytes: records up to the last flush are
// durable, and so are the older writes after it that no longer fit in the cache (written back
// as it filled, oldest first); of the ones it still holds, m.CacheOrder says which reached
// flash. A FUA write bypasses the cache. It returns the first cached write lost, whose write
// back was under way, and how many of its pages had been programmed.
func decideCache(recs []Record, c Cut, m Model, rng *rand.Rand, o *Outcome) (int, int) {
	ps := max(m.PageSize, 1)
	start := cacheStart(recs, o.SinceFlush, c.Pos, m.CacheSize, ps)
	o.Durable = start
	var cached []int
	for i := start; i < c.Pos; i++ {
		if r := recs[i]; r.FUA || r.Op == flash.OpFlush {
			continue
		}
		cached = append(cached, i)
	}
	keep := map[int]bool{}
	switch m.CacheOrder {
	case flash.CacheOrderFIFO:
		for _, i := range cached[:rng.IntN(len(cached)+1)] {
			keep[i] = true
		}
	case flash.CacheOrderNone:
	default:
		for _, i := range cached {
			keep[i] = rng.IntN(2) == 0
		}
	}
	target := -1
	for i := start; i < c.Pos; i++ {
		r := recs[i]
		switch {
		case r.FUA || keep[i]:
			o.Survivors = append(o.Survivors, i)
		case r.Op == flash.OpWrite:
			o.LostWrite++
			if target < 0 {
				target = i
			}
		}
	}
	if target < 0 || m.CacheOrder == flash.CacheOrderNone {
		return -1, 0 // none: nothing of what the cache held reached flash
	}
	// The write back of the oldest lost write was under way: somewhere in it.
	return target, rng.IntN(int(pagesOf(recs[target], ps)))
}

// decideBuffer applies a write buffer of m.WriteBuffer bytes that no flush empties: it holds the
// last WriteBuffer bytes of writes the card received (flushes or not), programs them oldest
// first, and at the cut a seeded part of them, up to all, had not been programmed.
func decideBuffer(recs []Record, c Cut, m Model, rng *rand.Rand, o *Outcome) (int, int) {
	ps := max(m.PageSize, 1)
	held := uint64(0)
	for i := c.Pos - 1; i >= 0 && held < uint64(m.WriteBuffer); i-- {
		if recs[i].Op == flash.OpWrite {
			held += pagesOf(recs[i], ps) * ps
		}
	}
	held = min(held, uint64(m.WriteBuffer))
	lost := uint64(rng.IntN(int(held/ps)+1)) * ps
	if lost == 0 {
		return -1, 0 // the buffer was programmed; the request arriving was not received
	}
	for i := c.Pos - 1; i >= 0; i-- {
		r := recs[i]
		o.Durable = i
		if r.Op != flash.OpWrite {
			continue // a discard in the buffer's span is lost with it; a flush changes nothing
		}
		o.LostWrite++
		sz := pagesOf(r, ps) * ps
		if sz >= lost {
			return i, int((sz - lost) / ps)
		}
		lost -= sz
	}
	return -1, 0
}

// pagesOf is how many card pages a request touches.
func pagesOf(r Record, ps uint64) uint64 {
	if r.Len == 0 {
		return 0
	}
	return (r.Off+r.Len-1)/ps - r.Off/ps + 1
}

// pairedPage is the page programmed just before page landed of write target, in the same erase
// block: its lower page.
func pairedPage(recs []Record, target, landed int, m Model) *flash.Span {
	ps := max(m.PageSize, 1)
	torn := (recs[target].Off/ps + uint64(landed)) * ps
	if landed > 0 {
		return &flash.Span{Off: torn - ps, Len: ps}
	}
	for i := target - 1; i >= 0; i-- {
		r := recs[i]
		if r.Op != flash.OpWrite || r.Len == 0 {
			continue
		}
		prev := ((r.Off + r.Len - 1) / ps) * ps
		if prev == torn {
			continue // a write into the same page: the card programs that page once
		}
		eb := max(m.EraseBlock, ps)
		if !m.PageMapped && prev/eb != torn/eb {
			return nil // another block: its pages are not paired with this one
		}
		return &flash.Span{Off: prev, Len: ps}
	}
	return nil
}

// cardDamage is what the outcome destroyed outside records [o.SinceFlush, o.Cut.Pos]: flushed
// writes a write buffer lost (in whole: a write after them that would have covered them was
// lost too), and the torn, paired and erased pages where the filesystem had written nothing
// since its last flush.
func cardDamage(recs []Record, o Outcome, ps uint64) []flash.Span {
	var window []flash.Span
	for i := o.SinceFlush; i <= o.Cut.Pos && i < len(recs); i++ {
		if r := recs[i]; r.Op == flash.OpWrite || r.Op == flash.OpDiscard {
			window = append(window, flash.Span{Off: r.Off, Len: r.Len})
		}
	}
	var damage []flash.Span
	survived := func(i int) bool { return slices.Contains(o.Survivors, i) }
	for i := o.Durable; i < o.SinceFlush && i < len(recs); i++ {
		r := recs[i]
		if r.Op != flash.OpWrite || survived(i) {
			continue
		}
		lost := flash.Span{Off: r.Off, Len: r.Len}
		if p := o.Partial; p != nil && p.Record == i {
			lost = flash.Span{Off: r.Off + p.Bytes, Len: r.Len - p.Bytes}
		}
		if t := o.Torn; t != nil && t.Record == i {
			from := t.Page.Off
			if t.Mode == "new" {
				from = t.Page.Off + t.Page.Len
			}
			from = max(from, r.Off)
			lost = flash.Span{Off: from, Len: (r.Off + r.Len) - min(from, r.Off+r.Len)}
		}
		if lost.Len > 0 {
			damage = append(damage, lost)
		}
	}
	var phys []flash.Span
	if t := o.Torn; t != nil && t.Mode == "garbage" {
		phys = append(phys, t.Page)
	}
	if o.Paired != nil {
		phys = append(phys, *o.Paired)
	}
	phys = append(phys, o.Erased...)
	damage = append(damage, subtract(normalize(phys), normalize(window))...)
	return normalize(damage)
}

// normalize sorts spans and merges the ones that overlap or touch.
func normalize(in []flash.Span) []flash.Span {
	var s []flash.Span
	for _, x := range in {
		if x.Len > 0 {
			s = append(s, x)
		}
	}
	slices.SortFunc(s, func(a, b flash.Span) int { return cmp.Compare(a.Off, b.Off) })
	var out []flash.Span
	for _, x := range s {
		if n := len(out); n > 0 && x.Off <= out[n-1].Off+out[n-1].Len {
			out[n-1].Len = max(out[n-1].Off+out[n-1].Len, x.Off+x.Len) - out[n-1].Off
			continue
		}
		out = append(out, x)
	}
	return out
}

// subtract is a minus b, both normalized.
func subtract(a, b []flash.Span) []flash.Span {
	var out []flash.Span
	for _, x := range a {
		start, end := x.Off, x.Off+x.Len
		for _, y := range b {
			ys, ye := y.Off, y.Off+y.Len
			if ye <= start || ys >= end {
				continue
			}
			if ys > start {
				out = append(out, flash.Span{Off: start, Len: ys - start})
			}
			start = max(start, ye)
			if start >= end {
				break
			}
		}
		if start < end {
			out = append(out, flash.Span{Off: start, Len: end - start})
		}
	}
	return out
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
// o.Durable), already in img): the surviving later requests, the partial write and the torn
// one (its programmed pages, then the torn page), in the order the card received them; then
// the paired page's garbage and the erased spans.
func ApplyOutcome(img Image, s *Stream, o Outcome) error {
	order := slices.Clone(o.Survivors)
	if o.Partial != nil {
		order = append(order, o.Partial.Record)
	}
	if o.Torn != nil {
		order = append(order, o.Torn.Record)
	}
	slices.Sort(order)
	for _, i := range order {
		r := s.Records[i]
		var err error
		switch {
		case o.Torn != nil && o.Torn.Record == i:
			err = applyTorn(img, s, o, r)
		case o.Partial != nil && o.Partial.Record == i:
			r.Len = o.Partial.Bytes
			err = applyOne(img, s, r)
		default:
			err = applyOne(img, s, r)
		}
		if err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	if p := o.Paired; p != nil {
		if err := garbage(img, o.Cut.Seed, *p); err != nil {
			return err
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

// applyTorn writes the pages of the torn write before its torn page, then the torn page.
func applyTorn(img Image, s *Stream, o Outcome, r Record) error {
	t := o.Torn
	if t.Page.Off > r.Off {
		part := r
		part.Len = t.Page.Off - r.Off
		if err := applyOne(img, s, part); err != nil {
			return fmt.Errorf("landed pages: %w", err)
		}
	}
	switch t.Mode {
	case "new":
		// The page as the card meant to program it: its old content with the written part
		// replaced (a read-modify-write of a partial page).
		s0, e0 := max(r.Off, t.Page.Off), min(r.Off+r.Len, t.Page.Off+t.Page.Len)
		part := Record{Op: flash.OpWrite, Off: s0, Len: e0 - s0, Data: r.Data + (s0 - r.Off)}
		if err := applyOne(img, s, part); err != nil {
			return fmt.Errorf("torn page: %w", err)
		}
	case "garbage":
		return garbage(img, o.Cut.Seed, t.Page)
	}
	return nil
}

// garbage fills a page with what a program cut short leaves: bits neither old nor new, seeded.
func garbage(img Image, seed uint64, page flash.Span) error {
	g := make([]byte, page.Len)
	rng := rand.New(rand.NewPCG(seed, page.Off))
	for i := range g {
		g[i] = byte(rng.Uint32())
	}
	_, err := img.WriteAt(g, int64(page.Off))
	return err
}
