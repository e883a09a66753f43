// Package cardid reads who a flash card is and how worn it says it is: the CID and CSD
// registers of an SD card or eMMC (from sysfs, serial hashed), an eMMC's EXT_CSD life-time
// estimates, an SD card's vendor health report where the vendor publishes its format (CMD56),
// and an NVMe device's SMART / Health log (SD Express cards are NVMe devices). Read takes one
// reading of a device; Compare says what moved between two readings and SameCard whether two
// readings are of one card.
//
// Each parser follows a published register layout, cited where it is defined; the fixture
// tests are built from those layouts. The encoders (encode.go) build the same registers for
// the simulated card, so that its identity and health travel the path a real card's do.
package cardid

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// Register is a 128-bit card register (CID, CSD) as the card sends it: bit 127 first, so
// byte 0 holds bits 127..120. The kernel's sysfs cid and csd files print it as 32 hex digits.
type Register [16]byte

// ParseRegister reads a register from sysfs text: 32 hex digits (the kernel prints the four
// 32-bit response words with %08x), spaces and a newline ignored.
func ParseRegister(s string) (Register, error) {
	var r Register
	t := strings.Join(strings.Fields(s), "")
	if len(t) != 32 {
		return r, fmt.Errorf("register %q: want 32 hex digits, got %d", s, len(t))
	}
	if _, err := hex.Decode(r[:], []byte(t)); err != nil {
		return r, fmt.Errorf("register %q: %w", s, err)
	}
	return r, nil
}

// String prints the register as sysfs does.
func (r Register) String() string { return hex.EncodeToString(r[:]) }

// Bits returns bits [hi:lo] of the register (hi >= lo, at most 64 bits), numbered as the SD
// and eMMC specifications number them: 127 is the most significant bit of byte 0.
func (r Register) Bits(hi, lo int) uint64 {
	var v uint64
	for i := hi; i >= lo; i-- {
		byteIdx := 15 - i/8
		bit := (r[byteIdx] >> (i % 8)) & 1
		v = v<<1 | uint64(bit)
	}
	return v
}

// setBits stores v in bits [hi:lo] (for the encoders).
func (r *Register) setBits(hi, lo int, v uint64) {
	for i := lo; i <= hi; i++ {
		byteIdx := 15 - i/8
		mask := byte(1) << (i % 8)
		if v&1 != 0 {
			r[byteIdx] |= mask
		} else {
			r[byteIdx] &^= mask
		}
		v >>= 1
	}
}

// CRC7 is the CRC the SD and eMMC registers end with (bits 7:1): polynomial x^7 + x^3 + 1 over
// bytes 0..14 (SD Physical Layer Simplified Specification 9.00, §4.5 "Cyclic Redundancy Code").
func CRC7(b []byte) byte {
	var crc byte
	for _, c := range b {
		for i := 7; i >= 0; i-- {
			bit := (c >> i) & 1
			top := (crc >> 6) & 1
			crc = (crc << 1) & 0x7f
			if bit^top != 0 {
				crc ^= 0x09
			}
		}
	}
	return crc
}

// crcOK says whether the register's CRC7 (bits 7:1) matches its content. Some hosts report
// the register without it (bits 7:0 zero), which is "unknown", not wrong.
func (r Register) crcOK() (ok, present bool) {
	if r[15] == 0 {
		return false, false
	}
	return r[15]>>1 == CRC7(r[:15]), true
}

// withCRC sets the CRC7 and the end bit.
func (r Register) withCRC() Register {
	r[15] = CRC7(r[:15])<<1 | 1
	return r
}

// printable keeps the ASCII letters and digits of a name field, for names that carry
// zeroes or control bytes (counterfeit cards' often do).
func printable(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			sb.WriteByte(c)
		}
	}
	return strings.TrimSpace(sb.String())
}
