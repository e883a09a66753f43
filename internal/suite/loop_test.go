package suite_test

import (
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites/bonnie"
	"github.com/fsbench/fsbench/internal/suites/randio"
	"github.com/fsbench/fsbench/internal/suites/smallfiles"
	"github.com/fsbench/fsbench/internal/testkit/enginetest"
)

// TestNewSuitesOnLoopDevice runs the suites registered from their packages (bonnie, smallfiles
// and randio) through the engine for real, one after the other on a small ext4, with the sizes
// scaled down (each suite's table) so that the run takes seconds, and checks every figure is
// there and plausible.
func TestNewSuitesOnLoopDevice(t *testing.T) {
	got := enginetest.Run(t, 320<<20, "ext4", "bonnie,smallfiles,randio", func(p *plan.SuiteParams) {
		for _, s := range []struct {
			suite, key string
			v          any
		}{{"bonnie", "file_size_bytes", 64 << 20}, {"bonnie", "files", 4096}, {"bonnie", "dirs", 4},
			{"smallfiles", "blocks", 2000}, {"smallfiles", "files", 200},
			{"randio", "file_size_bytes", 32 << 20}, {"randio", "runtime", "1s"}} {
			if err := p.Set(s.suite, s.key, s.v); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, test := range append(append(bonnie.Suite.Order(), smallfiles.Suite.Order()...), randio.Suite.Order()...) {
		m, ok := got[test]
		if !ok {
			t.Errorf("%s: no measurement", test)
			continue
		}
		if test == catalog.ModuleLoad || test == catalog.Mkfs || test == catalog.Mount || test == catalog.MountMem {
			continue
		}
		switch m.Status {
		case results.OK:
			if m.Value == nil || *m.Value <= 0 || m.Extra["cpu_pct"] <= 0 || m.Extra["latency_max_s"] <= 0 || m.Extra["latency_p50_s"] > m.Extra["latency_p99_s"] {
				t.Errorf("%s: value %v extra %v", test, m.Value, m.Extra)
			}
		case results.NA:
			if m.Value != nil || !strings.HasPrefix(m.Note, "too fast to measure: took ") {
				t.Errorf("%s: n/a with %q", test, m.Note)
			}
		default:
			t.Errorf("%s: %s %s", test, m.Status, m.Error)
		}
		if m.Extra["ops"] <= 0 {
			t.Errorf("%s: %v ops", test, m.Extra["ops"])
		}
	}
	if w := got[bonnie.Write]; w.Device == nil || w.Device.WriteBytes < 64<<20 {
		t.Errorf("bonnie_write wrote %+v to the device, want >= 64 MiB", w.Device)
	}
	if n := got[bonnie.SeqCreate].Extra["ops"]; n != 4096 || got[bonnie.SeqStat].Extra["ops"] != n || got[bonnie.SeqDelete].Extra["ops"] != n || got[bonnie.RandDelete].Extra["ops"] != n {
		t.Errorf("create/stat/delete counts differ: %v %v %v", n, got[bonnie.SeqStat].Extra["ops"], got[bonnie.SeqDelete].Extra["ops"])
	}
	if got[smallfiles.Fsync].Extra["ops"] != 200 || got[smallfiles.Dirsync].Extra["ops"] != 200 {
		t.Errorf("small files: %v, %v", got[smallfiles.Fsync].Extra, got[smallfiles.Dirsync].Extra)
	}
	if m := got[smallfiles.Dirsync]; m.Device == nil || m.Device.FlushIOs == 0 {
		t.Errorf("smallfiles_dirsync sent no flush to the device: %+v", m.Device)
	}
	if m := got[randio.RandWrite]; m.Status == results.OK && !strings.Contains(m.Note, "A1 ") {
		t.Errorf("randio_rand_write has no class verdict: %q", m.Note)
	}
	if m := got[randio.RandRead]; m.Status == results.OK && (m.Device == nil || m.Device.ReadIOs < uint64(m.Extra["ops"])*9/10) {
		t.Errorf("randio_rand_read: %v reads for %v requests: O_DIRECT not reaching the device?", m.Device, m.Extra["ops"])
	}
}
