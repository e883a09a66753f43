package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/targets"
)

func TestMakePlanAgedTwins(t *testing.T) {
	tests := []struct {
		name     string
		age      string
		suite    string
		variants string // recorded, in order
		jobs     string
		wantErr  string
	}{
		{name: "no --age, no twins", variants: "ext4 ext2 f2fs", jobs: "ext4 ext2"},
		{name: "a twin for every variant that runs", age: "80%",
			variants: "ext4 ext4@aged80 ext2 ext2@aged80 f2fs", jobs: "ext4 ext2 ext4@aged80 ext2@aged80"},
		{name: "a preset", age: "year-of-logs", variants: "ext4 ext4@aged60 ext2 ext2@aged60 f2fs", jobs: "ext4 ext2 ext4@aged60 ext2@aged60"},
		{name: "a bad spec is the user's error", age: "git:80%", wantErr: `unknown profile "git"`},
		{name: "raw NAND is not aged", age: "80%", suite: plan.FlashSuite, wantErr: "raw NAND"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := plan.Default()
			cfg.Age = tc.age
			cfg.Variants = []plan.Variant{{Name: "ext4", FS: "ext4"}, {Name: "ext2", FS: "ext2"}, {Name: "f2fs", FS: "f2fs"}}
			if tc.suite != "" {
				cfg.Suite = plan.ParseSuites(tc.suite)
			}
			tg, err := targets.New(plan.TargetSpec{}, targets.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := MakePlan(cfg, tg, workstation)
			if tc.wantErr != "" {
				var ie *plan.InputError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ie) {
					t.Fatalf("err = %v, want an input error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var vs, js []string
			for _, v := range p.Variants {
				vs = append(vs, v.Name)
				if strings.Contains(v.Name, "@") && (v.Fresh == "" || v.Age == "" || v.Status != results.OK) {
					t.Errorf("twin %+v: want its fresh variant, its spec and status OK", v)
				}
			}
			for _, j := range p.Jobs {
				js = append(js, j.Variant.Name)
				if strings.Contains(j.Variant.Name, "@") != (j.Variant.Age != "") {
					t.Errorf("job %s: age %q", j.Variant.Name, j.Variant.Age)
				}
			}
			if got := strings.Join(vs, " "); got != tc.variants {
				t.Errorf("variants %q, want %q", got, tc.variants)
			}
			if got := strings.Join(js, " "); got != tc.jobs {
				t.Errorf("jobs %q, want %q", got, tc.jobs)
			}
			if _, ok := p.Methods["aging"]; ok != (tc.age != "") {
				t.Errorf("methods.aging present %v, want %v", ok, tc.age != "")
			}
		})
	}
}

func TestDataBasis(t *testing.T) {
	cfg := plan.Default()
	if got := dataBasis(cfg, 1000<<20); got != 1000<<20 {
		t.Errorf("without --age the data is scaled to the device: %d", got)
	}
	cfg.Age = "80%"
	if got := dataBasis(cfg, 1000<<20); got >= 200<<20 || got < 100<<20 {
		t.Errorf("at 80 %% full the data must fit in the 20 %% left: basis %d MiB", got>>20)
	}
}

// TestRunAged ages ext4 for real on a loop device, twice: the aging is recorded apart from the
// tests, the two repetitions make the same tree (listing digest) and lie about the same way on
// the device (extent counts within 10 %), and the tests ran beside the aged tree.
func TestRunAged(t *testing.T) {
	needRoot(t)
	cfg := smallConfig()
	cfg.Size, cfg.Repetitions, cfg.Age = 128<<20, 2, "updates:70%:0.5x"
	cfg.DatasetSize, cfg.VideoSize = 0, 0
	cfg.Variants = []plan.Variant{{Name: "ext4", FS: "ext4"}}
	cfg.Tests = []string{"write", "read", "remove"}
	r := runAndLoad(t, cfg)
	if len(r.Aging) != 2 {
		t.Fatalf("%d aging records, want 2 (one per aged repetition)", len(r.Aging))
	}
	a, b := r.Aging[0], r.Aging[1]
	for _, x := range r.Aging {
		if x.Variant != "ext4@aged70" || x.Status != results.OK || x.EndedEarly != "" || x.Layout == nil || x.Fsck != "clean" || x.MountSeconds <= 0 || x.FreeExtents == 0 {
			t.Errorf("aging record %+v", x)
		}
		// The spec's fullness is reckoned in 4 KiB blocks; mkfs.ext4 gives a 128 MiB filesystem
		// 1 KiB blocks, so the small files take less than that: statfs shows about 60 %.
		if x.Fullness < 0.5 || x.Fullness > 0.85 {
			t.Errorf("fullness %.2f after aging to 70 %%", x.Fullness)
		}
	}
	if a.ListingSHA256 == "" || a.ListingSHA256 != b.ListingSHA256 {
		t.Errorf("the two repetitions made different trees: %s and %s", a.ListingSHA256, b.ListingSHA256)
	}
	if ea, eb := float64(a.Layout.Extents), float64(b.Layout.Extents); ea == 0 || eb/ea > 1.1 || ea/eb > 1.1 {
		t.Errorf("extent counts %v and %v differ by more than 10 %%", ea, eb)
	}
	for _, v := range []string{"ext4", "ext4@aged70"} {
		for _, test := range cfg.Tests {
			if n := len(r.Values(v, test)); n != 2 {
				t.Errorf("%s %s: %d values, want 2", v, test, n)
			}
		}
	}
	// The read test read the same bytes fresh and aged: the tests' files, not the aged tree.
	var fresh, aged uint64
	for _, m := range r.Measurements {
		if m.Test == "read" && m.Rep == 1 {
			if m.Variant == "ext4" {
				fresh = m.LogicalBytes
			} else {
				aged = m.LogicalBytes
			}
		}
	}
	if fresh == 0 || fresh != aged {
		t.Errorf("read %d bytes fresh and %d aged: both must read only the tests' files", fresh, aged)
	}
}
