package runner

import (
	"strings"

	"github.com/fsbench/fsbench/internal/plan"
)

// applyCardState records the card state a run starts each repetition from (--card-state):
// fresh, the default, discards the whole device; used fills it and keeps every discard away
// from it before mkfs (suite's fillDevice), so that the card's FTL starts full, as on a card
// that has been in use. A used card is a block device's state: the raw-flash suite has none.
func applyCardState(cfg plan.Config, p *Plan) error {
	switch cfg.CardState {
	case "", plan.CardFresh:
		return nil
	case plan.CardUsed:
	default:
		return plan.Refusef("--card-state %q: want one of %s", cfg.CardState, strings.Join(plan.CardStates, ", "))
	}
	if cfg.Suite.Has(plan.FlashSuite) {
		return plan.Refusef("--card-state used prepares a block device; the %s suite runs on raw NAND, which fsbench erases before each repetition", plan.FlashSuite)
	}
	p.Methods["freshness"] = "card state used (--card-state used): before each repetition's mkfs the whole device is written once, sequentially, with incompressible data (1 MiB O_DIRECT writes, then fsync; not timed, its time is in the log), and nothing is discarded: mkfs is told not to discard (mke2fs -E nodiscard, mkfs.xfs/btrfs/nilfs2 -K, mkfs.f2fs -t 0), so the card's FTL holds every block as valid data, as on a card in use, and every variant starts from that same state; a fresh card is discarded instead"
	return nil
}
