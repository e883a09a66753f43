package runner

import (
	"github.com/fsbench/fsbench/internal/endurance"
	"github.com/fsbench/fsbench/internal/nand"
	"github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/simcard"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/targets"
)

// What only some kinds' devices yield reaches the engine through the interfaces below, which
// the value a kind puts in targets.Prepared.Extra implements (targets/simcard.Card,
// targets/nandsim.Chip): the engine asks for what it consumes and hands it on to the suites
// (suite.Env), and package targets, the contract, knows nothing of cards and chips
// (TestTargetsImportNoKindDomain). A kind that yields none of it implements none.

// cardCounter is a simulated card whose counters can be read: the run records its wear, the
// suites the card's work per test, the card check the blocks erased during the run.
type cardCounter interface {
	// CardStats reads the card's counters and its server's overhead.
	CardStats() (simcard.Stats, error)
}

// cardProfiler is a card of a known profile, which the run's block traces are replayed
// through too.
type cardProfiler interface {
	// CardProfile is the profile as the target names it (a built-in name or a profile file).
	CardProfile() string
}

// powerCutter is a device whose power the powercut suite can cut.
type powerCutter interface {
	// PowerCutCard records the device's request stream and builds the device after a cut.
	PowerCutCard() powercut.Card
}

// enduranceCard is a simulated card whose wear the endurance suite drives: a fresh card for
// every variant, and its state saved and restored for a resumed run.
type enduranceCard interface {
	EnduranceCard() endurance.Card
}

// rawFlash is a simulated raw NAND chip, which each repetition loads afresh, in place of a
// block device.
type rawFlash interface {
	// FlashChip is the chip and the delays it simulates.
	FlashChip() (nand.Chip, nand.Timings)
}

// cardStats is prep's card counters, or nil when its kind has none.
func cardStats(prep *targets.Prepared) func() (simcard.Stats, error) {
	if c, ok := prep.Extra.(cardCounter); ok {
		return c.CardStats
	}
	return nil
}

// setKindData hands the suites what only prep's kind yields; the fields of a kind that
// yields nothing of it stay unset.
func setKindData(env *suite.Env, prep *targets.Prepared) {
	env.Card = cardStats(prep)
	if c, ok := prep.Extra.(cardProfiler); ok {
		env.CardProfile = c.CardProfile()
	}
	if c, ok := prep.Extra.(powerCutter); ok {
		env.PowerCut = c.PowerCutCard()
	}
	if c, ok := prep.Extra.(enduranceCard); ok {
		env.Endurance = c.EnduranceCard()
	}
	if f, ok := prep.Extra.(rawFlash); ok {
		chip, timings := f.FlashChip()
		env.Flash = &suite.FlashChip{Chip: chip, Timings: timings}
	}
}
