package verdict

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/fsbench/fsbench/internal/results"
)

// NoiseWords sums up the sentinel's reasons ("steal 15 %", "other processes 90 % of a CPU", ...)
// as the largest figure of each kind: "steal up to 23 %, other processes up to 90 % of a CPU".
func NoiseWords(why []string) string {
	type kind struct {
		prefix, suffix string
		max            float64
	}
	kinds := []*kind{{prefix: "steal", suffix: " %"}, {prefix: "other processes", suffix: " % of a CPU"},
		{prefix: "CPU pressure", suffix: " %"}, {prefix: "memory pressure", suffix: " %"}, {prefix: "other disks", suffix: " MB/s"}}
	for _, w := range why {
		for _, part := range strings.Split(w, ", ") {
			for _, k := range kinds {
				if rest, ok := strings.CutPrefix(part, k.prefix+" "); ok {
					if m := leadingNumber.FindString(rest); m != "" {
						if v, err := strconv.ParseFloat(m, 64); err == nil && v > k.max {
							k.max = v
						}
					}
				}
			}
		}
	}
	var out []string
	for _, k := range kinds {
		if k.max > 0 {
			out = append(out, fmt.Sprintf("%s up to %s%s", k.prefix, strconv.FormatFloat(k.max, 'f', -1, 64), k.suffix))
		}
	}
	if len(out) == 0 {
		return "other work"
	}
	return strings.Join(out, ", ")
}

var leadingNumber = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?`)

// BusyText says how busy the machine was with other work during a run's timed tests, in words
// a person acts on, or "" when the sentinel saw nothing (or was not there).
func BusyText(r *results.Run) string {
	var timed, busy int
	var why []string
	for _, m := range r.Measurements {
		if m.Noise == nil || m.Warmup {
			continue
		}
		timed++
		if m.Noise.Busy {
			busy++
			why = append(why, m.Noise.Why)
		}
	}
	if busy == 0 {
		return ""
	}
	return fmt.Sprintf("the machine was busy with other work during %.0f %% of the timed tests (%d of %d): %s. Those figures are unreliable: "+
		"their cells are marked ~, and the verdicts leave them out (rerun on a quiet machine to compare them)",
		100*float64(busy)/float64(timed), busy, timed, NoiseWords(why))
}
