package bytesize

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
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
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
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
			got, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %d, want an error", tt.in, got)
			}
			if !strings.Contains(err.Error(), tt.wantSub) {
				t.Errorf("Parse(%q) error %q does not contain %q", tt.in, err, tt.wantSub)
			}
		})
	}
}

func TestFormat(t *testing.T) {
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
		{300_000_000, "286 MiB"},
		{1<<40 - 1, "1 TiB"}, // 1023.999... GiB rounds up into the next unit
		{1<<20 - 1, "1 MiB"}, // likewise
		{1<<20 - 6000, "1018 KiB"},
		{44742738, "42.7 MiB"},
		{10481566, "10 MiB"},
		{15 << 60, "15 EiB"},
		{math.MaxUint64, "16 EiB"},
	}
	for _, tt := range tests {
		if got := Format(tt.in); got != tt.want {
			t.Errorf("Format(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestRoundTrip checks that Format's output parses back: exactly for sizes it
// prints without rounding, to within its rounding (half the last of three significant digits,
// 0.5 %) otherwise.
func TestRoundTrip(t *testing.T) {
	exact := []uint64{0, 1, 100, 1023, 1024, 1536, 4096, 64 << 10, 512 << 20, 1 << 30, 3 << 29, 5 << 28,
		300 << 20, 7 << 40, 15 << 60, 1<<60 + 1<<59}
	for _, n := range exact {
		s := Format(n)
		got, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(Format(%d) = %q): %v", n, s, err)
			continue
		}
		if got != n {
			t.Errorf("Parse(Format(%d) = %q) = %d", n, s, got)
		}
	}

	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		// Spread over all magnitudes below 8 EiB (above, "16 EiB" is out of range).
		n := r.Uint64() >> r.UintN(64)
		n &= math.MaxInt64
		s := Format(n)
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(Format(%d) = %q): %v", n, s, err)
		}
		diff := max(got, n) - min(got, n)
		if diff > n/200+1 {
			t.Fatalf("Parse(Format(%d) = %q) = %d, off by %d (more than 0.5 %%)", n, s, got, diff)
		}
	}
}

func TestLabel(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0"},
		{512, "512"},
		{1536, "1536"}, // 1.5 KiB: a label never rounds
		{4 << 10, "4K"},
		{192 << 10, "192K"},
		{8 << 20, "8M"},
		{252 << 20, "252M"},
		{1536 << 20, "1536M"},
		{1 << 30, "1G"},
		{2 << 40, "2T"},
		{1<<20 + 1, "1048577"},
	}
	for _, tt := range tests {
		got := Label(tt.in)
		if got != tt.want {
			t.Errorf("Label(%d) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := Parse(got); err != nil || back != tt.in {
			t.Errorf("Parse(Label(%d) = %q) = %d, %v", tt.in, got, back, err)
		}
	}
}
