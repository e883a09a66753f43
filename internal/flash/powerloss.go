package flash

import (
	"errors"
	"fmt"

	"github.com/fsbench/fsbench/internal/bytesize"
)

// Cache write-back orders (PowerLoss.CacheOrder): which of the writes a volatile cache holds
// at a cut reach flash.
const (
	// CacheOrderAny: the card writes its cache back in an order of its own (by address, by
	// plane, ...): at a cut each cached write has reached flash or not, independently (chosen by
	// the seed), so a later write can survive an earlier one. The default, and the adversarial
	// choice: JEDEC leaves the order to the vendor.
	CacheOrderAny = "any"
	// CacheOrderFIFO: the card writes its cache back oldest first: a cut loses the newest
	// cached writes, as if the power had gone a little earlier.
	CacheOrderFIFO = "fifo"
	// CacheOrderNone: none of the cached writes reaches flash: the card holds exactly what it
	// had received at its last flush (what dm-log-writes' replay to a mark gives; the
	// reference cross-check uses it).
	CacheOrderNone = "none"
)

// PowerLoss is a card's power-loss model: which of the ways a card loses data when its power
// is cut it has. Each rule is applied to the write stream the card received (see package
// powercut): a profile file sets them in a [power_loss] table, and CheckPowerLoss refuses a
// model that contradicts the rest of the profile (a volatile cache on a card with no cache).
//
// A card is one of four kinds, by where a write waits before it is programmed:
//   - protected (power-loss protection): capacitors finish everything it received;
//   - a volatile cache of cache_size bytes that the host empties with a flush (eMMC, SD 6.0
//     cards with the cache feature): loses at most cache_size of the writes after the last
//     flush, in CacheOrder;
//   - a write buffer the host cannot flush: the card completes a write once it is in the
//     buffer and Linux sends no flush to a card without a cache, so it loses at most the last
//     WriteBuffer bytes it received, flushed or not;
//   - neither: a write completes once programmed, and only what is in flight is lost.
//
// Any of the last three can tear the page being programmed (TornPage), destroy its paired
// page (PairedPage) and lose the allocation-unit merge in progress (MergeLoss).
type PowerLoss struct {
	// Protected: power-loss protection. The card loses nothing it received.
	Protected bool `toml:"protected" json:"protected,omitempty"`
	// VolatileCache: the card has a cache of the profile's cache_size that a flush (or a FUA
	// write) makes durable; at a cut the writes it still holds are lost, in CacheOrder. A
	// write older than the last cache_size bytes received has been written back already.
	VolatileCache bool `toml:"volatile_cache" json:"volatile_cache"`
	// CacheOrder is the cache's write-back order: CacheOrderAny (""), CacheOrderFIFO or
	// CacheOrderNone.
	CacheOrder string `toml:"cache_order" json:"cache_order,omitempty"`
	// WriteBuffer is the size of a buffer the card completes writes from before programming
	// them, and that no flush empties: at a cut the card loses a seeded part, up to all, of
	// the last WriteBuffer bytes it received, oldest programmed first.
	WriteBuffer Size `toml:"write_buffer" json:"write_buffer,omitempty"`
	// TornPage: the flash page being programmed at the cut holds its old content, the new
	// one or garbage (chosen by the seed), at the card's page granularity: a 4 KiB write into
	// a 16 KiB page can destroy the 12 KiB beside it that nobody wrote.
	TornPage bool `toml:"torn_page" json:"torn_page"`
	// PairedPage: MLC and TLC flash program a cell's bits in several passes, and a pass cut
	// short damages the bits programmed before: when the torn page is an upper page (one in
	// two, chosen by the seed) its lower page, the page the card programmed just before it in
	// the same erase block, is garbage too, however long ago it was flushed.
	PairedPage bool `toml:"paired_page" json:"paired_page,omitempty"`
	// MergeLoss: a cut while the card merges (garbage-collects) an allocation unit damages
	// that AU: its pages not yet copied read back erased, however long ago they were flushed.
	MergeLoss bool `toml:"merge_loss" json:"merge_loss"`
}

// DefaultPowerLoss is the model of a profile file without a [power_loss] table: no power-loss
// protection, a volatile cache if the profile declares one (cache_size), no write buffer, and
// the page being programmed torn; no paired-page or merge loss (profiles set those).
func DefaultPowerLoss(p Profile) PowerLoss {
	return PowerLoss{VolatileCache: p.CacheSize > 0, TornPage: true}
}

// Lossless reports whether the model loses nothing the card had received before a flush.
func (p PowerLoss) Lossless() bool {
	return p.Protected || (!p.TornPage && !p.MergeLoss && !p.PairedPage && p.WriteBuffer == 0)
}

// CheckPowerLoss returns the [power_loss] key (or cache_size) that contradicts the rest of the
// profile, and why: a model that loses what the card cannot hold, or holds what it says it
// loses, would charge a filesystem with a card that does not exist.
func (p Profile) CheckPowerLoss() (string, error) {
	pl := p.PowerLoss
	if pl.Protected {
		for _, c := range []struct {
			key string
			on  bool
		}{{"volatile_cache", pl.VolatileCache}, {"write_buffer", pl.WriteBuffer > 0}, {"torn_page", pl.TornPage},
			{"paired_page", pl.PairedPage}, {"merge_loss", pl.MergeLoss}} {
			if c.on {
				return c.key, errors.New("a protected card (protected = true) finishes everything it received: it loses nothing, so this must be off")
			}
		}
	}
	switch {
	case pl.VolatileCache && p.CacheSize == 0:
		return "volatile_cache", errors.New("a volatile cache needs a cache: set cache_size, or volatile_cache = false (a card whose writes complete once programmed, or from a write_buffer no flush empties)")
	case p.CacheSize > 0 && !pl.VolatileCache && !pl.Protected:
		return "cache_size", fmt.Errorf("the card has a %s cache: say what a power cut does to it, volatile_cache = true (lost unless flushed) or protected = true", bytesize.Format(uint64(p.CacheSize)))
	case pl.WriteBuffer > 0 && p.CacheSize > 0:
		return "write_buffer", errors.New("a card with a cache the host flushes (cache_size) has no write buffer beside it that flushes cannot reach: model it as the cache")
	case pl.WriteBuffer%p.PageSize != 0:
		return "write_buffer", fmt.Errorf("must be a multiple of page_size (%s), not %d", bytesize.Format(uint64(p.PageSize)), pl.WriteBuffer)
	case pl.PairedPage && !pl.TornPage:
		return "paired_page", errors.New("a paired page is damaged by the page programmed over it being cut short: set torn_page = true too")
	case pl.MergeLoss && p.FTL != FTLAU:
		return "merge_loss", fmt.Errorf("only an AU-mapped FTL (ftl = %q) merges allocation units; a page-mapped one copies before it unmaps", FTLAU)
	}
	switch pl.CacheOrder {
	case "", CacheOrderAny, CacheOrderFIFO, CacheOrderNone:
	default:
		return "cache_order", fmt.Errorf("must be %q, %q or %q, not %q", CacheOrderAny, CacheOrderFIFO, CacheOrderNone, pl.CacheOrder)
	}
	if pl.CacheOrder != "" && !pl.VolatileCache {
		return "cache_order", errors.New("the order a volatile cache is written back in: only with volatile_cache = true")
	}
	return "", nil
}
