package flash

import (
	"strings"
	"testing"
)

// TestCounterfeitProfiles loads every shipped counterfeit: each derives from a genuine profile
// (its timing is that profile's), has a [fake] table of the class its name says, and is not
// listed among the genuine built-ins.
func TestCounterfeitProfiles(t *testing.T) {
	const size = 2 << 30
	names := Counterfeits()
	if len(names) < 6 {
		t.Fatalf("Counterfeits() = %v: want one profile per class, with and without a cache", names)
	}
	classes := map[string]bool{}
	cached := map[bool]bool{}
	for _, n := range names {
		p, err := Lookup(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if p.Fake == nil || p.Base == "" || p.Name != n {
			t.Fatalf("%s: fake %v, base %q, name %q", n, p.Fake, p.Base, p.Name)
		}
		base, err := Lookup(p.Base)
		if err != nil {
			t.Fatal(err)
		}
		if p.ProgramPageTime != base.ProgramPageTime || p.AUSize != base.AUSize || p.PowerLoss != base.PowerLoss {
			t.Errorf("%s: timing or power-loss model differs from its base %s", n, p.Base)
		}
		if err := p.Fake.CheckSize(size); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		c := p.Fake.Class(size)
		if !strings.Contains(n, c) {
			t.Errorf("%s: class %s is not in its name", n, c)
		}
		classes[c] = true
		cached[p.Fake.CacheSize > 0] = true
		if u := p.Fake.Usable(); u >= size {
			t.Errorf("%s: usable %d is not below the announced %d", n, u, size)
		}
		for _, b := range Builtins() {
			if b == n {
				t.Errorf("%s is listed among the genuine built-ins", n)
			}
		}
	}
	for _, c := range []string{FakeWraparound, FakeChain, FakeLimbo} {
		if !classes[c] {
			t.Errorf("no counterfeit profile of class %s", c)
		}
	}
	if !cached[true] || !cached[false] {
		t.Errorf("want counterfeits with and without a cache, have %v", cached)
	}
}

func TestFakeClassAndValidation(t *testing.T) {
	const M = 1 << 20
	for _, c := range []struct {
		f      Fake
		size   uint64
		class  string
		usable uint64
	}{
		{Fake{RealSize: 256 * M, Wrap: 256 * M}, 2048 * M, FakeWraparound, 256 * M},
		{Fake{RealSize: 512 * M, Wrap: 256 * M}, 2048 * M, FakeWraparound, 256 * M},
		{Fake{RealSize: 256 * M, Wrap: 512 * M}, 2048 * M, FakeChain, 256 * M},
		{Fake{RealSize: 100 * M}, 2048 * M, FakeLimbo, 100 * M},
		{Fake{RealSize: 100 * M, Wrap: 4096 * M}, 2048 * M, FakeLimbo, 100 * M},
		{Fake{CacheSize: M}, 2048 * M, FakeBad, 0},
	} {
		if got := c.f.Class(c.size); got != c.class {
			t.Errorf("%+v: class %s, want %s", c.f, got, c.class)
		}
		if got := c.f.Usable(); got != c.usable {
			t.Errorf("%+v: usable %d, want %d", c.f, got, c.usable)
		}
	}
	for _, c := range []struct {
		text, want string
	}{
		{"real_size = 1000", "multiple of block"},
		{"real_size = \"1MiB\"\nwrap = \"3MiB\"", "power of two"},
		{"real_size = \"1MiB\"\ncache_size = \"3KiB\"", "power-of-two number of blocks"},
		{"real_size = 0", "stores nothing"},
	} {
		src := "base = \"sd-cheap-old\"\nname = \"x\"\n[fake]\n" + c.text + "\n"
		if _, err := Parse("x.toml", []byte(src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one saying %q", c.text, err, c.want)
		}
	}
	if _, err := Parse("x.toml", []byte("base = \"no-such\"\nname = \"x\"\n")); err == nil || !strings.Contains(err.Error(), "x.toml:1: base") {
		t.Errorf("unknown base: %v", err)
	}
	if err := (Fake{RealSize: 256 << 20, Block: 512}).CheckSize(128 << 20); err == nil {
		t.Error("a counterfeit smaller than its real size was accepted")
	}
}
