package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites/powercut"
	"github.com/fsbench/fsbench/internal/targets"
)

// powerCutRun runs the powercut suite on a simulated card and returns its powercut figures by
// variant. The ledger goes to a directory of the test's own, so that another run's ledgers
// (another fsbench's, on a shared machine) cannot stop it.
func powerCutRun(t *testing.T, profile string, size uint64, cuts, ops int, scale float64, variants []plan.Variant) (map[string]*results.PowerCut, time.Duration) {
	t.Helper()
	needRoot(t)
	if !simcardAvailable() {
		t.Skip("the simulated card needs FUSE and a 64-bit build")
	}
	cfg := smallConfig()
	cfg.Size = size
	cfg.Suite = plan.Suites{plan.PowerCutSuite}
	cfg.Variants = variants
	if err := cfg.Params.Set(plan.PowerCutSuite, "cuts", cuts); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Params.Set(plan.PowerCutSuite, "ops", ops); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	start := time.Now()
	out, err := Run(context.Background(), Options{Options: targets.Options{Request: plan.Request{Config: cfg, Out: filepath.Join(dir, "res"), Target: plan.TargetSpec{Kind: plan.TargetSimcard, Profile: profile}, TimeScale: scale}, Self: []string{fsbenchBinary(t)}, Log: t.Logf}, LedgerDir: filepath.Join(dir, "ledger")})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	checkNoLeftovers(t, dir)
	r, err := results.Load(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*results.PowerCut{}
	for _, v := range variants {
		cell := r.Cell(v.Name, powercut.Test)
		if len(cell) != 1 || cell[0].Status != results.OK || cell[0].PowerCut == nil || cell[0].Value == nil {
			t.Fatalf("%s powercut = %+v", v.Name, cell)
		}
		got[v.Name] = cell[0].PowerCut
	}
	return got, took
}

// checkConsistent checks that the figures of one variant add up.
func checkConsistent(t *testing.T, name string, p *results.PowerCut, cuts int) {
	t.Helper()
	if p.Cuts != cuts || p.Requests == 0 || p.Acks == 0 {
		t.Errorf("%s: %d cuts of %d requests, %d acknowledgements; want %d cuts", name, p.Cuts, p.Requests, p.Acks, cuts)
	}
	if p.FsckClean.Count+p.FsckErrors+p.FsckToolFailed+p.NoChecker != p.Cuts {
		t.Errorf("%s: fsck clean %d + errors %d + failed %d != %d cuts", name, p.FsckClean.Count, p.FsckErrors, p.FsckToolFailed, p.Cuts)
	}
	if p.Safe.Count > p.MountWithoutRepair.Count || p.Safe.Count > p.FsckClean.Count {
		t.Errorf("%s: %d safe cuts, more than mounted (%d) or clean (%d)", name, p.Safe.Count, p.MountWithoutRepair.Count, p.FsckClean.Count)
	}
	for _, pr := range []results.Proportion{p.Safe, p.MountWithoutRepair, p.FsckClean, p.Unrecoverable, p.AckLossCuts, p.AtomicityCuts, p.FSBrokenCuts, p.CardDamageCuts} {
		if pr.Of != p.Cuts || pr.Low > pr.Pct || pr.Pct > pr.High || pr.Low < 0 || pr.High > 100 {
			t.Errorf("%s: proportion %+v is not a share of the cuts with its interval around it", name, pr)
		}
	}
	if through := p.CardUnharmed + p.CardDetected + p.CardRepaired + p.CardSilent; through != p.CardDamageCuts.Count || p.FSBrokenCuts.Count+p.CardDamageCuts.Count > p.Cuts {
		t.Errorf("%s: %d cuts with card damage, %d accounted for how the filesystem came through; %d broken by the filesystem", name, p.CardDamageCuts.Count, through, p.FSBrokenCuts.Count)
	}
	if p.MountWithoutRepair.Count > 0 && p.RecoveryMaxSeconds <= 0 {
		t.Errorf("%s: mounted %d times in no time", name, p.MountWithoutRepair.Count)
	}
}

// The powercut suite's controls, which show that ext4 survives for the right reason: its
// barriers.
//   - On a card with power-loss protection, which loses nothing it received, a filesystem that
//     honours fsync loses nothing acknowledged whatever the cut: ext4, ext2, and ext4 with
//     barriers off too (nothing reorders or drops what the card received).
//   - On emmc, whose 1 MiB volatile cache honours flushes, ext4 with barriers comes through
//     whole in at least 90 % of the cuts; with barrier=0 it sends no flush, its acknowledged
//     data waits in the cache, and it does not: the promises it breaks are its own. The card
//     is emmc's profile with its torn pages off, so that the cache alone makes the difference:
//     with them, 3 of 20 cuts tore a page whose neighbours held flushed data (card damage,
//     counted apart), and the share of whole cuts measured the card as much as the barriers.
func TestPowerCutSuite(t *testing.T) {
	plp, err := filepath.Abs("../../contrib/profiles/sd-industrial-plp.toml")
	if err != nil {
		t.Fatal(err)
	}
	ext4 := plan.Variant{Name: "ext4", FS: "ext4"}
	nobarrier := plan.Variant{Name: "ext4-nobarrier", FS: "ext4", MountOptions: "barrier=0"}
	ext2 := plan.Variant{Name: "ext2", FS: "ext2"}

	const plpCuts = 8
	got, _ := powerCutRun(t, plp, 64<<20, plpCuts, 120, 0.01, []plan.Variant{ext4, nobarrier, ext2})
	for name, p := range got {
		checkConsistent(t, name, p, plpCuts)
		if !p.Protected || p.VolatileCache || p.TornPage || p.MergeLoss || p.WriteBufferBytes > 0 {
			t.Errorf("%s: the power-loss-protected profile applied %+v", name, p)
		}
		if p.AckLossCuts.Count+p.AtomicityCuts.Count != 0 || p.AckedLost+p.AckedCorrupt+p.AckedUnreadable+p.TornRenames+p.Resurrected != 0 || p.CardDamageCuts.Count != 0 {
			t.Errorf("%s broke a promise on a card that loses nothing: %+v", name, p)
		}
	}
	for _, name := range []string{ext4.Name, nobarrier.Name} {
		if p := got[name]; p.Safe.Count != plpCuts {
			t.Errorf("%s on a protected card: whole in %d of %d cuts (mounted %d, clean %d)", name, p.Safe.Count, plpCuts, p.MountWithoutRepair.Count, p.FsckClean.Count)
		}
	}

	src, err := flash.BuiltinSource("emmc")
	if err != nil {
		t.Fatal(err)
	}
	cacheOnly := filepath.Join(t.TempDir(), "emmc-cache-only.toml")
	src = bytes.Replace(src, []byte(`name = "emmc"`), []byte(`name = "emmc-cache-only"`), 1)
	if err := os.WriteFile(cacheOnly, bytes.Replace(src, []byte("torn_page = true"), []byte("torn_page = false"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	const emmcCuts = 20
	got, _ = powerCutRun(t, cacheOnly, 64<<20, emmcCuts, 120, 0.01, []plan.Variant{ext4, nobarrier})
	for name, p := range got {
		checkConsistent(t, name, p, emmcCuts)
		if !p.VolatileCache || p.CacheBytes != 1<<20 || p.TornPage || p.CardDamageCuts.Count != 0 {
			t.Errorf("%s: emmc's model applied as %+v", name, p)
		}
	}
	if p := got[ext4.Name]; 10*p.Safe.Count < 9*emmcCuts || p.FSBrokenCuts.Count != 0 {
		t.Errorf("ext4 with barriers on emmc: whole in %d of %d cuts, broke promises in %d: want >= 90 %% whole and none broken", p.Safe.Count, emmcCuts, p.FSBrokenCuts.Count)
	}
	if p := got[nobarrier.Name]; 10*p.Safe.Count >= 9*emmcCuts || p.FSBrokenCuts.Count == 0 {
		t.Errorf("ext4 with barrier=0 on emmc: whole in %d of %d cuts, broke promises of its own in %d: want < 90 %% whole and some broken", p.Safe.Count, emmcCuts, p.FSBrokenCuts.Count)
	}
}

// TestBenchPowerCut is make bench-powercut: cuts per minute for ext4 on a 256 MiB card
// (sd-typical), printed, not asserted (the machine is shared).
func TestBenchPowerCut(t *testing.T) {
	if os.Getenv("FSBENCH_BENCH") == "" {
		t.Skip("benchmark: run with FSBENCH_BENCH=1 (make bench-powercut), as root")
	}
	got, took := powerCutRun(t, "sd-typical", 256<<20, 50, 300, 0.05, []plan.Variant{{Name: "ext4", FS: "ext4"}})
	p := got["ext4"]
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("bench-powercut: ext4 on a 256 MiB sd-typical card: %d cuts, %.0f cuts per minute building and checking the cuts; whole run (mkfs, workload at time scale 0.05, cuts) %.1f s = %.0f cuts per minute; load average %s",
		p.Cuts, p.CutsPerMinute, took.Seconds(), float64(p.Cuts)/took.Minutes(), load)
	t.Logf("bench-powercut: whole %.0f %%, mounted without repair %.0f %%, fsck clean %.0f %%, promises broken by ext4 in %d cuts, card damage in %d, recovery p50 %.3f s max %.3f s",
		p.Safe.Pct, p.MountWithoutRepair.Pct, p.FsckClean.Pct, p.FSBrokenCuts.Count, p.CardDamageCuts.Count, p.RecoveryP50Seconds, p.RecoveryMaxSeconds)
}
