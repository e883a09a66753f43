package report

import (
	"fmt"
	"strings"

	"github.com/fsbench/fsbench/internal/results"
)

// cardCheckText says, for the setup line, which card the run was on (its registers, serial
// hashed), what its capacity check found, and what its own health counters moved by during
// the run; "" when the run recorded none of it.
func cardCheckText(r *results.Run) string {
	c := r.CardCheck
	if c == nil {
		return ""
	}
	var parts []string
	if c.Before != nil && c.Before.Fingerprint != "" {
		parts = append(parts, "card "+c.Before.Fingerprint)
	}
	switch {
	case c.Capacity != nil:
		s := "capacity check: " + c.Capacity.Verdict
		if c.Capacity.Verdict != "genuine" {
			s += fmt.Sprintf(" (%s)", c.Capacity.Why)
		}
		parts = append(parts, s)
	case c.CapacitySkipped != "" && r.Target.Kind == results.KindDevice:
		parts = append(parts, "capacity not checked ("+c.CapacitySkipped+")")
	}
	if d := c.HealthDelta; d != nil && len(d.Changes) > 0 {
		var ch []string
		for _, x := range d.Changes {
			ch = append(ch, fmt.Sprintf("%s %+d", x.Name, x.Delta))
		}
		s := "the card's health report moved: " + strings.Join(ch, ", ")
		if c.ModelledErases != nil {
			s += fmt.Sprintf(" (its model erased %d blocks)", *c.ModelledErases)
		}
		parts = append(parts, s)
	} else if d != nil && d.Note != "" {
		parts = append(parts, "health: "+d.Note)
	}
	return strings.Join(parts, "; ")
}
