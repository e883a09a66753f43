package plan

import (
	"fmt"
	"reflect"
)

// PowerCutSuite is the suite that cuts a simulated card's power: --cuts and --fault set keys
// of its [powercut] table, and a target whose power fsbench cannot cut refuses it.
const PowerCutSuite = "powercut"

// EnduranceSuite is the suite that runs a card to its end: --workload sets its workload key,
// and on vm:simcard the guest serves the card (so that it can renew, save and restore it).
const EnduranceSuite = "endurance"

// SetFault adds the named fault to the run's power-cut model ("" adds none): the powercut
// suite's merge_loss. It is the one place that knows the fault names, so that a flag and a
// config spell them alike.
func (c *Config) SetFault(name string) error {
	switch name {
	case "":
	case "merge-loss":
		return c.Params.Set(PowerCutSuite, "merge_loss", true)
	default:
		return fmt.Errorf("%q: the known fault is merge-loss", name)
	}
	return nil
}

// ApplySuiteDefaults swaps the default variants for the suite's own where the suite runs
// on other media: the default variants are block filesystems, and on raw NAND (FlashSuite)
// the 2010 study's ones run instead. Variants the user chose are left alone.
func (c *Config) ApplySuiteDefaults() {
	if c.FlashSuite() && reflect.DeepEqual(c.Variants, DefaultVariants()) {
		c.Variants = FlashVariants()
	}
}

// SelectVariants keeps the variants named, in the order of names (a name that matches no
// variant keeps nothing; the caller checks names against the known ones first).
func (c *Config) SelectVariants(names []string) {
	var kept []Variant
	for _, name := range names {
		for _, v := range c.Variants {
			if v.Name == name {
				kept = append(kept, v)
			}
		}
	}
	c.Variants = kept
}
