package aging

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/testkit/golden"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    string // canonical form; "" = an error
		preset  string
		errPart string
	}{
		{in: "80%", want: "updates:80%:1x"},
		{in: "updates:80%:1x", want: "updates:80%:1x"},
		{in: "geriatrix:70%:3x", want: "geriatrix:70%:3x"},
		{in: "logs:60%", want: "logs:60%:1x"},
		{in: "database:50%:0.5x", want: "database:50%:0.5x"},
		{in: "12.5%:2x", want: "updates:12.5%:2x"},
		{in: "year-of-updates", want: "updates:80%:1x", preset: "year-of-updates"},
		{in: "geriatrix", want: "geriatrix:80%:5x", preset: "geriatrix"},
		{in: "", errPart: "not a spec"},
		{in: "80", errPart: "unknown profile"},
		{in: "git:80%", errPart: "unknown profile"},
		{in: "updates", errPart: "no fullness"},
		{in: "99%", errPart: "between 1 % and 95 %"},
		{in: "80%:1", errPart: "churn"},
		{in: "80%:-1x", errPart: "churn"},
		{in: "updates:80%:1x:2", errPart: "not a spec"},
	}
	for _, tt := range tests {
		sp, err := Parse(tt.in)
		if tt.want == "" {
			if err == nil || !strings.Contains(err.Error(), tt.errPart) {
				t.Errorf("Parse(%q) = %v, %v; want an error with %q", tt.in, sp, err, tt.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if sp.String() != tt.want || sp.Preset != tt.preset {
			t.Errorf("Parse(%q) = %s (preset %q), want %s (preset %q)", tt.in, sp, sp.Preset, tt.want, tt.preset)
		}
	}
	for _, p := range Presets {
		if _, err := parse(p.Spec); err != nil || p.Means == "" {
			t.Errorf("preset %s: %v (means %q)", p.Name, err, p.Means)
		}
	}
}

// age runs spec on a fresh directory and returns the result and the listing.
func age(t *testing.T, spec string, seed, capacity uint64) (Result, []Entry) {
	t.Helper()
	sp, err := Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := Age(context.Background(), dir, sp, Options{Seed: seed, Capacity: capacity})
	if err != nil {
		t.Fatal(err)
	}
	l, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return res, l
}

func TestAgeProfiles(t *testing.T) {
	const capacity = 4 << 20
	for _, spec := range []string{"updates:80%:1x", "logs:60%:1x", "database:50%:1x", "geriatrix:80%:1x"} {
		t.Run(strings.Split(spec, ":")[0], func(t *testing.T) {
			res, l := age(t, spec, 1, capacity)
			sp, _ := Parse(spec)
			if res.EndedEarly != "" {
				t.Fatalf("ended early: %s", res.EndedEarly)
			}
			// The churn wrote its amount (the last operation, a package release, may overshoot).
			if want := uint64(sp.Churn * capacity); res.ChurnBytes < want || res.ChurnBytes > want+capacity/4 {
				t.Errorf("churn wrote %d bytes, want about %d", res.ChurnBytes, want)
			}
			// The tree holds about the fullness (files' and directories' blocks, within 10 % of
			// capacity).
			var acc uint64
			for _, e := range l {
				if strings.HasSuffix(e.Path, ".dpkg-new") {
					t.Errorf("%s left behind: dpkg renames every new file over the old one", e.Path)
				}
				if e.Dir {
					acc += blockSize // a directory takes a block
				} else {
					acc += blocks(e.Size)
				}
			}
			if lo, hi := sp.Fullness-0.1, sp.Fullness+0.1; float64(acc) < lo*capacity || float64(acc) > hi*capacity {
				t.Errorf("tree takes %d bytes in blocks, want %.0f-%.0f %% of %d", acc, 100*lo, 100*hi, capacity)
			}
			if res.Files == 0 || res.Fsyncs == 0 {
				t.Errorf("result %+v: no files or no fsyncs", res)
			}
		})
	}
}

func TestAgeUpdatesReplacesTheDpkgWay(t *testing.T) {
	res, _ := age(t, "updates:50%:2x", 3, 4<<20)
	if res.Renames == 0 || res.Deletes == 0 {
		t.Errorf("%+v: updates must rename new files over old ones and remove what a release dropped", res)
	}
}

// TestSameSeedSameTree is the determinism the comparisons stand on: the same seed gives a
// byte-identical listing (names, sizes, hashes); another seed another tree.
func TestSameSeedSameTree(t *testing.T) {
	for _, spec := range []string{"updates:80%:1x", "logs:60%:1x", "database:50%:1x", "geriatrix:80%:1x"} {
		_, a := age(t, spec, 7, 2<<20)
		_, b := age(t, spec, 7, 2<<20)
		_, c := age(t, spec, 8, 2<<20)
		if Digest(a) != Digest(b) {
			t.Errorf("%s: two agings with seed 7 differ", spec)
		}
		if Digest(a) == Digest(c) {
			t.Errorf("%s: seeds 7 and 8 gave the same tree", spec)
		}
	}
}

func TestGoldenListing(t *testing.T) {
	var out bytes.Buffer
	for _, spec := range []string{"updates:50%:0.25x", "logs:30%:0.25x", "database:30%:0.25x", "geriatrix:50%:0.25x"} {
		_, l := age(t, spec, 1, 1<<20)
		out.WriteString("# " + spec + " seed 1 capacity 1 MiB\n")
		if err := WriteListing(&out, l); err != nil {
			t.Fatal(err)
		}
	}
	golden.Check(t, "listing.golden", out.Bytes())
}

func TestAgeRefusesTinyCapacity(t *testing.T) {
	sp, _ := Parse("80%")
	if _, err := Age(context.Background(), t.TempDir(), sp, Options{Seed: 1, Capacity: 1000}); err == nil {
		t.Error("a capacity of 1000 bytes was accepted")
	}
}
