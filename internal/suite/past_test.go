package suite

import (
	"slices"
	"testing"

	"github.com/fsbench/fsbench/internal/flash"
)

// TestTraceKeepsTheDaysAsThePast: a new day of writes (Rep.Trace(true), the endurance suite's
// next traced round) makes the day before the card's past, after mkfs's, so that the next
// day's lifetime runs on the card the days before left; turning the trace off keeps both.
func TestTraceKeepsTheDaysAsThePast(t *testing.T) {
	mkfs := flash.Request{Op: flash.OpWrite, Off: 0, Len: 4096}
	day1 := []flash.Request{{Op: flash.OpWrite, Off: 1 << 20, Len: 1 << 20}, {Op: flash.OpFlush}}
	day2 := []flash.Request{{Op: flash.OpWrite, Off: 8 << 20, Len: 1 << 20}}
	r := &rep{past: []flash.Request{mkfs}}
	tests := []struct {
		name     string
		day      []flash.Request
		on       bool
		wantPast []flash.Request
		wantDay  int
	}{
		{"a new day after the first", day1, true, append([]flash.Request{mkfs}, day1...), 0},
		{"and after the second", day2, true, append(append([]flash.Request{mkfs}, day1...), day2...), 0},
		{"trace off keeps the day", day1, false, append(append([]flash.Request{mkfs}, day1...), day2...), len(day1)},
	}
	for _, tt := range tests {
		r.day = slices.Clone(tt.day)
		r.Trace(tt.on)
		if !slices.Equal(r.past, tt.wantPast) || len(r.day) != tt.wantDay || r.noTrace == tt.on {
			t.Errorf("%s: past %v, day %v, noTrace %v; want past %v, %d requests in the day", tt.name, r.past, r.day, r.noTrace, tt.wantPast, tt.wantDay)
		}
	}
}
