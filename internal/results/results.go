// Package results defines fsbench's results file (results.json, a versioned schema) and its
// flat companion results.csv, writes both atomically so that an interrupted run keeps every
// cell it completed, and loads them back for reports and comparisons.
package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/stats"
)

// Schema names the format of results.json. A change that breaks readers bumps the number;
// additions of fields do not.
const Schema = "fsbench.results/v1"

// Run statuses.
const (
	RunRunning     = "running"     // the file is being written as cells complete
	RunComplete    = "complete"    // every planned cell was attempted
	RunInterrupted = "interrupted" // SIGINT/SIGTERM: cells completed so far are kept
	RunFailed      = "failed"      // the run stopped on an error outside any cell (see Error)
)

// Measurement statuses.
const (
	OK      = "ok"      // Value holds the figure
	Failed  = "failed"  // the test ran and failed; Error says why
	NotRun  = "not run" // an earlier test of the same repetition failed, or the run was interrupted
	NA      = "n/a"     // does not apply (a write test on a read-only filesystem, a built-in module)
	Skipped = "skipped" // the variant cannot run on this machine; see Variant.Reason
)

// Run is the whole content of results.json.
type Run struct {
	Schema   string          `json:"schema"`
	Tool     Tool            `json:"tool"`
	Status   string          `json:"status"`
	Error    string          `json:"error,omitempty"`
	Started  time.Time       `json:"started"`
	Finished time.Time       `json:"finished,omitzero"`
	Machine  Machine         `json:"machine"`
	Target   Target          `json:"target"`
	Device   *DeviceIdentity `json:"device,omitempty"`
	// Tools maps each external program used to the version line it printed.
	Tools map[string]string `json:"tools,omitempty"`
	// Config is the fully resolved configuration (defaults, file and flags applied).
	Config  json.RawMessage `json:"config,omitempty"`
	Dataset Dataset         `json:"dataset"`
	// Methods explains how figures whose definition is not obvious were measured.
	Methods  map[string]string `json:"methods,omitempty"`
	Variants []Variant         `json:"variants"`
	// Order is the sequence in which the repetitions ran, "variant#n" each (n 0 is a warm-up).
	Order        []string      `json:"order,omitempty"`
	Measurements []Measurement `json:"measurements"`
	// Guest says how the run was carried out inside a QEMU guest (--target vm); the guest's
	// kernel is Machine.Kernel.
	Guest *Guest `json:"guest,omitempty"`
	// Remote says which board the run was carried out on (--target ssh://...); Machine is the
	// board's.
	Remote *Remote `json:"remote,omitempty"`
	// Card is the simulated card's state at the end of the run, with its wear histogram
	// (simcard target only).
	Card *CardState `json:"card,omitempty"`
	// Aging has one entry per repetition of an aged variant (--age).
	Aging []Aging `json:"aging,omitempty"`
	// Sentinel says what the noise sentinel could see on the machine that ran the tests.
	Sentinel *Sentinel `json:"sentinel,omitempty"`
	// CardCalibrations maps each card profile the run used (the simulated card's and every
	// profile its traces were replayed through) to the version of that profile's calibration
	// against published measurements (flash.Profile.Calibration; 0: never calibrated). Runs
	// with different calibrations of a profile did not see the same card under its name:
	// compare and merge say so (CalibrationMismatches).
	CardCalibrations map[string]int `json:"card_calibrations,omitempty"`
	// CardCheck is the card's capacity check, identity and health around the run (card.go).
	CardCheck *CardCheck `json:"card_check,omitempty"`
	// Summary has one entry per cell with at least one successful repetition: the median,
	// minimum and maximum of its headline figure over the non-warm-up repetitions. It is
	// derived from Measurements each time the file is saved.
	Summary []CellSummary `json:"summary"`
}

// CellSummary is the median, minimum and maximum of one cell (variant × test).
type CellSummary struct {
	Variant string `json:"variant"`
	Test    string `json:"test"`
	Unit    string `json:"unit"`
	Stats
}

// Guest describes the QEMU guest a run happened in.
type Guest struct {
	Kernel        string  `json:"kernel"` // the kernel image booted
	KernelRelease string  `json:"kernel_release"`
	Accel         string  `json:"accel"` // tcg or kvm
	AccelNote     string  `json:"accel_note,omitempty"`
	QEMU          string  `json:"qemu,omitempty"`
	BootSeconds   float64 `json:"boot_seconds"`
	ConsoleLog    string  `json:"console_log"` // the guest's serial console, relative to results.json
	// Stalled says why the host killed a guest that did nothing (no CPU, no I/O)
	// for minutes; the kernel stacks of its tasks are in the console log. Revived counts the
	// times the guest did nothing as long and took up its work again when asked for its stacks.
	Stalled string `json:"stalled,omitempty"`
	Revived int    `json:"revived,omitempty"`
}

// Tool identifies the fsbench build that wrote the file.
type Tool struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	GoVersion string `json:"go_version"`
	// PeakRSSBytes is fsbench's own peak resident memory (getrusage RUSAGE_SELF), written at
	// the end of the run: the tool must not crowd the page cache it is measuring.
	PeakRSSBytes uint64 `json:"peak_rss_bytes,omitempty"`
}

// Machine is the host (or guest) the run happened on.
type Machine struct {
	Hostname string `json:"hostname"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
	MemBytes uint64 `json:"mem_bytes"`
	Kernel   string `json:"kernel"`
	OS       string `json:"os,omitempty"`
}

// Target says where the block device came from.
type Target struct {
	Kind       TargetKind `json:"kind"`
	Image      string     `json:"image,omitempty"`
	SizeBytes  uint64     `json:"size_bytes"`
	Device     string     `json:"device"`                // "/dev/loop3"
	LoopMethod string     `json:"loop_method,omitempty"` // LOOP_CONFIGURE or LOOP_SET_FD
	DirectIO   bool       `json:"direct_io"`             // as the kernel reports it, not as asked
	// Simulated card (Kind simcard): the flash model's profile and the factor applied to its
	// modelled waits (1 = real time; smaller runs faster and says so here, never silently).
	Profile   string  `json:"profile,omitempty"`
	TimeScale float64 `json:"time_scale,omitempty"`
	// EnduranceScale multiplies the endurance of the simulated card's blocks (0: 1, as its
	// profile says): the endurance suite's cards wear out that much sooner.
	EnduranceScale float64 `json:"endurance_scale,omitempty"`
	// CardVia says how a simulated card reached the filesystems; empty for the other kinds.
	CardVia CardVia `json:"card_via,omitempty"`
	// CardProfile is the card profile the run's card figures (flash wear, card time) are rated
	// on unless the report is asked for another: the simulated card's own profile (its name,
	// which the traces' replays are keyed by), else the default card the run replayed its traces
	// through. Files written before it was recorded get it from Kind and Profile when read.
	CardProfile string `json:"card_profile,omitempty"`
	// PathOffsetNs is how much of the loop device's and FUSE's round trip the simulated card
	// takes off each modelled wait (the median round trip, measured when the card started),
	// and PathCalibration says how it was measured. Modelled card time does not depend on it:
	// it is what a tool's own clock shows.
	PathOffsetNs    uint64 `json:"path_offset_ns,omitempty"`
	PathCalibration string `json:"path_calibration,omitempty"`
	// Scheduler is the I/O scheduler fsbench set for the run (verified by reading it back);
	// empty when the device's own was left (see device.queue.scheduler).
	Scheduler string `json:"scheduler,omitempty"`
}

// TargetKind is what the filesystems were made on. It is typed from the target that made the
// device to the report, which asks it instead of comparing strings. Where the run happened (a
// QEMU guest, a board) is Run.Guest and Run.Remote.
type TargetKind string

// The target kinds results.json records.
const (
	KindImage   TargetKind = "image"   // a loop device over a sparse image file
	KindSimcard TargetKind = "simcard" // the flash model served as a file (Target.CardVia says how it was reached)
	KindDevice  TargetKind = "device"  // a real block device (a card, a disk, the guest's /dev/mmcblk0 over an image file)
	KindNandsim TargetKind = "nandsim" // a simulated raw NAND chip
)

// CardVia is how a simulated card reached the filesystems.
type CardVia string

// The ways a simulated card is reached.
const (
	// CardOnLoop: a loop device over the card's file, on the machine that ran the run (the
	// host, or the guest for the powercut suite, which cuts the card's power there).
	CardOnLoop CardVia = "loop"
	// CardBehindGuestSD: the card's file, served on the host, was the QEMU guest's emulated SD
	// card, which the guest's fsbench used as /dev/mmcblk0 (--target vm:simcard:PROFILE).
	CardBehindGuestSD CardVia = "guest-sd"
)

// The kinds fsbench wrote before the kind was typed: English phrases for the two ways a guest
// ran on a simulated card. Reading a file maps them to KindSimcard and a CardVia.
const (
	legacyKindGuestSD = "simcard (guest /dev/mmcblk0)"
	legacyKindInGuest = "simcard (served in the guest)"
)

// SimulatedCard reports whether the filesystems were made on a simulated card, however it
// was reached.
func (t Target) SimulatedCard() bool { return t.Kind == KindSimcard }

// UnmarshalJSON reads a target, as written now or by an earlier fsbench (see upgrade).
func (t *Target) UnmarshalJSON(b []byte) error {
	type plain Target // without this method
	if err := json.Unmarshal(b, (*plain)(t)); err != nil {
		return err
	}
	t.upgrade()
	return nil
}

// upgrade fills in what files written before the kind was typed say another way: the
// guest's phrases become KindSimcard with its CardVia, and a simulated card's profile is the
// card its figures are rated on. A file written now is left as it is.
func (t *Target) upgrade() {
	switch t.Kind {
	case legacyKindGuestSD:
		t.Kind, t.CardVia = KindSimcard, CardBehindGuestSD
	case legacyKindInGuest:
		t.Kind, t.CardVia = KindSimcard, CardOnLoop
	case KindSimcard:
		if t.CardVia == "" {
			t.CardVia = CardOnLoop // the only way there was
		}
	}
	if t.CardProfile == "" && t.Kind == KindSimcard {
		t.CardProfile = t.Profile
	}
}

// Dataset describes the data written and read.
type Dataset struct {
	Kind            string  `json:"kind"` // "generated" or "directory"
	Path            string  `json:"path,omitempty"`
	Seed            uint64  `json:"seed,omitempty"`
	Files           int     `json:"files"`
	Dirs            int     `json:"dirs"`
	Symlinks        int     `json:"symlinks"`
	Bytes           uint64  `json:"bytes"`
	LargestFile     uint64  `json:"largest_file_bytes"`
	MedianFile      uint64  `json:"median_file_bytes"`
	Compressibility float64 `json:"compressibility"` // deflate-compressed ÷ original; 1 = incompressible
	SampledBytes    uint64  `json:"compressibility_sampled_bytes"`
	Copies          int     `json:"copies"` // copies written by the write test
	VideoBytes      uint64  `json:"video_bytes"`
	VideoCopies     int     `json:"video_copies"`
}

// Variant is one filesystem configuration of the matrix.
type Variant struct {
	Name         string   `json:"name"`
	FS           string   `json:"fs"`
	MkfsArgs     []string `json:"mkfs_args,omitempty"`
	MountOptions string   `json:"mount_options,omitempty"`
	ReadOnly     bool     `json:"read_only,omitempty"`
	Status       string   `json:"status"`           // OK or Skipped
	Reason       string   `json:"reason,omitempty"` // why skipped, saying what to do
	Kernel       string   `json:"kernel,omitempty"` // how the kernel provides it: built-in, module ...
	// With --until-stable: the repetitions this variant took, and the tests whose median was
	// still not known within the target when the cap was reached.
	Repetitions int      `json:"repetitions,omitempty"`
	Unstable    []string `json:"unstable,omitempty"`
	// Raw flash (suite free-electrons): the configured variant this one was expanded from
	// ("jffs2" for "jffs2-32M") and the size of the MTD partition it ran on. The 2010 study's
	// tables put one filesystem per column and one partition size per row.
	Base           string `json:"base,omitempty"`
	PartitionBytes uint64 `json:"partition_bytes,omitempty"`
	// PartitionStart is where the variant's partition started on the device, in bytes (the
	// alignment comparison); 0 when it had the whole device.
	PartitionStart uint64 `json:"partition_start_bytes,omitempty"`
	// Age is the aging spec of an aged twin (--age: "ext4@aged80" is ext4 aged before its
	// tests); Fresh names the fresh variant it is the twin of.
	Age   string `json:"age,omitempty"`
	Fresh string `json:"fresh,omitempty"`
	// Source says which run a variant's figures came from, in a results file merged from
	// several runs (fsbench merge): a host run and a guest run side by side.
	Source *Source `json:"source,omitempty"`
}

// Source is the run a merged variant came from.
type Source struct {
	Dir    string `json:"dir"`             // the results directory it was merged from
	Kernel string `json:"kernel"`          // release of the kernel that ran it (uname -r)
	Guest  string `json:"guest,omitempty"` // "qemu tcg" or "qemu kvm" when it ran in a guest
	// Label is the name the user gave that run when merging (fsbench merge --label), typically
	// the card it ran on: runs of several cards on one kernel differ in nothing else.
	Label string `json:"label,omitempty"`
	// Board is the board a remote run ran on (its hostname, with its device-tree model), and
	// Card the device's identity (an SD/eMMC card's name, manufacturer id, date and serial; a
	// disk's model; the image file of a loop device): in a farm's merge, what tells the rows of
	// two boards or cards apart.
	Board string `json:"board,omitempty"`
	Card  string `json:"card,omitempty"`
}

// Measurement is one test of one variant in one repetition.
type Measurement struct {
	Variant string `json:"variant"`
	Test    string `json:"test"`
	Rep     int    `json:"rep"` // 1-based; the warm-up repetition is 0
	Warmup  bool   `json:"warmup,omitempty"`
	Status  string `json:"status"`
	Error   string `json:"error,omitempty"`
	Note    string `json:"note,omitempty"`
	// Value is the test's headline figure in Unit, present when Status is OK.
	Value *float64 `json:"value,omitempty"`
	Unit  string   `json:"unit,omitempty"`
	// Timed tests: the span around exactly the measured work.
	WallSeconds float64   `json:"wall_s,omitempty"`
	UserSeconds float64   `json:"user_s,omitempty"`
	SysSeconds  float64   `json:"sys_s,omitempty"`
	Device      *DeviceIO `json:"device,omitempty"`
	// LogicalBytes is what the test moved through the filesystem (copied or read), so that
	// device bytes can be set against it.
	LogicalBytes uint64  `json:"logical_bytes,omitempty"`
	MBps         float64 `json:"mb_per_s,omitempty"` // LogicalBytes / 1e6 / WallSeconds
	// Extra holds secondary figures, named with their unit (e.g. "image_bytes").
	Extra map[string]float64 `json:"extra,omitempty"`
	// Flash is what the simulated card's flash did during the test (simcard target only).
	Flash *FlashIO `json:"flash,omitempty"`
	// Trace summarises the block requests the test issued to the device (from tracefs) and
	// what they would do to each card profile's flash.
	Trace *TraceInfo `json:"trace,omitempty"`
	// Noise is what else the machine did during the measured span (timed tests only).
	Noise *Noise `json:"noise,omitempty"`
	// PowerCut is what the powercut test found over its cuts.
	PowerCut *PowerCut `json:"powercut,omitempty"`
	// Endurance is what the endurance test found running a card to its end (endurance.go).
	Endurance *Endurance `json:"endurance,omitempty"`
}

// PowerCut summarises one repetition of the powercut test: the cuts made on the recorded
// request stream and what the filesystem came back as after each. One repetition is one
// recording (its own seed): the report's intervals over a variant are over its recordings.
type PowerCut struct {
	Profile string `json:"profile"`
	// The card's power-loss model as applied (the profile's, plus --fault merge-loss): see
	// flash.PowerLoss.
	Protected        bool   `json:"protected,omitempty"`
	VolatileCache    bool   `json:"volatile_cache"`
	CacheOrder       string `json:"cache_order,omitempty"`
	CacheBytes       uint64 `json:"cache_bytes,omitempty"`
	WriteBufferBytes uint64 `json:"write_buffer_bytes,omitempty"`
	TornPage         bool   `json:"torn_page"`
	PairedPage       bool   `json:"paired_page,omitempty"`
	MergeLoss        bool   `json:"merge_loss"`
	// Requests is the length of the recorded stream; StreamFull: its size limit cut it short,
	// the cuts were drawn within it, and the AcksUnrecorded acknowledgements given after it
	// ended were not checked.
	Requests       int  `json:"requests"`
	StreamFull     bool `json:"stream_full,omitempty"`
	AcksUnrecorded int  `json:"acks_unrecorded,omitempty"`
	Acks           int  `json:"acks"` // acknowledgements the workload received
	Cuts           int  `json:"cuts"`
	// Proportions over the cuts, with 95 % Wilson intervals (cuts of one recording are
	// related: the report's interval over several recordings accounts for that).
	Safe               Proportion `json:"safe"` // mounted without repair, fsck clean, no promise broken
	MountWithoutRepair Proportion `json:"mount_without_repair"`
	FsckClean          Proportion `json:"fsck_clean"`
	Unrecoverable      Proportion `json:"unrecoverable"`
	// AckLossCuts lost acknowledged data (missing, wrong, unreadable) or undid an
	// acknowledged deletion; AtomicityCuts tore an atomic replace in flight. Whoever's fault.
	AckLossCuts   Proportion `json:"ack_loss_cuts"`
	AtomicityCuts Proportion `json:"atomicity_cuts"`
	// FSBrokenCuts broke a promise (either kind) on a cut where the card destroyed nothing
	// outside what the filesystem wrote since its last flush: the filesystem's fault.
	FSBrokenCuts Proportion `json:"fs_broken_cuts"`
	// FSAckLossCuts and FSAtomicityCuts split them: acknowledged data lost (an fsync-class
	// promise), an atomic replace torn (rename's atomicity). A cut can do both.
	FSAckLossCuts   int `json:"fs_ack_loss_cuts,omitempty"`
	FSAtomicityCuts int `json:"fs_atomicity_cuts,omitempty"`
	// CardDamageCuts are the cuts where the card destroyed data outside what the filesystem
	// wrote since its last flush (flushed writes a write buffer lost, a torn page's
	// neighbours, a paired page, a merge's pages), CardDamageBytes how much over all of them,
	// and the four counts how the filesystem came through them: every promise kept and clean
	// (unharmed); the damage noticed, by a mount that failed, the checker or a read that
	// failed (detected), and repaired by the checker (repaired); or a broken promise nothing
	// noticed: wrong data without a warning (silent).
	CardDamageCuts  Proportion `json:"card_damage_cuts"`
	CardDamageBytes uint64     `json:"card_damage_bytes,omitempty"`
	CardUnharmed    int        `json:"card_unharmed"`
	CardDetected    int        `json:"card_detected"`
	CardRepaired    int        `json:"card_repaired"`
	CardSilent      int        `json:"card_silent"`
	FsckErrors      int        `json:"fsck_errors"`
	FsckToolFailed  int        `json:"fsck_tool_failed"`
	Repaired        int        `json:"repaired"`
	// FileCounts are the files the checks found damaged or lost, summed over the cuts.
	FileCounts
	RecoveryP50Seconds float64 `json:"recovery_p50_s"`
	RecoveryMaxSeconds float64 `json:"recovery_max_s"`
	UnsyncedP50Seconds float64 `json:"unsynced_lost_p50_s"` // work since the last acknowledgement, lost at the cut
	UnsyncedMaxSeconds float64 `json:"unsynced_lost_max_s"`
	CutsPerMinute      float64 `json:"cuts_per_minute"`
	// Leaked blocks: marked in use after the mount's recovery and held by nothing (e2fsck's
	// block bitmap differences; in the filesystem's blocks), summed and at most, over the
	// LeakedCuts cuts whose checker reports it (0: not reportable for this filesystem).
	LeakedBlocks    uint64   `json:"leaked_blocks,omitempty"`
	LeakedBlocksMax uint64   `json:"leaked_blocks_max,omitempty"`
	LeakedCuts      int      `json:"leaked_cuts,omitempty"`
	Problems        []string `json:"problems,omitempty"` // the first broken promises, for the report's detail

	// NoChecker counts the cuts the filesystem has no offline checker for (nilfs2): they are
	// judged by the mount and the verifier alone, and are not in FsckClean.
	NoChecker int `json:"no_checker,omitempty"`
	// Live is set for cuts of a real board's power (powercut_live.go); nil on the simulated card.
	Live *LivePowerCut `json:"live,omitempty"`
}

// AddCounts adds the counts of p, another recording of the same variant, to s: counts are
// summed, maxima kept, a full stream noted. A proportion's Count is summed alone: its Of,
// percentage and interval are the caller's to compute over the recordings. Medians (the
// recovery and unsynced P50s) do not add and are left alone.
func (s *PowerCut) AddCounts(p *PowerCut) {
	s.Cuts += p.Cuts
	s.Safe.Count += p.Safe.Count
	s.MountWithoutRepair.Count += p.MountWithoutRepair.Count
	s.FsckClean.Count += p.FsckClean.Count
	s.NoChecker += p.NoChecker
	s.Unrecoverable.Count += p.Unrecoverable.Count
	s.AckLossCuts.Count += p.AckLossCuts.Count
	s.AtomicityCuts.Count += p.AtomicityCuts.Count
	s.FSAckLossCuts += p.FSAckLossCuts
	s.FSAtomicityCuts += p.FSAtomicityCuts
	s.FileCounts.Add(p.FileCounts)
	s.CardDamageCuts.Count += p.CardDamageCuts.Count
	s.CardUnharmed += p.CardUnharmed
	s.CardDetected += p.CardDetected
	s.CardRepaired += p.CardRepaired
	s.CardSilent += p.CardSilent
	s.LeakedBlocks += p.LeakedBlocks
	s.LeakedCuts += p.LeakedCuts
	s.StreamFull = s.StreamFull || p.StreamFull
	s.AcksUnrecorded += p.AcksUnrecorded
	s.RecoveryMaxSeconds = max(s.RecoveryMaxSeconds, p.RecoveryMaxSeconds)
	s.UnsyncedMaxSeconds = max(s.UnsyncedMaxSeconds, p.UnsyncedMaxSeconds)
	s.Live = addLive(s.Live, p.Live)
}

// FileCounts are files a power cut's check found damaged or lost, summed over cuts; the
// schema's copy of powercut.FileCounts (the same fields: convert one into the other).
type FileCounts struct {
	AckedLost    int `json:"acked_lost"`    // acknowledged files missing
	AckedCorrupt int `json:"acked_corrupt"` // acknowledged files with wrong content
	// AckedUnreadable: acknowledged files whose read failed (the filesystem noticed damage).
	AckedUnreadable int `json:"acked_unreadable,omitempty"`
	TornRenames     int `json:"torn_renames"` // atomic replaces in flight left holding neither version
	Resurrected     int `json:"resurrected"`
	UnackedLost     int `json:"unacked_lost"` // expected loss: never acknowledged
	// ZeroTails: unacknowledged appends read back as zeroes after intact acknowledged bytes
	// (expected loss, counted apart).
	ZeroTails int `json:"zero_tails,omitempty"`
}

// Add adds o's counts to c: the one place that knows which counts there are, for the
// suite's sum over cuts and the report's over repetitions.
func (c *FileCounts) Add(o FileCounts) {
	c.AckedLost += o.AckedLost
	c.AckedCorrupt += o.AckedCorrupt
	c.AckedUnreadable += o.AckedUnreadable
	c.TornRenames += o.TornRenames
	c.Resurrected += o.Resurrected
	c.UnackedLost += o.UnackedLost
	c.ZeroTails += o.ZeroTails
}

// Proportion is Count of Of, in percent, with its 95 % Wilson interval.
type Proportion struct {
	Count int     `json:"count"`
	Of    int     `json:"of"`
	Pct   float64 `json:"pct"`
	Low   float64 `json:"low_pct"`
	High  float64 `json:"high_pct"`
}

// TraceInfo is the block-request trace of one measurement.
type TraceInfo struct {
	Summary TraceSummary `json:"summary"`
	// File is the trace file, relative to the results directory (--keep-traces).
	File string `json:"file,omitempty"`
	// Replay maps a card profile name to what the traced requests did to that card's flash
	// model, continuing from the earlier tests of the same repetition.
	Replay map[string]Replay `json:"replay,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// Replay is a trace replayed through one card profile.
type Replay struct {
	Flash *FlashIO `json:"flash"`
	// LifetimeYears: how long the card would last if this test ran once a day (results written
	// before day_lifetime_years; methods.lifetime gives the assumptions); 0 when the test wrote
	// nothing.
	LifetimeYears float64 `json:"lifetime_years,omitempty"`
	// DayLifetimeYears: how long the card lasts if the write tests of the repetition up to this
	// one ran once a day, one after the other as one day, to its first error.
	DayLifetimeYears float64 `json:"day_lifetime_years,omitempty"`
}

// FlashIO is the change of the simulated card's counters over a measurement.
type FlashIO struct {
	HostBytesWritten   uint64  `json:"host_bytes_written"`
	HostBytesRead      uint64  `json:"host_bytes_read"`
	HostBytesDiscarded uint64  `json:"host_bytes_discarded,omitempty"`
	Flushes            uint64  `json:"flushes,omitempty"`
	PagesProgrammed    uint64  `json:"pages_programmed"`
	PagesCopied        uint64  `json:"pages_copied"`
	FlashBytesWritten  uint64  `json:"flash_bytes_written"`
	WriteAmplification float64 `json:"write_amplification"` // flash bytes programmed ÷ host bytes written
	BlocksErased       uint64  `json:"blocks_erased"`
	AUMerges           uint64  `json:"au_merges,omitempty"`
	GCCollections      uint64  `json:"gc_collections,omitempty"`
	BusyNs             uint64  `json:"busy_ns"` // modelled device time
	// Server is what the simulated card's server itself spent over the measurement (live
	// simulated cards only; trace replays have no server).
	Server *CardServer `json:"server,omitempty"`
}

// CardServer is the simulated card's own overhead over one measurement: how long the server
// took per request before the modelled card time began to count, and how many replies left
// after their modelled completion because of it (or because the host was busy). A late reply
// makes the wall-clock figure slower than the card would be; the card time does not change.
type CardServer struct {
	Requests     uint64 `json:"requests"`
	P50Ns        uint64 `json:"p50_ns"`
	P99Ns        uint64 `json:"p99_ns"`
	LateRequests uint64 `json:"late_requests"`
	LateNs       uint64 `json:"late_ns"` // total by which the late replies missed their deadlines
}

// FromFlash converts a counter delta of the flash model.
func FromFlash(d flash.Counters) *FlashIO {
	return &FlashIO{
		HostBytesWritten: d.HostBytesWritten, HostBytesRead: d.HostBytesRead, HostBytesDiscarded: d.HostBytesDiscard,
		Flushes: d.Flushes, PagesProgrammed: d.PagesProgrammed, PagesCopied: d.PagesCopied,
		FlashBytesWritten: d.FlashBytesWrite, WriteAmplification: d.WriteAmplification,
		BlocksErased: d.BlocksErased, AUMerges: d.AUMerges, GCCollections: d.GCCollections, BusyNs: d.BusyNs,
	}
}

// DeviceIO is the change of /sys/block/<dev>/stat over a measurement.
type DeviceIO struct {
	ReadBytes    uint64 `json:"read_bytes"`
	WriteBytes   uint64 `json:"write_bytes"`
	ReadIOs      uint64 `json:"read_ios"`
	WriteIOs     uint64 `json:"write_ios"`
	DiscardBytes uint64 `json:"discard_bytes,omitempty"`
	DiscardIOs   uint64 `json:"discard_ios,omitempty"`
	FlushIOs     uint64 `json:"flush_ios,omitempty"`
	BusyMs       uint64 `json:"busy_ms"` // io_ticks: time the device had I/O in flight
}

// FromStat converts a counter delta.
func FromStat(d blockdev.Stat) *DeviceIO {
	return &DeviceIO{
		ReadBytes: d.ReadBytes(), WriteBytes: d.WriteBytes(),
		ReadIOs: d.ReadIOs, WriteIOs: d.WriteIOs,
		DiscardBytes: d.DiscardBytes(), DiscardIOs: d.DiscardIOs,
		FlushIOs: d.FlushIOs, BusyMs: d.IOTicksMs,
	}
}

// Float returns a pointer to v, for Measurement.Value.
func Float(v float64) *float64 { return &v }

// Save writes results.json and results.csv into dir, each atomically: a reader (or a run
// killed half-way) sees the previous complete file or the new one, never a torn one.
func Save(dir string, r *Run) error {
	r.Summary = r.Summarize()
	if err := WriteAtomic(filepath.Join(dir, "results.json"), func(w io.Writer) error { return encodeRun(w, r) }); err != nil {
		return err
	}
	csv, err := CSV(r)
	if err != nil {
		return err
	}
	return WriteAtomic(filepath.Join(dir, "results.csv"), func(w io.Writer) error { _, err := w.Write(csv); return err })
}

// encodeRun writes r as json.MarshalIndent(r, "", "  ") does, byte for byte, plus a newline,
// but one measurement at a time: the file is saved after every cell, and marshalling it
// whole made a buffer of the whole file and an indented copy of it each time, which at a
// default run's 2 MB were fsbench's largest allocations and set its peak memory.
func encodeRun(w io.Writer, r *Run) error {
	if len(r.Measurements) == 0 {
		js, err := json.MarshalIndent(r, "", "  ") // "null" or "[]" as the slice is
		if err != nil {
			return fmt.Errorf("encoding results: %w", err)
		}
		_, err = w.Write(append(js, '\n'))
		return err
	}
	// The run without its measurements, with a marker where they go.
	head := *r
	head.Measurements = []Measurement{}
	js, err := json.MarshalIndent(&head, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	const empty = "\n  \"measurements\": []"
	i := bytes.Index(js, []byte(empty))
	if i < 0 {
		return fmt.Errorf("encoding results: no measurements field in the encoded run")
	}
	i += len(empty) - len("]")
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(js[:i])
	for k := range r.Measurements {
		m, err := json.MarshalIndent(&r.Measurements[k], "    ", "  ")
		if err != nil {
			return fmt.Errorf("encoding results: measurement %d: %w", k, err)
		}
		if k > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		bw.Write(m)
	}
	bw.WriteString("\n  ")
	bw.Write(js[i:])
	bw.WriteString("\n")
	return bw.Flush()
}

// WriteAtomic writes a file through write and renames it into place, so that a reader (or a
// crash) never sees half a file.
func WriteAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Load reads results.json from a file or from a results directory.
func Load(path string) (*Run, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "results.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%s is not an fsbench results file: %w", path, err)
	}
	if head.Schema != Schema {
		if !strings.HasPrefix(head.Schema, "fsbench.results/") {
			return nil, fmt.Errorf("%s is not an fsbench results file (schema %q)", path, head.Schema)
		}
		return nil, fmt.Errorf("%s has schema %s; this fsbench reads %s: use the fsbench version that wrote it", path, head.Schema, Schema)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Values returns the headline figures of the non-warm-up, successful repetitions of one cell.
func (r *Run) Values(variant, test string) []float64 {
	var vs []float64
	for _, m := range r.Measurements {
		if m.Variant == variant && m.Test == test && !m.Warmup && m.Status == OK && m.Value != nil {
			vs = append(vs, *m.Value)
		}
	}
	return vs
}

// QuietValues is Values without the repetitions the noise sentinel saw the machine busy in
// (Disturbed), and how many it left out: what a verdict compares.
func (r *Run) QuietValues(variant, test string) (vs []float64, busy int) {
	for _, m := range r.Measurements {
		if m.Variant != variant || m.Test != test || m.Warmup || m.Status != OK || m.Value == nil {
			continue
		}
		if m.Disturbed() {
			busy++
			continue
		}
		vs = append(vs, *m.Value)
	}
	return vs, busy
}

// Summarize computes the cell summaries, in the order cells first appear.
func (r *Run) Summarize() []CellSummary {
	type key struct{ variant, test string }
	var order []key
	seen := map[key]bool{}
	units := map[key]string{}
	for _, m := range r.Measurements {
		k := key{m.Variant, m.Test}
		if m.Status == OK && !m.Warmup && !seen[k] {
			seen[k] = true
			order = append(order, k)
			units[k] = m.Unit
		}
	}
	out := []CellSummary{}
	for _, k := range order {
		out = append(out, CellSummary{Variant: k.variant, Test: k.test, Unit: units[k], Stats: fromStats(stats.Summarize(r.Values(k.variant, k.test)))})
	}
	return out
}

// ExtraValues is Values for the secondary figure named key.
func (r *Run) ExtraValues(variant, test, key string) []float64 {
	var vs []float64
	for _, m := range r.Measurements {
		if v, ok := m.Extra[key]; ok && m.Variant == variant && m.Test == test && !m.Warmup && m.Status == OK {
			vs = append(vs, v)
		}
	}
	return vs
}

// Cell returns the measurements of one cell, warm-up included, in order.
func (r *Run) Cell(variant, test string) []Measurement {
	var ms []Measurement
	for _, m := range r.Measurements {
		if m.Variant == variant && m.Test == test {
			ms = append(ms, m)
		}
	}
	return ms
}
