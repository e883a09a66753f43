package flash

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"

	"github.com/BurntSushi/toml"
)

// Fake is a counterfeit card's address path: the [fake] table of a profile. A counterfeit card
// announces more bytes than its flash holds, and its controller does one of three things with
// an address beyond the flash, the classes f3 (AltraMayor/f3, src/libdevs.c) names and emulates
// in its own tests:
//
//   - wraparound: the controller decodes only the low address bits, so every address lands
//     at (address mod Wrap) and Wrap is at most the real flash: writes high up overwrite data
//     low down;
//   - limbo: addresses below RealSize are real, the rest are dropped (reads return zeroes, or
//     what a small RAM cache still holds);
//   - chain: both, the address wraps at Wrap and the part of [RealSize, Wrap) is limbo.
//
// RealSize 0 with a cache is f3's "devil drive": nothing is stored beyond what the cache holds.
type Fake struct {
	// RealSize is the flash the card really has, in bytes from address 0.
	RealSize Size `toml:"real_size" json:"real_size"`
	// Wrap: the controller decodes log2(Wrap) address bits, an address lands at (address mod
	// Wrap); a power of two, 0 for none (all the announced size is decoded).
	Wrap Size `toml:"wrap" json:"wrap"`
	// CacheSize is the RAM cache that holds written blocks beyond the real flash (f3's
	// emulation: direct-mapped by block number), so that a read soon after a write returns the
	// data although the card never stored it. 0: no cache. A reset of the card (its power, or
	// the simulated card's reset file) empties it.
	CacheSize Size `toml:"cache_size" json:"cache_size"`
	// CacheStrict: a cached block is returned only at the address it was written to; without
	// it a read returns whatever the slot holds (f3's strict and loose caches).
	CacheStrict bool `toml:"cache_strict" json:"cache_strict"`
	// Block is the unit of the address mapping and of the cache (default 512 bytes: a sector).
	Block Size `toml:"block" json:"block"`
}

// Fake classes (Fake.Class), named as f3 names them.
const (
	FakeWraparound = "wraparound"
	FakeChain      = "chain"
	FakeLimbo      = "limbo"
	FakeBad        = "bad" // no real flash at all
)

// Class is the counterfeit class the fake's parameters make, for a card announcing size bytes
// (f3's dev_param_to_type).
func (f Fake) Class(size uint64) string {
	w := uint64(f.Wrap)
	switch {
	case f.RealSize == 0:
		return FakeBad
	case w != 0 && w <= uint64(f.RealSize):
		return FakeWraparound
	case w != 0 && w < size:
		return FakeChain
	}
	return FakeLimbo
}

// Usable is how many bytes from address 0 the card really stores, distinct and durable: the
// answer a capacity probe must find.
func (f Fake) Usable() uint64 {
	u := uint64(f.RealSize)
	if w := uint64(f.Wrap); w != 0 && w < u {
		u = w
	}
	return u
}

// PhysicalSize is the flash the model behind the fake holds: the real size rounded up to whole
// AUs (at least one), since the flash model works in AUs, and larger than the base card's
// page-mapped area, which the model places at the start of every card (a cache-only card
// has no real flash at all, but its base's model still needs one AU past that area).
func (f Fake) PhysicalSize(au, pageMapped uint64) uint64 {
	n := max(uint64(f.RealSize), pageMapped+1, 1)
	return (n + au - 1) / au * au
}

// validate checks the table on its own; CheckSize checks it against a card size.
func (f *Fake) validate() (string, error) {
	if f.Block == 0 {
		f.Block = 512
	}
	b := uint64(f.Block)
	if !isPow2(b) || b < 512 {
		return "block", fmt.Errorf("must be a power of two of at least 512 bytes, not %d", b)
	}
	if uint64(f.RealSize)%b != 0 {
		return "real_size", fmt.Errorf("must be a multiple of block (%d), not %d", b, f.RealSize)
	}
	if w := uint64(f.Wrap); w != 0 && (!isPow2(w) || w < b) {
		return "wrap", fmt.Errorf("must be 0 (no wrap) or a power of two of at least block (%d), not %d", b, w)
	}
	if c := uint64(f.CacheSize); c != 0 && (c%b != 0 || !isPow2(c/b)) {
		return "cache_size", fmt.Errorf("must be 0 or a power-of-two number of blocks (of %d bytes), not %d", b, c)
	}
	if f.RealSize == 0 && f.CacheSize == 0 {
		return "real_size", errors.New("0 with no cache_size stores nothing at all: give the card some real flash or a cache")
	}
	return "", nil
}

// CheckSize refuses a card size the fake does not fit: a counterfeit announces more than it
// holds.
func (f Fake) CheckSize(size uint64) error {
	if size <= uint64(f.RealSize) {
		return fmt.Errorf("a counterfeit card announces more than its real_size %s: give it a size above that, not %s", bytesize.Format(uint64(f.RealSize)), bytesize.Format(size))
	}
	if size%uint64(f.Block) != 0 {
		return fmt.Errorf("card size %d is not a multiple of the counterfeit's block %d", size, f.Block)
	}
	return nil
}

//go:embed profiles/counterfeit/*.toml
var counterfeit embed.FS

// Counterfeits lists the names of the shipped counterfeit profiles (fake-*), sorted. They are
// not among Builtins: they are genuine profiles with a [fake] table, for the capacity check,
// and would only repeat those profiles' figures elsewhere.
func Counterfeits() []string { return profileNames(counterfeit, "profiles/counterfeit") }

func counterfeitSource(name string) ([]byte, bool) {
	b, err := counterfeit.ReadFile(path.Join("profiles/counterfeit", name+".toml"))
	return b, err == nil
}

// baseOf returns the built-in profile a profile file derives from (its base key), or nil. A
// derived profile is its base with the file's keys laid over it, so that a counterfeit card
// keeps the timing of the card it imitates when that card's figures are recalibrated.
func baseOf(filename string, data []byte) (*Profile, error) {
	var hdr struct {
		Base string `toml:"base"`
	}
	if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&hdr); err != nil || hdr.Base == "" {
		return nil, nil // a syntax error is reported by the full decode, with its line
	}
	b, err := builtin.ReadFile(path.Join("profiles", hdr.Base+".toml"))
	if err != nil {
		return nil, fmt.Errorf("%s:%d: base %q: name one of the built-in profiles (%s)", filename, keyLines(data)["base"], hdr.Base, strings.Join(Builtins(), ", "))
	}
	p, err := Parse(hdr.Base+".toml", b)
	if err != nil {
		return nil, err
	}
	return &p, nil
}
