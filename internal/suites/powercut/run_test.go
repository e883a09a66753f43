package powercut

import (
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/fs"
	pcut "github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/results"
)

func TestUnsyncedAt(t *testing.T) {
	man := &pcut.Manifest{Acks: []pcut.Ack{{Pos: 10, At: time.Second}, {Pos: 20, At: 3 * time.Second}}}
	tests := []struct {
		pos  uint64
		want time.Duration
	}{
		{5, 500 * time.Millisecond}, // before the first acknowledgement: from the start
		{10, 0},                     // right at an acknowledgement
		{15, time.Second},           // half-way between 1 s and 3 s
		{25, 0},                     // after the last one: the end is not timed
	}
	for _, tc := range tests {
		if got := unsyncedAt(man, tc.pos); got != tc.want {
			t.Errorf("unsyncedAt(%d) = %v, want %v", tc.pos, got, tc.want)
		}
	}
}

func TestSummarizeCuts(t *testing.T) {
	cuts := []cutResult{
		{mounted: true, usable: true, recovery: 10 * time.Millisecond, fsck: fs.FsckClean, leaked: 3, leakedOK: true},
		{mounted: true, usable: true, recovery: 30 * time.Millisecond, fsck: fs.FsckClean, check: pcut.Check{FileCounts: pcut.FileCounts{AckedCorrupt: 1}}},
		{mounted: true, usable: true, recovery: 20 * time.Millisecond, fsck: fs.FsckErrors, repair: fs.FsckRepaired},
		{mounted: false, usable: false, fsck: fs.FsckToolFailed, repair: fs.FsckUnrecoverable, check: pcut.Check{FileCounts: pcut.FileCounts{AckedLost: 5}}, unsynced: time.Second},
	}
	var st results.PowerCut
	summarizeCuts(&st, cuts, time.Minute)
	checks := []struct {
		name      string
		got, want int
	}{
		{"cuts", st.Cuts, 4}, {"safe", st.Safe.Count, 1}, {"mounted", st.MountWithoutRepair.Count, 3},
		{"fsck clean", st.FsckClean.Count, 2}, {"fsck errors", st.FsckErrors, 1}, {"tool failed", st.FsckToolFailed, 1},
		{"repaired", st.Repaired, 1}, {"unrecoverable", st.Unrecoverable.Count, 1}, {"broken-promise cuts", st.AckLossCuts.Count, 2},
		{"acked lost", st.AckedLost, 5}, {"acked corrupt", st.AckedCorrupt, 1},
		{"leaked blocks", int(st.LeakedBlocks), 3}, {"cuts reporting leaks", st.LeakedCuts, 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if st.RecoveryP50Seconds != 0.02 || st.RecoveryMaxSeconds != 0.03 || st.UnsyncedMaxSeconds != 1 || st.CutsPerMinute != 4 {
		t.Errorf("recovery %v/%v, unsynced max %v, cuts/min %v", st.RecoveryP50Seconds, st.RecoveryMaxSeconds, st.UnsyncedMaxSeconds, st.CutsPerMinute)
	}
	if p := st.Safe; p.Pct != 25 || p.Low <= 0 || p.High >= 100 {
		t.Errorf("safe proportion %+v", p)
	}
}

// TestSummarizeCutsNoChecker: a filesystem without an offline checker (nilfs2) is judged by
// its mount and the verifier: a cut that mounted and kept every promise is whole, not a
// checker failure; one that broke a promise is not.
func TestSummarizeCutsNoChecker(t *testing.T) {
	cuts := []cutResult{
		{mounted: true, usable: true, fsck: fs.FsckNone},
		{mounted: true, usable: true, fsck: fs.FsckNone, check: pcut.Check{FileCounts: pcut.FileCounts{AckedLost: 1}}},
		{mounted: false, usable: false, fsck: fs.FsckNone, repair: fs.FsckUnrecoverable},
	}
	var st results.PowerCut
	summarizeCuts(&st, cuts, time.Minute)
	if st.NoChecker != 3 || st.FsckToolFailed != 0 || st.FsckClean.Count != 0 || st.Safe.Count != 1 || st.Unrecoverable.Count != 1 {
		t.Errorf("no checker %d, tool failed %d, clean %d, whole %d, unrecoverable %d: want 3, 0, 0, 1, 1",
			st.NoChecker, st.FsckToolFailed, st.FsckClean.Count, st.Safe.Count, st.Unrecoverable.Count)
	}
}

// TestWhoseFault: a broken promise on a cut where the card destroyed nothing outside the
// filesystem's window since its last flush is the filesystem's; on a cut with card damage the
// figure is how the filesystem came through it.
func TestWhoseFault(t *testing.T) {
	damaged := pcut.Outcome{CardDamage: []flash.Span{{Off: 0, Len: 16384}}}
	tests := []struct {
		name    string
		cut     cutResult
		through string // "" : no card damage
		fsFault bool
	}{
		{"whole, no damage", cutResult{mounted: true, usable: true, fsck: fs.FsckClean}, "", false},
		{"acknowledged data lost, no damage", cutResult{mounted: true, usable: true, fsck: fs.FsckClean, check: pcut.Check{FileCounts: pcut.FileCounts{AckedLost: 1}}}, "", true},
		{"a torn rename, no damage", cutResult{mounted: true, usable: true, fsck: fs.FsckClean, check: pcut.Check{FileCounts: pcut.FileCounts{TornRenames: 1}}}, "", true},
		{"damage that hit nothing", cutResult{mounted: true, usable: true, fsck: fs.FsckClean, outcome: damaged}, throughUnharmed, false},
		{"damage the checker found and repaired", cutResult{mounted: true, usable: true, fsck: fs.FsckErrors, repair: fs.FsckRepaired, outcome: damaged}, throughRepaired, false},
		{"damage that stopped the mount, beyond repair", cutResult{fsck: fs.FsckErrors, repair: fs.FsckUnrecoverable, outcome: damaged, check: pcut.Check{FileCounts: pcut.FileCounts{AckedLost: 3}}}, throughDetected, false},
		{"damage a read refused", cutResult{mounted: true, usable: true, fsck: fs.FsckClean, outcome: damaged, check: pcut.Check{FileCounts: pcut.FileCounts{AckedUnreadable: 2}}}, throughDetected, false},
		{"damage returned as data", cutResult{mounted: true, usable: true, fsck: fs.FsckClean, outcome: damaged, check: pcut.Check{FileCounts: pcut.FileCounts{AckedCorrupt: 1, AckedUnreadable: 1}}}, throughSilent, false},
		{"damage returned as data, no checker", cutResult{mounted: true, usable: true, fsck: fs.FsckNone, outcome: damaged, check: pcut.Check{FileCounts: pcut.FileCounts{AckedCorrupt: 1}}}, throughSilent, false},
	}
	for _, tc := range tests {
		var st results.PowerCut
		summarizeCuts(&st, []cutResult{tc.cut}, time.Minute)
		got := map[string]int{throughUnharmed: st.CardUnharmed, throughDetected: st.CardDetected, throughRepaired: st.CardRepaired, throughSilent: st.CardSilent}
		for way, n := range got {
			if want := way == tc.through; (n == 1) != want {
				t.Errorf("%s: %s = %d, want %v", tc.name, way, n, want)
			}
		}
		if tc.fsFault && (st.FSAckLossCuts != min(1, tc.cut.check.AckedLoss()) || st.FSAtomicityCuts != min(1, tc.cut.check.TornRenames)) {
			t.Errorf("%s: the filesystem's cuts split as %d acknowledged loss, %d atomicity", tc.name, st.FSAckLossCuts, st.FSAtomicityCuts)
		}
		if (st.CardDamageCuts.Count == 1) != (tc.through != "") || (st.FSBrokenCuts.Count == 1) != tc.fsFault {
			t.Errorf("%s: card-damage cuts %d, filesystem's broken cuts %d", tc.name, st.CardDamageCuts.Count, st.FSBrokenCuts.Count)
		}
	}
}
