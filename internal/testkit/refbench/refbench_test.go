package refbench

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestPressureSplit: memory pressure that the bench's own cgroup accounts for is its own, not
// a disturbance; the machine's beyond it, and every other reason, are others'.
func TestPressureSplit(t *testing.T) {
	const wall = 10.0 // s: 1e7 µs, so 1e5 µs is 1 %
	for _, c := range []struct {
		name          string
		why           string
		p             Pressure
		others        string
		wantOwnMarked bool
	}{
		{"all the machine's stall is the bench's", "memory pressure 30 %", Pressure{machine: 3e6, own: 3e6}, "", true},
		{"others stalled 2 % beside it: still the bench's", "memory pressure 32 %", Pressure{machine: 3.2e6, own: 3e6}, "", true},
		{"others stalled 10 %: theirs", "memory pressure 40 %", Pressure{machine: 4e6, own: 3e6}, "memory pressure 40 %", false},
		{"no reading of the own group: others'", "memory pressure 30 %", Pressure{machine: 3e6}, "memory pressure 30 %", false},
		{"other reasons stay", "steal 9 %, memory pressure 30 %, other disks 9 MB/s", Pressure{machine: 3e6, own: 3e6},
			"steal 9 %, other disks 9 MB/s", true},
	} {
		others, mine := c.p.Split(c.why, wall)
		if others != c.others || (mine != "") != c.wantOwnMarked || (mine != "" && !strings.Contains(mine, ownMemPressure)) {
			t.Errorf("%s: split(%q) = %q, %q; want others %q, own marked %v", c.name, c.why, others, mine, c.others, c.wantOwnMarked)
		}
	}
}

// TestDisturbances: spans are counted per owner and kind of reason, with the range of the
// figures, not listed one by one.
func TestDisturbances(t *testing.T) {
	d := Disturbances{}
	d.add("fio randio_seq_write", "other processes 92 % of a CPU, other disks 45.8 MB/s")
	d.add("fio randio_seq_write", "other processes 121 % of a CPU")
	d.add("bonnie++", "")
	want := map[string]reasonCount{
		"fio randio_seq_write: other processes # % of a CPU": {n: 2, lo: 92, hi: 121},
		"fio randio_seq_write: other disks # MB/s":           {n: 1, lo: 45.8, hi: 45.8},
	}
	if len(d) != len(want) {
		t.Fatalf("%d kinds counted, want %d: %v", len(d), len(want), slices.Collect(maps.Keys(d)))
	}
	for k, w := range want {
		if c := d[k]; c == nil || *c != w {
			t.Errorf("%s: %+v, want %+v", k, c, w)
		}
	}
}
