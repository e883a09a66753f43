package probe

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/testkit/emulock"
	"github.com/fsbench/fsbench/internal/testkit/slow"
)

// TestSustainedCommandSimcard runs `fsbench probe --sustained` as a user does, on every profile
// with an SLC cache served in real time behind a direct-I/O loop device (and once on a used
// card): the cache it reports must be the profile's within 10 %, the rates before and after it
// the profile's within 15 % (flash.Measure's, the model alone), and what an idle spell brings
// back what the model folds in it.
func TestSustainedCommandSimcard(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: writes 512 MiB cards in real time, about a minute and a half")
	}
	emulock.Hold(t) // real time: not beside an emulated machine
	bin := filepath.Join(t.TempDir(), "fsbench")
	build := exec.Command("go", "build", "-o", bin, "github.com/fsbench/fsbench/cmd/fsbench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fsbench: %v\n%s", err, out)
	}
	const size = 512 << 20
	idle := 400 * time.Millisecond
	cases := []struct{ profile, state string }{{"sd-a1-modern", CardFresh}, {"emmc", CardFresh}, {"emmc", CardUsed}}
	if !slow.Enabled() {
		// Each case writes a 512 MiB card in real time (about half a minute): make test
		// takes the first, make test-slow all three.
		t.Logf("reduced: 1 of %d cases (make test-slow runs emmc fresh and used too)", len(cases))
		cases = cases[:1]
	}
	for _, c := range cases {
		t.Run(c.profile+"/"+c.state, func(t *testing.T) {
			p, err := flash.Lookup(c.profile)
			if err != nil {
				t.Fatal(err)
			}
			dev := simcardLoop(t, c.profile, size)
			out := filepath.Join(t.TempDir(), "out")
			start := time.Now()
			cmd := exec.Command(bin, "probe", "--sustained", "--destroy", dev, "--card-state", c.state, "--idle", idle.String(), "-o", out, dev)
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("fsbench probe --sustained: %v\n%s", err, b)
			}
			t.Logf("%s %s: %v, load %s\n%s", c.profile, c.state, time.Since(start).Round(time.Second), loadavg(), b)
			raw, err := os.ReadFile(filepath.Join(out, SustainedJSONFile))
			if err != nil {
				t.Fatal(err)
			}
			var r SustainedResult
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(out, SustainedSVG)); err != nil {
				t.Errorf("no chart: %v", err)
			}
			if r.First.Bytes != size || len(r.First.Samples) < int(float64(r.First.Ns)/1e9*2) {
				t.Errorf("first pass: %d bytes, %d samples in %.1f s: want the whole card, at least two samples a second", r.First.Bytes, len(r.First.Samples), float64(r.First.Ns)/1e9)
			}
			fresh := flash.Measure(mustFreshModel(t, c.profile, size), 1)
			if c.state == CardFresh {
				want := float64(p.SLC.FreshBytes(size, uint64(p.PageSize)))
				if !r.First.Cliff || math.Abs(float64(r.CacheBytes)/want-1) > 0.10 {
					t.Errorf("cache %.1f MiB (cliff %v), the profile's %.1f MiB: want within 10 %%", float64(r.CacheBytes)/(1<<20), r.First.Cliff, want/(1<<20))
				}
				if d := r.First.AfterMBps/fresh.SeqWriteAfterMBps - 1; math.Abs(d) > 0.15 {
					t.Errorf("after the cache %.1f MB/s, the profile's %.1f: want within 15 %%", r.First.AfterMBps, fresh.SeqWriteAfterMBps)
				}
				if d := r.First.BurstMBps/fresh.SeqWriteMBps - 1; math.Abs(d) > 0.15 {
					t.Errorf("burst %.1f MB/s, the profile's %.1f: want within 15 %%", r.First.BurstMBps, fresh.SeqWriteMBps)
				}
			} else if r.CacheBytes == 0 || r.CacheBytes >= p.SLC.FreshBytes(size, uint64(p.PageSize))/2 {
				t.Errorf("used card: cache %.1f MiB, want one, and much smaller than a fresh card's %.1f MiB", float64(r.CacheBytes)/(1<<20), float64(p.SLC.FreshBytes(size, uint64(p.PageSize)))/(1<<20))
			}
			// What comes back: the idle spell (and the host's own pauses around it) fold at
			// least (idle − fold_after) ÷ fold_page_time pages, at most the cache a full card
			// has room for (its spare blocks' third).
			folded := float64((idle-time.Duration(p.SLC.FoldAfter))/time.Duration(p.SLC.FoldPageTime)) * float64(p.PageSize)
			if got := float64(r.RecoveredBytes); r.Recovery == nil || got < 0.85*math.Min(folded, 0.07*size/3)-float64(p.SLC.FoldUnit) {
				t.Errorf("recovered %.1f MiB after %v idle, the model folds at least %.1f MiB then", got/(1<<20), idle, folded/(1<<20))
			}
		})
	}
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return string(b)
}
