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
	got, err := DayLifetime(p, size, day, Before{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.3f years, want %.3f", got, want)
	if math.Abs(got-want) > 0.03*want {
		t.Errorf("DayLifetime = %.2f years, want %.2f within 3 %%", got, want)
	}
	if got, err := DayLifetime(p, size, []Request{{Op: OpRead, Off: 0, Len: 4096}}, Before{}); err != nil || !math.IsInf(got, 1) {
		t.Errorf("a day that writes nothing: %v, %v; want +Inf", got, err)
	}
}

// TestDayLifetimeFromItsPast: what the card took before the first day (a filesystem's mkfs)
// and keeps takes blocks out of the rotation the day's writes wear. The day of
// TestDayLifetime on the same card, after a past that wrote seven other AUs once: 14 of the
// 21 physical AUs rotate, each erased every 7 days instead of 10.5; the card lasts two thirds
// as long. A past the day overwrites (its own two AUs) changes nothing.
func TestDayLifetimeFromItsPast(t *testing.T) {
	p, err := Lookup("sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	p.EndOfLife.Spread = 0
	const size = 64 * MiB
	writes := func(from, aus int) []Request {
		var rs []Request
		start := uint64(p.PageMappedArea) + uint64(from)*uint64(p.AUSize)
		for off := start; off < start+uint64(aus)*uint64(p.AUSize); off += MiB {
			rs = append(rs, Request{Op: OpWrite, Off: off, Len: MiB})
		}
		return rs
	}
	day := writes(0, 2)
	tests := []struct {
		name      string
		past      []Request
		everyDays float64
	}{
		{"empty", nil, 10.5},
		{"seven other AUs kept", writes(2, 7), 7},
		{"the day's own AUs", writes(0, 2), 10.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.everyDays * float64(p.Endurance+1) / 365.25
			got, err := DayLifetime(p, size, day, Before{Past: tt.past})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%.3f years, want %.3f", got, want)
			if math.Abs(got-want) > 0.05*want {
				t.Errorf("DayLifetime = %.2f years, want %.2f within 5 %%", got, want)
			}
		})
	}
}
