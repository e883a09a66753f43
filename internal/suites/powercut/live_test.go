package powercut

import (
	"testing"

	"github.com/fsbench/fsbench/internal/fs"
	pcut "github.com/fsbench/fsbench/internal/powercut"
)

// TestSummarizeLive: a live campaign's cuts give the simulated card's figures (whole, mounted,
// broken promises) over the cuts that were checked; a lost cut is counted apart and in no
// share; whose fault a broken promise is stays unsaid; the pace is over the cuts' own times.
func TestSummarizeLive(t *testing.T) {
	whole := LiveCut{Mounted: true, Usable: true, Fsck: fs.FsckClean, CutSeconds: 30, BootSeconds: 10, WorkloadSeconds: 5, Acks: 40, InFlight: true}
	broken := whole
	broken.Check = pcut.Check{Files: 3, FileCounts: pcut.FileCounts{AckedLost: 1}}
	broken.InFlight = false
	repaired := whole
	repaired.Mounted, repaired.Fsck, repaired.Repair, repaired.Recycled = false, fs.FsckErrors, fs.FsckRepaired, true
	lost := LiveCut{Lost: true, CutSeconds: 30, BootSeconds: 600}
	st := SummarizeLive([]LiveCut{whole, broken, repaired, lost}, "power commands")
	l := st.Live
	switch {
	case st.Cuts != 3 || l.Lost != 1:
		t.Errorf("cuts %d, lost %d: want 3 checked and 1 lost", st.Cuts, l.Lost)
	case st.Safe.Count != 1 || st.MountWithoutRepair.Count != 2 || st.Repaired != 1:
		t.Errorf("whole %d, mounted %d, repaired %d: want 1, 2, 1", st.Safe.Count, st.MountWithoutRepair.Count, st.Repaired)
	case l.BrokenCuts != 1 || st.AckLossCuts.Count != 1 || st.AckedLost != 1:
		t.Errorf("broken cuts %d, ack-loss cuts %d, acknowledged files lost %d: want 1 each", l.BrokenCuts, st.AckLossCuts.Count, st.AckedLost)
	case st.FSBrokenCuts.Of != 0 || st.CardDamageCuts.Of != 0:
		t.Errorf("a live cut charged someone: fs %+v, card %+v", st.FSBrokenCuts, st.CardDamageCuts)
	case l.InFlight != 2 || l.Recycled != 1 || l.AcksHeard != 120 || st.Acks != 120:
		t.Errorf("in flight %d, recycled %d, acks %d/%d: want 2, 1, 120", l.InFlight, l.Recycled, l.AcksHeard, st.Acks)
	case l.CutsPerHour != 120 || l.BootP50Seconds != 10:
		// Four cuts (the lost one too: it took its time) of 30 s each: 120 an hour.
		t.Errorf("%.1f cuts per hour, boot p50 %.1f s: want 120 and 10", l.CutsPerHour, l.BootP50Seconds)
	}
}
