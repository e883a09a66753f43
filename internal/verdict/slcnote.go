package verdict

import (
	"fmt"
	"slices"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/results"
)

// slcNote adds to a write verdict that a test wrote more to the device than the card's SLC
// cache holds, where the card's cache is known (a simulated card whose profile has one): such a
// test's rate mixes the burst with the slower rate after the cache, and a filesystem that wrote
// less rode the burst longer. fsbench probe --sustained measures both rates on a real card.
func slcNote(v Verdict, r *results.Run, tests []string) Verdict {
	if !r.Target.SimulatedCard() || r.Target.Profile == "" {
		return v
	}
	p, err := flash.Lookup(r.Target.Profile)
	if err != nil || p.SLC == nil {
		return v
	}
	cache := p.SLC.FreshBytes(r.Target.SizeBytes, uint64(p.PageSize))
	var most uint64
	var test, variant string
	for _, m := range r.Measurements {
		if m.Device == nil || m.Rep < 1 || !slices.Contains(tests, m.Test) {
			continue
		}
		if m.Device.WriteBytes > most {
			most, test, variant = m.Device.WriteBytes, m.Test, m.Variant
		}
	}
	if most <= cache {
		return v
	}
	note := fmt.Sprintf("%s wrote %s to the card in one test (%s), more than the SLC cache of a fresh %s of %s (%s): its rates include the card's slower writes after the cache (fsbench probe --sustained measures both)",
		variant, bytesize.Format(most), test, r.Target.Profile, bytesize.Format(r.Target.SizeBytes), bytesize.Format(cache))
	if v.Note != "" {
		v.Note += "; " + note
	} else {
		v.Note = note
	}
	return v
}
