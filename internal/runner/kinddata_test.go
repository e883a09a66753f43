package runner

import (
	"reflect"
	"testing"

	"github.com/fsbench/fsbench/internal/nand"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/targets"
	"github.com/fsbench/fsbench/internal/targets/nandsim"
	simkind "github.com/fsbench/fsbench/internal/targets/simcard"
)

// The kinds' yields implement the interfaces the engine asks for: a method renamed on either
// side fails to build here instead of leaving the suites without the card or the chip.
var (
	_ interface {
		cardCounter
		cardProfiler
		powerCutter
	} = (*simkind.Card)(nil)
	_ rawFlash = nandsim.Chip{}
)

// What a kind yields reaches the suites; a kind that yields nothing leaves their fields unset.
func TestSetKindData(t *testing.T) {
	var env suite.Env
	setKindData(&env, &targets.Prepared{Device: "/dev/loop9"})
	if env.Card != nil || env.PowerCut != nil || env.CardProfile != "" || env.Flash != nil {
		t.Errorf("a block device without a kind's data gave the suites %+v", env)
	}
	chip := nand.DefaultChip
	setKindData(&env, &targets.Prepared{Extra: nandsim.NewChip(chip, nand.DefaultTimings)})
	if env.Flash == nil || !reflect.DeepEqual(env.Flash.Chip, chip) || env.Flash.Timings != nand.DefaultTimings {
		t.Errorf("raw NAND's chip did not reach the suites: %+v", env.Flash)
	}
	if env.Card != nil || env.PowerCut != nil {
		t.Errorf("raw NAND gave the suites a card: %+v", env)
	}
}
