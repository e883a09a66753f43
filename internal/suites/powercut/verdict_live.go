package powercut

import (
	"fmt"
	"strings"

	"github.com/fsbench/fsbench/internal/figure"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/verdict"
)

// Live power cuts (a real board's power switched off; results.LivePowerCut): the same figures
// as the simulated card's, but whose fault a broken promise is cannot be told, since a real
// card's power-loss behaviour is unknown. The helpers below say so where the simulated card's
// table and verdict would charge the filesystem or the card.

// liveModelWords names a live campaign's card: what cut it, and that its behaviour is unknown.
func liveModelWords(p *results.PowerCut) string {
	return fmt.Sprintf("a real card, its board's power cut by %s: its power-loss behaviour is unknown", p.Live.Switch)
}

// isLive reports whether a variant's recordings are live cuts.
func isLive(recs []*results.PowerCut) bool { return len(recs) > 0 && recs[0].Live != nil }

// liveCaption says, for the table's caption, how each live campaign went: its pace, the board's
// boot, the cuts lost and those with an operation in flight.
func liveCaption(r *results.Run) string {
	var parts []string
	for _, v := range verdict.RanVariants(r) {
		recs := powerCutRecordings(r, v.Name)
		if !isLive(recs) {
			continue
		}
		var s results.PowerCut
		for _, p := range recs {
			s.AddCounts(p)
		}
		l := recs[0].Live
		parts = append(parts, fmt.Sprintf("%s %s cuts per hour (the board back in %s s, median), %d lost, %d with an operation in flight, %d acknowledgements heard",
			v.Name, figure.Format(l.CutsPerHour), figure.Format(l.BootP50Seconds), s.Live.Lost, s.Live.InFlight, s.Live.AcksHeard))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; live cuts, whose broken promises cannot be charged to the filesystem or the card (a real card's power-loss behaviour is unknown): " + strings.Join(parts, "; ")
}

// liveBrokenNote is the verdict's note on broken promises for live cuts.
func liveBrokenNote(broken []string) string {
	if len(broken) == 0 {
		return "no filesystem broke a promise in its live cuts"
	}
	return "broke promises in live cuts (whose fault cannot be told: the card's power-loss behaviour is unknown): " + strings.Join(broken, "; ")
}
