// Package bytesize is fsbench's one grammar for byte counts: Parse reads what a user writes
// (configuration files, flags, card profiles), Format writes a size for people and Label
// writes it compactly for names (variant names, chart labels, profile files). Every output of
// Format and Label parses again with Parse.
package bytesize

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// sizeUnits maps a lower-cased unit suffix to its multiplier. The convention is GNU
// coreutils' (truncate, dd, df): a bare letter and the IEC "iB" forms are powers of 1024,
// the SI "B" forms powers of 1000. Flash vendors print card sizes in SI units while mkfs
// and the kernel count in binary ones, so both have to be writable.
var sizeUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	"p": 1 << 50, "pib": 1 << 50, "pb": 1e15,
	"e": 1 << 60, "eib": 1 << 60, "eb": 1e18,
}

// sizeHint is appended to size errors so that the user sees what is accepted.
const sizeHint = `write a number of bytes with an optional unit, e.g. "4096", "64k", "512M", "1.5GiB", "300MB" ` +
	`(K, M, G, T and KiB, MiB, ... are powers of 1024; KB, MB, ... powers of 1000)`

// maxFracDigits bounds the decimals accepted after the point: 10^18 still fits in a
// uint64, and no unit is fine enough for more digits to matter.
const maxFracDigits = 18

// Parse parses a byte count such as "4096", "64k", "512M", "1G", "1GiB", "1.5 GiB" or
// "300MB". Units are case-insensitive; K, M, G, T, P, E and KiB, MiB, ... are powers of
// 1024, KB, MB, ... powers of 1000; "B" or no unit means bytes. A fraction is allowed with
// a unit and rounded to the nearest byte, so that every Format output parses again.
func Parse(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty size; %s", sizeHint)
	}
	if t[0] == '-' {
		return 0, fmt.Errorf("bad size %q: it is negative; %s", s, sizeHint)
	}
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	intPart := t[:i]
	fracPart := ""
	if i < len(t) && t[i] == '.' {
		j := i + 1
		for j < len(t) && t[j] >= '0' && t[j] <= '9' {
			j++
		}
		fracPart = t[i+1 : j]
		if fracPart == "" {
			return 0, fmt.Errorf("bad size %q: no digits after the decimal point; %s", s, sizeHint)
		}
		i = j
	}
	if intPart == "" && fracPart == "" {
		return 0, fmt.Errorf("bad size %q: it does not start with a number; %s", s, sizeHint)
	}
	unit := strings.TrimSpace(t[i:])
	mult, ok := sizeUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("bad size %q: unknown unit %q; %s", s, unit, sizeHint)
	}

	var whole uint64
	if intPart != "" {
		n, err := strconv.ParseUint(intPart, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return 0, fmt.Errorf("bad size %q: too large (the limit is %d bytes, 16 EiB)", s, uint64(1<<64-1))
			}
			return 0, fmt.Errorf("bad size %q: %w", s, err)
		}
		hi, lo := bits.Mul64(n, mult)
		if hi != 0 {
			return 0, fmt.Errorf("bad size %q: too large (the limit is %d bytes, 16 EiB)", s, uint64(1<<64-1))
		}
		whole = lo
	}
	if fracPart != "" {
		if mult == 1 {
			return 0, fmt.Errorf("bad size %q: a fraction of a byte; write a whole number of bytes or add a unit", s)
		}
		if len(fracPart) > maxFracDigits {
			return 0, fmt.Errorf("bad size %q: more than %d decimals", s, maxFracDigits)
		}
		f, err := strconv.ParseUint(fracPart, 10, 64)
		if err != nil { // Cannot happen: at most 18 digits.
			return 0, fmt.Errorf("bad size %q: %w", s, err)
		}
		den := pow10(len(fracPart))
		// f*mult/den rounded to the nearest byte, computed in 128 bits: f < den, so the
		// high word of the product is below den and Div64 cannot overflow.
		hi, lo := bits.Mul64(f, mult)
		q, r := bits.Div64(hi, lo, den)
		if r >= den-r {
			q++
		}
		sum, carry := bits.Add64(whole, q, 0)
		if carry != 0 {
			return 0, fmt.Errorf("bad size %q: too large (the limit is %d bytes, 16 EiB)", s, uint64(1<<64-1))
		}
		whole = sum
	}
	return whole, nil
}

func pow10(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

// formatUnits are the binary units Format picks from, smallest first.
var formatUnits = []struct {
	name string
	size uint64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"PiB", 1 << 50}, {"EiB", 1 << 60},
}

// Format formats a byte count for people: "100 B", "4 KiB", "512 MiB", "1.5 GiB", "42.7 MiB".
// It uses the largest binary unit not above n and three significant digits (at most two
// decimals, trailing zeros dropped), the precision of the figures printed beside it; so it is
// exact for the round sizes one configures and within 0.5 % otherwise. Parse reads every result
// back, exactly when the output has no rounding.
func Format(n uint64) string {
	if n < formatUnits[0].size {
		return strconv.FormatUint(n, 10) + " B"
	}
	u := 0
	for u+1 < len(formatUnits) && n >= formatUnits[u+1].size {
		u++
	}
	for {
		unit := formatUnits[u].size
		decimals := 0
		switch whole := n / unit; {
		case whole < 10:
			decimals = 2
		case whole < 100:
			decimals = 1
		}
		scale := pow10(decimals)
		// n in units of 10^-decimals of the unit, rounded half up, in 128 bits (n*100
		// overflows near 2^64).
		hi, lo := bits.Mul64(n, scale)
		q, r := bits.Div64(hi, lo, unit)
		if r >= unit-r {
			q++
		}
		// 1023.7 MiB rounds to 1024: say 1 GiB instead.
		if q >= 1024*scale && u+1 < len(formatUnits) {
			u++
			continue
		}
		s := strconv.FormatUint(q/scale, 10)
		if frac := q % scale; frac != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%0*d", decimals, frac), "0")
		}
		return s + " " + formatUnits[u].name
	}
}

// Label names a size compactly, without spaces, in the largest binary unit that divides it
// exactly: "512", "4K", "8M", "252M", "1G". Variant names ("ext4-8M") and chart labels use it, so
// it must never round: two sizes never share a label, and Parse reads every label back.
func Label(n uint64) string {
	for _, u := range []struct {
		s string
		m uint64
	}{{"E", 1 << 60}, {"P", 1 << 50}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.FormatUint(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatUint(n, 10)
}
