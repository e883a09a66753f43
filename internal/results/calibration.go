package results

import (
	"fmt"
	"sort"
	"strconv"
)

// cardsUsed returns the card profiles whose figures r holds (the simulated card's, those its
// traces were replayed through) with the calibration each carried: its recorded version, or
// "none recorded" for a run made before fsbench recorded calibrations (profiles before issue
// 28's calibration, under the same names).
func cardsUsed(r *Run) map[string]string {
	out := map[string]string{}
	for name, v := range r.CardCalibrations {
		out[name] = strconv.Itoa(v)
	}
	unrecorded := func(name string) {
		if _, ok := out[name]; !ok && name != "" {
			out[name] = "none recorded"
		}
	}
	if r.Target.Kind == KindSimcard {
		unrecorded(r.Target.Profile)
	}
	for _, m := range r.Measurements {
		if m.Trace != nil {
			for name := range m.Trace.Replay {
				unrecorded(name)
			}
		}
	}
	return out
}

// CalibrationMismatches lists the card profiles both runs used under the same name with
// different calibrations ("calibration 1 in B, none recorded in A"): their card figures (card
// time, wear, a simulated card's rates) were measured on different models of the card, not on
// one card before and after a change.
func CalibrationMismatches(a, b *Run, labelA, labelB string) []string {
	ca, cb := cardsUsed(a), cardsUsed(b)
	var out []string
	for name, va := range ca {
		vb, ok := cb[name]
		if !ok || va == vb {
			continue
		}
		out = append(out, fmt.Sprintf("card %s: calibration %s in %s, %s in %s: not the same card model under that name (docs/cards.md)", name, va, labelA, vb, labelB))
	}
	sort.Strings(out)
	return out
}
