package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/target"
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
				cfg.Suite = tc.suite
			}
			tg, err := target.New(plan.TargetSpec{}, target.Options{})
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
