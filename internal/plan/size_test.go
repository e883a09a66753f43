package plan

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
	}{
		{"4096", 4096},
		{"0", 0},
		{"64k", 64 << 10},
		{"64K", 64 << 10},
		{"64KiB", 64 << 10},
		{"512M", 512 << 20},
		{"1G", 1 << 30},
		{"1GiB", 1 << 30},
		{"1gib", 1 << 30},
		{"300MB", 300_000_000},
		{"300mb", 300_000_000},
		{"2TB", 2_000_000_000_000},
		{"100B", 100},
		{"100 B", 100},
		{" 2 T ", 2 << 40},
		{"1.5 GiB", 3 << 29},
		{"1.5G", 3 << 29},
		{".5G", 1 << 29},
		{"1.25k", 1280},
		{"0.1K", 102}, // 102.4 rounded to the nearest byte
		{"0.5K", 512},
		{"1.0009765625K", 1025},
		{"15EiB", 15 << 60},
		{"18446744073709551615", math.MaxUint64},
		{"15.999999999999999999E", math.MaxUint64}, // 16 EiB - 1.15 B, rounded: the largest size
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if err != nil {
				t.Fatalf("ParseSize(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantSub string // the hint or reason the message must contain
	}{
		{"", "empty size"},
		{"   ", "empty size"},
		{"12X", `unknown unit "X"`},
		{"12X", "KiB"}, // says what is accepted
		{"-1", "negative"},
		{"-1G", "negative"},
		{"G", "does not start with a number"},
		{"+5", "does not start with a number"},
		{"1.G", "no digits after the decimal point"},
		{"1.5", "fraction of a byte"},
		{"1.5B", "fraction of a byte"},
		{"1e9", `unknown unit "e9"`},
		{"1 G B", `unknown unit "G B"`},
		{"16EiB", "too large"},
		{"18446744073709551616", "too large"},
		{"99999999999999999999999", "too large"},
		{"17179869184G", "too large"},            // exactly 2^64
		{"18014398509481983.9999K", "too large"}, // 2^64 - 1 KiB + 1024 B (rounded fraction)
		{"15.9999999999999999999E", "more than 18 decimals"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSize(tt.in)
			if err == nil {
				t.Fatalf("ParseSize(%q) = %d, want an error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("ParseSize(%q) error %q does not contain %q", tt.in, err, tt.wantSub)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0 B"},
		{100, "100 B"},
		{1023, "1023 B"},
		{1024, "1 KiB"},
		{4096, "4 KiB"},
		{1536, "1.5 KiB"},
		{64 << 20, "64 MiB"},
		{512 << 20, "512 MiB"},
		{1 << 30, "1 GiB"},
		{3 << 29, "1.5 GiB"},
		{5 << 28, "1.25 GiB"},
		{1234567, "1.18 MiB"},
		{300_000_000, "286.1 MiB"},
		{1<<40 - 1, "1 TiB"}, // 1023.999... GiB rounds up into the next unit
		{1<<20 - 1, "1 MiB"}, // likewise
		{1<<20 - 6000, "1018.14 KiB"},
		{15 << 60, "15 EiB"},
		{math.MaxUint64, "16 EiB"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSizeRoundTrip checks that FormatSize's output parses back: exactly for sizes it
// prints without rounding, to within its rounding (half a hundredth of the unit) otherwise.
func TestSizeRoundTrip(t *testing.T) {
	exact := []uint64{0, 1, 100, 1023, 1024, 1536, 4096, 64 << 10, 512 << 20, 1 << 30, 3 << 29, 5 << 28,
		300 << 20, 7 << 40, 15 << 60, 1<<60 + 1<<59}
	for _, n := range exact {
		s := FormatSize(n)
		got, err := ParseSize(s)
		if err != nil {
			t.Errorf("ParseSize(FormatSize(%d) = %q): %v", n, s, err)
			continue
		}
		if got != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d", n, s, got)
		}
	}

	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		// Spread over all magnitudes below 8 EiB (above, "16 EiB" is out of range).
		n := r.Uint64() >> r.UintN(64)
		n &= math.MaxInt64
		s := FormatSize(n)
		got, err := ParseSize(s)
		if err != nil {
			t.Fatalf("ParseSize(FormatSize(%d) = %q): %v", n, s, err)
		}
		unit := uint64(1)
		for _, u := range formatUnits {
			if strings.HasSuffix(s, " "+u.name) {
				unit = u.size
			}
		}
		diff := max(got, n) - min(got, n)
		if diff > unit/200+1 {
			t.Fatalf("ParseSize(FormatSize(%d) = %q) = %d, off by %d (more than half a hundredth of %d)",
				n, s, got, diff, unit)
		}
	}
}

func TestFormatFigure(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 115557236: "115557236", 4064.94: "4065", 12.345: "12.3", 1.5: "1.50", 0.0123: "0.0123", 0.00123: "0.00123", 0.861: "0.861", -6.9: "-6.90"} {
		if got := FormatFigure(v); got != want {
			t.Errorf("FormatFigure(%v) = %s, want %s", v, got, want)
		}
	}
}
