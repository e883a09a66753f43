package flash

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestShippedProfilesConsistent loads every shipped profile and every profile under
// contrib/profiles: each one's power-loss model must fit the rest of it (Parse refuses one that
// does not, with the offending line).
func TestShippedProfilesConsistent(t *testing.T) {
	for _, name := range Builtins() {
		p, err := Lookup(name)
		if err != nil {
			t.Errorf("shipped profile %s: %v", name, err)
			continue
		}
		if key, err := p.CheckPowerLoss(); err != nil {
			t.Errorf("shipped profile %s: %s: %v", name, key, err)
		}
	}
	contrib, err := filepath.Glob("../../contrib/profiles/*.toml")
	if err != nil || len(contrib) == 0 {
		t.Fatalf("no contrib profiles found (%v)", err)
	}
	for _, f := range contrib {
		if _, err := Load(f); err != nil {
			t.Errorf("contrib profile: %v", err)
		}
	}
}

// TestPowerLossConsistency swaps the [power_loss] table (and cache_size) of sd-typical and
// page-mapped sd-a1-modern for contradictory ones: each must be refused, naming its key and
// line; the consistent ones must load.
func TestPowerLossConsistency(t *testing.T) {
	typical, err := BuiltinSource("sd-typical")
	if err != nil {
		t.Fatal(err)
	}
	a1, err := BuiltinSource("sd-a1-modern")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		base      []byte
		cacheSize string // replaces cache_size's value ("" keeps it)
		table     string // the new [power_loss] table's lines
		wantKey   string // "" for a consistent profile
	}{
		{"write buffer, torn and paired pages", typical, "", "write_buffer = \"32KiB\"\ntorn_page = true\npaired_page = true", ""},
		{"volatile cache without a cache", typical, "", "volatile_cache = true\ntorn_page = true", "volatile_cache"},
		{"a cache nobody says is volatile", typical, "\"64KiB\"", "torn_page = true", "cache_size"},
		{"a volatile cache of its size", typical, "\"64KiB\"", "volatile_cache = true\ncache_order = \"fifo\"", ""},
		{"a write buffer beside a flushable cache", typical, "\"64KiB\"", "volatile_cache = true\nwrite_buffer = \"32KiB\"", "write_buffer"},
		{"a buffer of part of a page", typical, "", "write_buffer = \"20KiB\"", "write_buffer"},
		{"protected, yet tearing pages", typical, "", "protected = true\ntorn_page = true", "torn_page"},
		{"protected, yet buffering", typical, "", "protected = true\nwrite_buffer = \"32KiB\"", "write_buffer"},
		{"protected with a cache", typical, "\"64KiB\"", "protected = true", ""},
		{"a paired page without a torn one", typical, "", "paired_page = true", "paired_page"},
		{"a cache order without a cache", typical, "", "cache_order = \"any\"", "cache_order"},
		{"an unknown cache order", typical, "\"64KiB\"", "volatile_cache = true\ncache_order = \"lifo\"", "cache_order"},
		{"merge loss on a page-mapped card", a1, "", "merge_loss = true", "merge_loss"},
		{"merge loss on an AU-mapped card", typical, "", "merge_loss = true", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := string(tc.base)
			src = src[:strings.Index(src, "[power_loss]")] + "[power_loss]\n" + tc.table + "\n"
			if tc.cacheSize != "" {
				lines := strings.Split(src, "\n")
				for i, l := range lines {
					if strings.HasPrefix(l, "cache_size") {
						lines[i] = "cache_size = " + tc.cacheSize
					}
				}
				src = strings.Join(lines, "\n")
			}
			_, err := Parse("test.toml", []byte(src))
			if tc.wantKey == "" {
				if err != nil {
					t.Fatalf("a consistent model refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("an inconsistent model (%s) loaded", strings.ReplaceAll(tc.table, "\n", "; "))
			}
			line := 0
			for i, l := range strings.Split(src, "\n") {
				if strings.HasPrefix(l, tc.wantKey+" ") {
					line = i + 1
					break
				}
			}
			if want := fmt.Sprintf("test.toml:%d: %s:", line, tc.wantKey); !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		})
	}
}

// TestDefaultPowerLoss: a profile without a [power_loss] table gets a model that fits it.
func TestDefaultPowerLoss(t *testing.T) {
	for _, name := range Builtins() {
		src, err := BuiltinSource(name)
		if err != nil {
			t.Fatal(err)
		}
		s := string(src)
		i := strings.Index(s, "[power_loss]")
		if i < 0 {
			continue // built on a base profile, whose [power_loss] it keeps (sd-a2)
		}
		p, err := Parse(name+".toml", []byte(s[:i]))
		if err != nil {
			t.Fatalf("%s without [power_loss]: %v", name, err)
		}
		if p.PowerLoss.VolatileCache != (p.CacheSize > 0) || !p.PowerLoss.TornPage {
			t.Errorf("%s without [power_loss]: model %+v", name, p.PowerLoss)
		}
	}
}
