package verdict

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/results"
)

// TestSLCNote: a write verdict says when a test wrote more than the simulated card's SLC
// cache (emmc: an eighth of a fresh card), and nothing when it wrote less or the card has none.
func TestSLCNote(t *testing.T) {
	for _, c := range []struct {
		profile string
		wrote   uint64
		says    bool
	}{{"emmc", 300 << 20, true}, {"emmc", 100 << 20, false}, {"sd-typical", 900 << 20, false}, {"sd-a1-modern", 200 << 20, true}} {
		r := &results.Run{Target: results.Target{Kind: results.KindSimcard, Profile: c.profile, SizeBytes: 1 << 30}}
		r.Measurements = []results.Measurement{
			{Variant: "ext4", Test: catalog.VideoWrite, Rep: 1, Device: &results.DeviceIO{WriteBytes: c.wrote}},
			{Variant: "ext4", Test: catalog.Read, Rep: 1, Device: &results.DeviceIO{WriteBytes: 2 << 30}},
		}
		v := slcNote(Verdict{Priority: "write-heavy data"}, r, WriteTests)
		if got := strings.Contains(v.Note, "more than the SLC cache"); got != c.says {
			t.Errorf("%s, %d MiB written: note %q, want one: %v", c.profile, c.wrote>>20, v.Note, c.says)
		}
		if c.says && !strings.Contains(v.Note, "128 MiB") {
			t.Errorf("%s: the note does not give the cache (128 MiB): %q", c.profile, v.Note)
		}
	}
}
