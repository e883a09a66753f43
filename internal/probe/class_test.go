package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/iodepth"
	"github.com/fsbench/fsbench/internal/simcard"
)

// TestClassVerdicts: each class at each depth from the figures, every minimum named.
func TestClassVerdicts(t *testing.T) {
	pts := func(w1, w32, r1, r32 float64) []ClassPoint {
		return []ClassPoint{{Write: true, Depth: 1, IOPS: w1}, {Write: true, Depth: 32, IOPS: w32},
			{Depth: 1, IOPS: r1}, {Depth: 32, IOPS: r32}}
	}
	for _, tc := range []struct {
		name string
		seq  float64
		pts  []ClassPoint
		want string // A1@1 A1@32 A2@1 A2@32, + pass, - fail
	}{
		{"sd-a2 like: A1 alone, A2 with its queue", 50, pts(1190, 4760, 1905, 4760), "++-+"},
		{"sd-typical like: neither", 13.6, pts(409, 409, 1429, 1429), "----"},
		{"fast random, slow sequential: nothing", 9.9, pts(3000, 3000, 5000, 5000), "----"},
		{"A1 only with a queue", 20, pts(400, 600, 1400, 1600), "-+--"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := ClassVerdicts(tc.seq, tc.pts)
			var got string
			for _, v := range vs {
				if v.Pass {
					got += "+"
				} else {
					got += "-"
				}
				if !strings.Contains(v.Why, "sequential write") || !strings.Contains(v.Why, "random read") {
					t.Errorf("%s at %d: reason %q names not every minimum", v.Class, v.Depth, v.Why)
				}
			}
			if got != tc.want {
				t.Errorf("verdicts %s, want %s (%+v)", got, tc.want, vs)
			}
		})
	}
}

// TestClassImage runs the class test on an image file (a small area, short tests): every
// figure is there, the summary prints the conditions and a verdict per class and depth, and
// class.json is written. It measures the host's disk, not a card: the figures are not checked.
func TestClassImage(t *testing.T) {
	img := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	r, err := Class(context.Background(), img, "/sys", ClassOptions{Area: 8 << 20, SeqBlock: 1 << 20, Runtime: 100 * time.Millisecond, Depths: []int{1, 8}})
	if err != nil {
		if strings.Contains(err.Error(), "invalid argument") {
			t.Skipf("the temporary directory's filesystem has no O_DIRECT: %v", err)
		}
		t.Fatal(err)
	}
	if r.SeqWriteMBps <= 0 || len(r.Random) != 4 || len(r.Verdicts) != 4 || r.Host != nil {
		t.Fatalf("result %+v: want a sequential figure, 4 random tests, 4 verdicts, no host queue for an image", r)
	}
	for _, p := range r.Random {
		if p.IOPS <= 0 || p.Result.Depth != p.Depth {
			t.Errorf("random %v at depth %d: %+v", p.Write, p.Depth, p.Result)
		}
	}
	var b bytes.Buffer
	if err := WriteClassSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8 MiB area", "A1 at queue depth 1:", "A2 at queue depth 8:", "queue gain", "image file"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	path, err := WriteClassFile(t.TempDir(), r)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Contains(b, []byte(ClassSchema)) {
		t.Errorf("class.json: %v, %.200s", err, b)
	}
}

// TestQueueReachesCard serves a card with a command queue (sd-a2) and one without
// (sd-a1-modern) under a direct-I/O loop device, and reads at queue depth 1 and 32 through the
// iodepth engine. The card server's own count says how many requests arrived together (the
// loop device and FUSE pass a queue on only with FUSE's asynchronous direct I/O, which the
// server asks for): 32 at depth 32 for both. The card with a queue overlaps them: well above
// its depth-1 rate. The card without one does one at a time: never faster than its own
// one-at-a-time rate (flash.QueuedIOPS at depth 1), however the host's path is hidden.
func TestQueueReachesCard(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: serves two cards in real time (about 30 s)")
	}
	for _, profile := range []string{"sd-a2", "sd-a1-modern"} {
		t.Run(profile, func(t *testing.T) {
			p, err := flash.Lookup(profile)
			if err != nil {
				t.Fatal(err)
			}
			alone, _, err := flash.QueuedIOPS(p, 512<<20, 64<<20, 1, 2000, 1)
			if err != nil {
				t.Fatal(err)
			}
			dev := simcardLoop(t, profile, 512<<20)
			f, err := os.OpenFile(dev, os.O_RDWR|unix.O_DIRECT, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// Reads of written flash: the area first, as the class test does.
			if _, err := iodepth.Run(t.Context(), int(f.Fd()), iodepth.Job{Write: true, Block: 1 << 20, Size: 64 << 20, Depth: 4}); err != nil {
				t.Fatal(err)
			}
			var iops [2]float64
			for i, d := range []int{1, 32} {
				r, err := iodepth.Run(t.Context(), int(f.Fd()), iodepth.Job{Random: true, Block: 4096, Size: 64 << 20, Depth: d, Runtime: 2 * time.Second, Bytes: 1 << 40})
				if err != nil {
					t.Fatal(err)
				}
				iops[i] = r.IOPS()
			}
			backing, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
			if err != nil {
				t.Fatal(err)
			}
			var st simcard.Stats
			b, err := os.ReadFile(filepath.Join(filepath.Dir(strings.TrimSpace(string(backing))), simcard.StatsFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %.0f reads/s at depth 1, %.0f at 32 (the card alone: %.0f at depth 1); at most %d requests in the server at once; load %s",
				profile, iops[0], iops[1], alone, st.MaxConcurrency, strings.TrimSpace(procLoad()))
			if st.MaxConcurrency < 16 {
				t.Errorf("at most %d requests reached the card server at once at depth 32", st.MaxConcurrency)
			}
			if p.QueueDepth > 1 && iops[1] < 1.6*iops[0] {
				t.Errorf("%s has a command queue but gives x%.2f the reads at depth 32", profile, iops[1]/iops[0])
			}
			if p.QueueDepth <= 1 && iops[1] > 1.05*alone {
				t.Errorf("%s has no command queue but read %.0f a second at depth 32, more than its %.0f one at a time", profile, iops[1], alone)
			}
		})
	}
}
