package flash

import (
	"fmt"
	"math"
)

// UsedCard returns a card like m whose every page holds data: m's card written whole, in
// order, once (its counters start again from zero). A card in service has been written all
// over (deletions reach it only as discards, which most systems never send), so every page it
// programs needs an erase, and garbage collection has only the spare area to work with.
func UsedCard(m *Model) (*Model, error) {
	n, err := m.WithEndurance(m.wear.seed, m.wear.scale)
	if err != nil {
		return nil, err
	}
	const chunk = 1 << 20
	for off := uint64(0); off < n.size; off += chunk {
		if _, err := n.Do(Request{Op: OpWrite, Off: off, Len: min(chunk, n.size-off)}); err != nil {
			return nil, fmt.Errorf("filling the card before its first day: %w", err)
		}
	}
	if _, err := n.Do(Request{Op: OpFlush}); err != nil {
		return nil, err
	}
	// The fill is the card's past, not its first day: its erases and writes are not counted.
	n.c = Counters{PageSize: n.ps, Endurance: n.c.Endurance}
	clear(n.erases)
	return n, nil
}

// DaysToFirstError runs day (the requests a device sends its card in one day) on m's card,
// day after day, until the card's first error (a request it refuses, or a worn block it keeps
// in service), and returns the days it took: whole days plus the share of the last day's
// written bytes the card took before it failed. m is changed. ok is false when the card
// outlived maxDays, or the day writes nothing.
func DaysToFirstError(m *Model, day []Request, maxDays int) (days float64, ok bool, err error) {
	var perDay uint64
	for _, r := range day {
		if r.Op == OpWrite {
			perDay += r.Len
		}
	}
	if perDay == 0 {
		return 0, false, nil
	}
	for d := 0; d < maxDays; d++ {
		var done uint64
		for i, r := range day {
			if _, err := m.Do(r); err != nil && m.Health() == Healthy {
				return 0, false, fmt.Errorf("day %d, request %d (%s at %d+%d): %w", d+1, i, r.Op, r.Off, r.Len, err)
			}
			if m.Health() != Healthy {
				return float64(d) + float64(done)/float64(perDay), true, nil
			}
			if r.Op == OpWrite {
				done += r.Len
			}
		}
	}
	return float64(maxDays), false, nil
}

// Before is the card a lifetime estimate starts from: what it took before its first day.
type Before struct {
	// Used: the card was written whole once (UsedCard), as a card filled by an earlier life.
	Used bool
	// Past holds the requests the card took after that and before its first day: the
	// filesystem's mkfs and first mount. What they leave on the card stays there (an ext4's
	// inode tables and journal, written once and rewritten in place) and takes blocks out of
	// the card's rotation, so that the day's writes wear fewer blocks; a card started empty
	// would spread them over all of its blocks and outlive the real one.
	Past []Request
}

// Lifetime estimates how many times a card of m's profile and size (m is not changed) can take
// day, the requests of one day, before its first error: it runs them day after day on a card
// until the card fails, with each block's endurance scaled down so that this takes about
// simDays days, and scales the days back up. The card starts fresh (nothing written: what a
// card is after the discard fsbench sends before mkfs, or when new), or used (written whole
// once, UsedCard: a card filled by an earlier life, without discards since), and then takes
// before.Past once (the filesystem's mkfs). So the estimate is
// the model's own wear-out: the blocks the requests actually wear (an AU card rotates its
// free allocation units, and the part of the card no request touches stays free on a fresh
// card, idle under old data on a used one), the spread of the blocks' endurance and the spare
// blocks that hide the first ones to fail. What it assumes: that the device sends its card the
// same requests every day. ok is false when the day writes nothing or the card outlives the
// bound of the search (then days is +Inf).
func Lifetime(m *Model, day []Request, before Before) (days float64, ok bool, err error) {
	const simDays, minEndurance, maxDays = 32, 32, 2000
	var writes []Request
	for _, r := range day {
		if r.Op != OpRead {
			writes = append(writes, r) // reads wear nothing: leave them out of the many days
		}
	}
	start := func(scale float64) (*Model, error) {
		n, err := m.WithEndurance(0, scale)
		if err == nil && before.Used {
			n, err = UsedCard(n)
		}
		for i, r := range before.Past {
			if err != nil {
				break
			}
			if _, err = n.Do(r); err != nil {
				err = fmt.Errorf("the card's past, request %d (%s at %d+%d): %w", i, r.Op, r.Off, r.Len, err)
			}
		}
		return n, err
	}
	// A first guess, to choose the scale: every block erased once per erase block's worth of
	// flash a day programs (its second: the first on a fresh card erases nothing), evenly.
	probe, err := start(1)
	if err != nil {
		return 0, false, err
	}
	var c0 Counters
	for d := 0; d < 2; d++ {
		c0 = probe.Counters()
		for _, r := range writes {
			if _, err := probe.Do(r); err != nil {
				return 0, false, fmt.Errorf("a day on the card: %w", err)
			}
		}
	}
	c := probe.Counters().Sub(c0)
	perDay := max(float64(c.BlocksErased), float64(c.FlashBytesWrite)/float64(m.p.EraseBlock))
	if perDay == 0 {
		return math.Inf(1), false, nil
	}
	guess := float64(c.EraseBlocks) * probe.FirstErrorCycles() / perDay
	scale := min(1, max(simDays/guess, minEndurance/float64(m.p.Endurance)))
	sim, err := start(scale)
	if err != nil {
		return 0, false, err
	}
	d, ok, err := DaysToFirstError(sim, writes, maxDays)
	if err != nil || !ok {
		return math.Inf(1), false, err
	}
	return d / scale, true, nil
}

// DayLifetime is how many years a card of profile p and size bytes, started as before says, lasts when
// the requests of day run once a day: Lifetime in years. +Inf when day writes nothing or the
// card outlives the estimate's bound.
func DayLifetime(p Profile, size uint64, day []Request, before Before) (years float64, err error) {
	m, err := NewModel(p, size)
	if err != nil {
		return 0, err
	}
	days, ok, err := Lifetime(m, day, before)
	if err != nil || !ok {
		return math.Inf(1), err
	}
	return days / 365.25, nil
}
