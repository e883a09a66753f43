package presets

import (
	"io/fs"
	"slices"
	"strings"
	"testing"

	fsk "github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/suites"
)

// TestEveryPresetParses parses each preset with the real registries of filesystems, tests and
// suites, as fsbench run --preset will.
func TestEveryPresetParses(t *testing.T) {
	opt := plan.Options{KnownFS: fsk.Names(), KnownTests: suites.TestNames(), KnownSuites: suites.Names(),
		CheckMkfs: fsk.CheckMkfs, CheckMount: fsk.CheckMount}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			file, data, err := Load(name)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := plan.Parse(file, data, opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Variants) < 2 && !strings.HasPrefix(name, "io-scheduler") {
				t.Errorf("%d variants: nothing to compare", len(cfg.Variants))
			}
			if !strings.HasPrefix(string(data), "# ") {
				t.Error("the file does not start with a comment saying what it compares")
			}
		})
	}
}

func TestCatalogMatchesFiles(t *testing.T) {
	entries, err := fs.ReadDir(files, "files")
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		onDisk = append(onDisk, strings.TrimSuffix(e.Name(), ".toml"))
	}
	if !slices.Equal(onDisk, Names()) {
		t.Errorf("files %v, catalog %v", onDisk, Names())
	}
	if _, _, err := Load("ext4-tunning"); err == nil || !strings.Contains(err.Error(), "ext4-tuning") {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestSeries(t *testing.T) {
	want := map[string]uint64{"scaling-64m": 64 << 20, "scaling-256m": 256 << 20, "scaling-1g": 1 << 30}
	got := Series("scaling")
	if !slices.Equal(got, []string{"scaling-64m", "scaling-256m", "scaling-1g"}) {
		t.Fatalf("Series(scaling) = %v", got)
	}
	for _, n := range got {
		file, data, _ := Load(n)
		cfg, err := plan.Parse(file, data, plan.Options{})
		if err != nil || cfg.Size != want[n] {
			t.Errorf("%s: size %d, %v", n, cfg.Size, err)
		}
	}
	for _, s := range []string{"none", "mq-deadline", "bfq"} {
		file, data, _ := Load("io-scheduler-" + s)
		if cfg, err := plan.Parse(file, data, plan.Options{}); err != nil || cfg.Scheduler != s {
			t.Errorf("io-scheduler-%s: scheduler %q, %v", s, cfg.Scheduler, err)
		}
	}
}
