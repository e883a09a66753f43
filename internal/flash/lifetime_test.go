package flash

import (
	"math"
	"testing"
)

// TestDayLifetime: the lifetime is the card model run to its first error on a day's requests,
// day after day. A day that rewrites two allocation units of a fresh sd-typical card: the card
// takes each write into a fresh physical AU from the back of its free list, so all its free
// AUs share the wear: two of its 21 physical AUs a day (four erase blocks), each AU erased
// every 10.5 days once it has been used once. With no spread, every block lasts exactly the
// endurance: the first error comes about 10.5 × (endurance + 1) days in (spares or not: all
// the rotating blocks fail within a day or two).
func TestDayLifetime(t *testing.T) {
	p, err := Lookup("sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	p.EndOfLife.Spread = 0
	const size = 64 * MiB // 8 MiB page-mapped, 14 AUs
	var day []Request
	for off := uint64(p.PageMappedArea); off < uint64(p.PageMappedArea+2*p.AUSize); off += MiB {
		day = append(day, Request{Op: OpWrite, Off: off, Len: MiB})
	}
	want := 10.5 * float64(p.Endurance+1) / 365.25
	got, err := DayLifetime(p, size, day, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.3f years, want %.3f", got, want)
	if math.Abs(got-want) > 0.03*want {
		t.Errorf("DayLifetime = %.2f years, want %.2f within 3 %%", got, want)
	}
	if got, err := DayLifetime(p, size, []Request{{Op: OpRead, Off: 0, Len: 4096}}, false); err != nil || !math.IsInf(got, 1) {
		t.Errorf("a day that writes nothing: %v, %v; want +Inf", got, err)
	}
}
