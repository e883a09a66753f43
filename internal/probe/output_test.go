package probe

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestLineChartTicks checks the x axis of the charts: a tick per power of two from the
// smallest size to the largest, also when the largest is 2^63 or more (the loop over the
// ticks used to wrap to 0 there and never end).
func TestLineChartTicks(t *testing.T) {
	tests := []struct {
		name   string
		xs     []uint64
		ticks  int
		labels []string
	}{
		{"512 B to 4 KiB", []uint64{512, 4096}, 4, []string{">512<", ">1K<", ">4K<"}},
		{"one size", []uint64{1 << 20}, 1, []string{">1M<"}},
		{"up to 2^63", []uint64{1 << 62, 1 << 63}, 2, []string{">4E<", ">8E<"}},
		{"up to 2^64-1", []uint64{1 << 60, 1<<64 - 1}, 4, []string{">1E<", ">8E<"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := series{color: "#000"}
			for _, x := range tt.xs {
				s.xs, s.ys = append(s.xs, x), append(s.ys, 1)
			}
			var b bytes.Buffer
			done := make(chan struct{})
			go func() {
				defer close(done)
				writeLineChart(&b, "t", "y", []series{s}, 0, "")
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("writeLineChart did not return")
			}
			out := b.String()
			if n := strings.Count(out, `y="325" text-anchor="middle"`); n != tt.ticks { // the x axis labels' row
				t.Errorf("%d ticks, want %d:\n%s", n, tt.ticks, out)
			}
			for _, l := range tt.labels {
				if !strings.Contains(out, l) {
					t.Errorf("no tick %s in:\n%s", l, out)
				}
			}
		})
	}
}
