package powercut

import (
	"math/rand/v2"
	"slices"

	"github.com/fsbench/fsbench/internal/flash"
)

// Kinds of cut point.
const (
	CutBeforeFlush = "before-flush" // the flush had not reached the card: its epoch is volatile
	CutAfterFlush  = "after-flush"  // the flush had returned: everything before it is durable
	CutRandom      = "random"       // anywhere, often in the middle of a write
)

// Cut is one power cut: the card had received Pos whole requests of the stream when its
// power went, and request Pos (if any) was arriving. Seed chooses what the power-loss model
// leaves to chance (which cached writes survive, how the page in flight tears).
type Cut struct {
	Pos  int    `json:"pos"`
	Seed uint64 `json:"seed"`
	Kind string `json:"kind"`
}

// PlanCuts chooses n cut points over a stream of records, in ascending order: a third just
// before a flush, a third just after one (both spread over all the flushes), the rest at
// seeded random points, so that both sides of every kind of durability point are tried.
func PlanCuts(recs []Record, n int, seed uint64) []Cut {
	if n <= 0 || len(recs) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x63757473))
	var flushes []int
	for i, r := range recs {
		if r.Op == flash.OpFlush {
			flushes = append(flushes, i)
		}
	}
	seen := map[int]bool{}
	var cuts []Cut
	add := func(pos int, kind string) {
		if pos < 1 || pos > len(recs) || seen[pos] {
			return
		}
		seen[pos] = true
		cuts = append(cuts, Cut{Pos: pos, Kind: kind, Seed: rng.Uint64()})
	}
	third := n / 3
	for i := 0; i < third && len(flushes) > 0; i++ {
		f := flushes[(i*len(flushes))/third]
		add(f, CutBeforeFlush)
		add(f+1, CutAfterFlush)
	}
	for tries := 0; len(cuts) < n && tries < 20*n; tries++ {
		add(1+rng.IntN(len(recs)), CutRandom)
	}
	slices.SortFunc(cuts, func(a, b Cut) int { return a.Pos - b.Pos })
	return cuts
}
