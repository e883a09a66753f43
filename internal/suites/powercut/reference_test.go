package powercut

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/fs"
	pcut "github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/simcard"
	"github.com/fsbench/fsbench/internal/testkit/emulock"
	"github.com/fsbench/fsbench/internal/vm"
)

// referenceGuest is set in the guest: this test binary, booted by the host side of
// TestBenchPowerCutReference, runs the guest side and writes its findings there.
var (
	referenceGuest     = flag.String("powercut-reference-guest", "", "internal: run the power-cut reference's guest side, writing reference.json to this directory")
	referenceReplayLog = flag.String("powercut-reference-replay-log", "", "internal: replay-log in the guest")
)

// The reference's sizes: a card mkfs.xfs accepts (300 MB at least), a workload and a number of
// cuts that take about ten minutes per filesystem under TCG.
const (
	refCardBytes = 320 << 20
	refOps       = 150
	refCuts      = 40
	refSeed      = 27
)

// refVariant is one filesystem and mount options the cross-check runs; asserted ones must
// agree on >= 95 % of the cuts, the others are shown. ext2 (no journal: its checker finds
// something after most cuts) and ext4 with barrier=0 (no flush ever: nothing it acknowledged is
// durable) show that the two sides also agree where the cuts are not whole.
type refVariant struct {
	name, fs, options string
	asserted          bool
}

var refVariants = []refVariant{
	{"ext4", "ext4", "", true}, {"xfs", "xfs", "", true}, {"btrfs", "btrfs", "", true}, {"f2fs", "f2fs", "", true},
	{"ext2", "ext2", "", false}, {"ext4-nobarrier", "ext4", "barrier=0", false},
}

// refVerdict is one side's verdict on one cut.
type refVerdict struct {
	Whole      bool     `json:"whole"`
	Mounted    bool     `json:"mounted"`
	Fsck       string   `json:"fsck"`
	Repair     string   `json:"repair,omitempty"`
	Violations int      `json:"violations"`
	Problems   []string `json:"problems,omitempty"`
}

func verdictOf(v CutVerdict) refVerdict {
	return refVerdict{Whole: v.Whole, Mounted: v.Mounted, Fsck: v.Fsck, Repair: v.Repair, Violations: v.Check.Violations(), Problems: v.Check.Problems}
}

// refCut is one flush-point cut, judged both ways.
type refCut struct {
	Mark    int        `json:"mark"` // the dm-log-writes mark replayed to
	Pos     int        `json:"pos"`  // the card's request position at the mark
	Fsbench refVerdict `json:"fsbench"`
	Replay  refVerdict `json:"replay"`
	Agree   bool       `json:"agree"` // both whole, or both not
	// Same: the details agree too (mounted, the checker's verdict, the repair's, the number of
	// broken promises).
	Same bool `json:"same"`
}

// refFS is one filesystem's cross-check.
type refFS struct {
	FS       string   `json:"fs"` // the variant's name
	Asserted bool     `json:"asserted"`
	Requests int      `json:"requests"` // recorded by the simulated card
	Marks    int      `json:"marks"`
	Acks     int      `json:"acks"`
	Cuts     []refCut `json:"cuts"`
	Agree    int      `json:"agree"`
	Same     int      `json:"same"`
	Seconds  float64  `json:"seconds"`
	Error    string   `json:"error,omitempty"`
}

// TestBenchPowerCutReference (make bench-powercut-reference; FSBENCH_BENCH=1, root, REPLAY_LOG
// the path of a static replay-log built from xfstests' src/log-writes) checks the powercut
// suite's cuts against an independent reference, in the QEMU guest, whose kernel has
// dm-log-writes. For each filesystem one workload runs on a stack that records it twice:
//
//	filesystem → dm-log-writes (log on its own loop device) → loop → simulated card (FUSE)
//
// the simulated card recording every request it receives, as the powercut suite does, and
// dm-log-writes logging every bio the filesystem sent. At every point the workload reads the
// card's position (before each operation, after each acknowledgement) it also writes a mark
// into the log. Then, at flush-point cuts spread over those marks, the card is built two ways:
// by fsbench from its recording, on a card that loses exactly what was not flushed (an emmc
// whose cache is never written back: flash.CacheOrderNone), and by xfstests' replay-log,
// replaying the log up to the mark (dm-log-writes logs a write only once a flush or FUA
// covered it, so a replay to a mark holds exactly what was flushed). Both are checked by the
// same CutChecker: mount, verify against the workload's manifest, checker, repair. The verdicts
// (whole or not) must agree on at least 95 % of the cuts for ext4, xfs, btrfs and f2fs; ext2
// and ext4 with barrier=0 are shown beside them (see refVariants).
func TestBenchPowerCutReference(t *testing.T) {
	if *referenceGuest != "" {
		runReferenceGuest(t, *referenceGuest)
		return
	}
	if os.Getenv("FSBENCH_BENCH") == "" {
		t.Skip("benchmark: run with FSBENCH_BENCH=1 and REPLAY_LOG=<static replay-log> (make bench-powercut-reference), as root")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: boots a QEMU guest that makes loop and device-mapper devices")
	}
	replayLog := os.Getenv("REPLAY_LOG")
	if replayLog == "" {
		t.Skip("REPLAY_LOG is not set: build xfstests' src/log-writes/replay-log statically (gcc -static -o replay-log replay-log.c log-writes.c) and give its path")
	}
	replayLog, err := filepath.Abs(replayLog)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("file", "-L", replayLog).Output(); err == nil && !bytes.Contains(out, []byte("statically linked")) {
		t.Fatalf("%s is not statically linked (%s): the guest has no C library for it", replayLog, bytes.TrimSpace(out))
	}
	for _, tool := range []string{"dmsetup", "qemu-system-x86_64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install dmsetup qemu-system-x86)", tool)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	emulock.Hold(t)
	out := t.TempDir()
	img := filepath.Join(out, "sd.img")
	if err := vm.CreateImage(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := vm.Run(context.Background(), vm.Options{Image: img, Binary: self, OutDir: out,
		Args: []string{"-test.run=^TestBenchPowerCutReference$", "-test.v", "-test.timeout=0", "-powercut-reference-guest=" + out, "-powercut-reference-replay-log=" + replayLog},
		// btrfs: btrfs check, the checker, which the guest's tools lack.
		ExtraTools: []string{"dmsetup", "btrfs", replayLog}, ExtraModules: []string{"dm_log_writes"},
		MemoryMiB: 3072, Timeout: 4 * time.Hour, Console: testLog{t}})
	if err != nil {
		t.Fatalf("guest: %v (accelerator %s)", err, res.Accel)
	}
	b, err := os.ReadFile(filepath.Join(out, "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var found []refFS
	if err := json.Unmarshal(b, &found); err != nil {
		t.Fatal(err)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("bench-powercut-reference: %d filesystems in %.0f s (guest %s, %s), load average %s", len(found), time.Since(start).Seconds(), res.KernelRelease, res.Accel, bytes.TrimSpace(load))
	for _, f := range found {
		if f.Error != "" {
			t.Errorf("bench-powercut-reference: %s: %s", f.FS, f.Error)
			continue
		}
		whole := [2]int{}
		for _, c := range f.Cuts {
			if c.Fsbench.Whole {
				whole[0]++
			}
			if c.Replay.Whole {
				whole[1]++
			}
			if !c.Agree {
				t.Logf("bench-powercut-reference: %s: disagree at mark %d (card position %d): fsbench %+v, replay %+v", f.FS, c.Mark, c.Pos, c.Fsbench, c.Replay)
			}
		}
		n := len(f.Cuts)
		pct := 100 * float64(f.Agree) / float64(max(n, 1))
		t.Logf("bench-powercut-reference: %s: %d requests, %d marks, %d acknowledgements; %d flush-point cuts, verdicts agree on %d (%.1f %%), in every detail on %d; whole: fsbench %d, replay %d; %.0f s",
			f.FS, f.Requests, f.Marks, f.Acks, n, f.Agree, pct, f.Same, whole[0], whole[1], f.Seconds)
		if f.Asserted && (n == 0 || pct < 95) {
			t.Errorf("bench-powercut-reference: %s: verdicts agree on %.1f %% of %d cuts, want >= 95 %%", f.FS, pct, n)
		}
	}
}

// testLog writes the guest's console into the test log, line by line.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if strings.TrimSpace(line) != "" && !strings.Contains(line, "discard_granularity") {
			l.t.Log(strings.TrimRight(line, "\r"))
		}
	}
	return len(p), nil
}

// runReferenceGuest is the guest side: every filesystem in turn, findings to dir/reference.json
// (written after each, so that a guest killed late still leaves the first ones).
func runReferenceGuest(t *testing.T, dir string) {
	ctx := context.Background()
	run := fs.DefaultRunner
	for _, m := range []string{"dm_mod", "dm_log_writes", "crc32c_generic"} {
		if out, err := run(ctx, "modprobe", m); err != nil {
			t.Logf("modprobe %s: %v %s", m, err, out)
		}
	}
	var found []refFS
	for _, v := range refVariants {
		start := time.Now()
		f, err := referenceOne(ctx, t, v)
		f.FS, f.Asserted, f.Seconds = v.name, v.asserted, time.Since(start).Seconds()
		if err != nil {
			f.Error = err.Error()
		}
		t.Logf("reference %s: %d of %d cuts agree (%.0f s) %s", v.name, f.Agree, len(f.Cuts), f.Seconds, f.Error)
		found = append(found, f)
		b, _ := json.MarshalIndent(found, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "reference.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// referenceOne records one filesystem's workload both ways and compares the cuts.
func referenceOne(ctx context.Context, t *testing.T, v refVariant) (f refFS, err error) {
	k, ok := fs.Lookup(v.fs)
	if !ok {
		return f, fmt.Errorf("no filesystem %s", v.fs)
	}
	run := fs.DefaultRunner
	if out, err := run(ctx, "modprobe", k.Module); err != nil {
		return f, fmt.Errorf("modprobe %s: %v %s", k.Module, err, out)
	}
	work, err := os.MkdirTemp("", "reference-"+v.name+"-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(work)
	var cleanup []func() error
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			if cerr := cleanup[i](); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}()

	// The card: emmc whose cache holds everything and is never written back, so that a cut
	// holds exactly what was flushed; served in this process.
	prof, err := flash.Lookup("emmc")
	if err != nil {
		return f, err
	}
	prof.Name, prof.CacheSize = "emmc-flushed-only", refCardBytes
	prof.PowerLoss = flash.PowerLoss{VolatileCache: true, CacheOrder: flash.CacheOrderNone}
	cardDir := filepath.Join(work, "card")
	if err := os.Mkdir(cardDir, 0o755); err != nil {
		return f, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		_, err := simcard.Serve(sctx, simcard.Config{Profile: prof, Size: refCardBytes, Dir: cardDir, Backing: filepath.Join(work, "backing"), PathOffset: "off"})
		served <- err
	}()
	cleanup = append(cleanup, func() error { stop(); return <-served })
	card := &refSimcard{dir: cardDir}
	if err := waitFor(filepath.Join(cardDir, simcard.CardFile), served); err != nil {
		return f, err
	}
	cardLoop, err := session.AttachLoop(filepath.Join(cardDir, simcard.CardFile), session.LoopOptions{DirectIO: true})
	if err != nil {
		return f, err
	}
	cleanup = append(cleanup, cardLoop.Detach)
	if err := fs.Mkfs(ctx, run, k, cardLoop.Path, nil); err != nil {
		return f, err
	}
	logFile := filepath.Join(work, "log.img")
	if err := os.WriteFile(logFile, nil, 0o600); err != nil {
		return f, err
	}
	if err := os.Truncate(logFile, refCardBytes); err != nil {
		return f, err
	}
	logLoop, err := session.AttachLoop(logFile, session.LoopOptions{})
	if err != nil {
		return f, err
	}
	cleanup = append(cleanup, logLoop.Detach)

	// Both recordings start from the card as mkfs left it.
	stream := filepath.Join(work, "stream")
	if err := os.Mkdir(stream, 0o755); err != nil {
		return f, err
	}
	if err := card.command(fmt.Sprintf("record %s %d", stream, uint64(1<<30))); err != nil {
		return f, err
	}
	lw, err := newLogWrites(ctx, "fsbench-ref", cardLoop.Path, logLoop.Path, refCardBytes)
	if err != nil {
		return f, err
	}
	removed := false
	cleanup = append(cleanup, func() error {
		if removed {
			return nil
		}
		return lw.remove(ctx)
	})
	mp := filepath.Join(work, "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		return f, err
	}
	if err := fs.Mount(ctx, k, lw.dev, mp, v.options); err != nil {
		return f, err
	}
	workDir := filepath.Join(mp, "powercut")
	if err := os.Mkdir(workDir, 0o755); err != nil {
		return f, errors.Join(err, fs.Unmount(ctx, k, mp))
	}
	type mark struct{ seq, pos int }
	var marks []mark
	pos := func() (uint64, error) {
		st, err := card.status()
		if err != nil {
			return 0, err
		}
		m := mark{seq: len(marks) + 1, pos: int(st.Pos)}
		if err := lw.mark(ctx, m.seq); err != nil {
			return 0, err
		}
		marks = append(marks, m)
		return st.Pos, nil
	}
	spec := pcut.Spec{Seed: refSeed, Ops: refOps, LargeBytes: 1 << 20}
	man, werr := pcut.Workload{Spec: spec, Pos: pos}.Run(ctx, workDir)
	uerr := fs.Unmount(ctx, k, mp)
	if err := errors.Join(werr, uerr, card.command("stop")); err != nil {
		return f, err
	}
	removed = true
	if err := lw.remove(ctx); err != nil {
		return f, err
	}
	f.Marks, f.Acks = len(marks), len(man.Acks)

	// The replay's card starts from a copy of the base the simulated card copied at "record",
	// before its own cuts advance that base in place.
	s, err := pcut.OpenStream(stream)
	if err != nil {
		return f, err
	}
	f.Requests = len(s.Records)
	s.Close()
	replay := &replayCard{log: logLoop.Path, base: filepath.Join(work, "replay-base.img"), scratch: filepath.Join(work, "replay-cut.img"),
		replayLog: *referenceReplayLog, cutToMark: map[int]int{}}
	if err := sparseCopy(replay.base, filepath.Join(stream, pcut.BaseFile)); err != nil {
		return f, err
	}
	replayLoop, err := session.AttachLoop(replay.base, session.LoopOptions{})
	if err != nil {
		return f, err
	}
	cleanup = append(cleanup, replayLoop.Detach)
	replay.dev = replayLoop.Path

	// Flush-point cuts: marks spread over the workload, one per card position, ascending.
	var points []mark
	for i := 0; i < refCuts && len(marks) > 0; i++ {
		m := marks[(i*len(marks))/refCuts]
		if len(points) > 0 && points[len(points)-1].pos == m.pos {
			continue
		}
		points = append(points, m)
	}
	ck := CutChecker{Kind: k, MountOptions: v.options, Mountpoint: mp, WorkDir: work, Run: run}
	for i, p := range points {
		c := pcut.Cut{Pos: p.pos, Seed: uint64(i + 1), Kind: pcut.CutAfterFlush}
		fv, err := ck.Check(ctx, card, man, c, false)
		if err != nil {
			return f, fmt.Errorf("fsbench's cut at %d: %w", p.pos, err)
		}
		replay.cutToMark[p.pos] = p.seq
		rv, err := ck.Check(ctx, replay, man, c, false)
		if err != nil {
			return f, fmt.Errorf("replay to mark %d: %w", p.seq, err)
		}
		rc := refCut{Mark: p.seq, Pos: p.pos, Fsbench: verdictOf(fv), Replay: verdictOf(rv)}
		rc.Agree = rc.Fsbench.Whole == rc.Replay.Whole
		a, b := rc.Fsbench, rc.Replay
		rc.Same = a.Whole == b.Whole && a.Mounted == b.Mounted && a.Fsck == b.Fsck && a.Repair == b.Repair && a.Violations == b.Violations
		if rc.Agree {
			f.Agree++
		}
		if rc.Same {
			f.Same++
		}
		f.Cuts = append(f.Cuts, rc)
	}
	return f, card.command("close")
}

// waitFor waits until path exists (the FUSE server is up) or the server stopped.
func waitFor(path string, served chan error) error {
	for i := 0; i < 600; i++ {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case err := <-served:
			served <- err
			return fmt.Errorf("simulated card stopped before serving: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not appear in 60 s", path)
}

// refSimcard drives the simulated card served in this process through its powercut file, as
// target's cutCard does for the suite.
type refSimcard struct{ dir string }

var _ pcut.Card = (*refSimcard)(nil)

func (c *refSimcard) command(line string) error {
	if err := os.WriteFile(filepath.Join(c.dir, simcard.PowerCutFile), []byte(line), 0); err != nil {
		st, _ := c.status()
		return fmt.Errorf("simulated card: %s: %v (%s)", line, err, st.Error)
	}
	return nil
}

func (c *refSimcard) status() (simcard.PowerCutStatus, error) {
	var st simcard.PowerCutStatus
	b, err := os.ReadFile(filepath.Join(c.dir, simcard.PowerCutFile))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	return st, err
}

func (c *refSimcard) Record(uint64) (string, error) { return "", errors.New("not used") }
func (c *refSimcard) Pos() (uint64, error)          { st, err := c.status(); return st.Pos, err }
func (c *refSimcard) Stop() error                   { return c.command("stop") }
func (c *refSimcard) Reset() error                  { return c.command("reset") }
func (c *refSimcard) Close() error                  { return c.command("close") }

func (c *refSimcard) Cut(cut pcut.Cut, _ bool) (pcut.Outcome, error) {
	if err := c.command(fmt.Sprintf("cut %d %d", cut.Pos, cut.Seed)); err != nil {
		return pcut.Outcome{}, err
	}
	st, err := c.status()
	if err != nil || st.Outcome == nil {
		return pcut.Outcome{}, fmt.Errorf("simulated card built no cut: %v", err)
	}
	return *st.Outcome, nil
}

func (c *refSimcard) Attach(context.Context) (string, func() error, error) {
	l, err := session.AttachLoop(filepath.Join(c.dir, simcard.CutFile), session.LoopOptions{DirectIO: true})
	if err != nil {
		return "", nil, err
	}
	return l.Path, l.Detach, nil
}

// replayCard is the reference's card: dm-log-writes' log replayed by replay-log, up to the
// mark of each cut, onto a copy of the card as recording started; each cut's checks run on a
// copy of that.
type replayCard struct {
	log, dev, base, scratch, replayLog string
	cutToMark                          map[int]int
	lastMark                           int
}

var _ pcut.Card = (*replayCard)(nil)

func (c *replayCard) Record(uint64) (string, error) { return "", errors.New("not used") }
func (c *replayCard) Pos() (uint64, error)          { return 0, errors.New("not used") }
func (c *replayCard) Stop() error                   { return nil }
func (c *replayCard) Close() error                  { return nil }
func (c *replayCard) Reset() error                  { return sparseCopy(c.scratch, c.base) }

// Cut replays the log from the last cut's mark to this one's (the base only moves forward).
func (c *replayCard) Cut(cut pcut.Cut, _ bool) (pcut.Outcome, error) {
	m, ok := c.cutToMark[cut.Pos]
	if !ok {
		return pcut.Outcome{}, fmt.Errorf("no mark for the cut at %d", cut.Pos)
	}
	args := []string{"--log", c.log, "--replay", c.dev, "--end-mark", "m" + strconv.Itoa(m)}
	if c.lastMark > 0 {
		args = append(args, "--start-mark", "m"+strconv.Itoa(c.lastMark))
	}
	if out, err := exec.Command(c.replayLog, args...).CombinedOutput(); err != nil {
		return pcut.Outcome{}, fmt.Errorf("replay-log %s: %v: %s", strings.Join(args, " "), err, out)
	}
	c.lastMark = m
	return pcut.Outcome{Cut: cut}, c.Reset()
}

func (c *replayCard) Attach(context.Context) (string, func() error, error) {
	l, err := session.AttachLoop(c.scratch, session.LoopOptions{})
	if err != nil {
		return "", nil, err
	}
	return l.Path, l.Detach, nil
}

// logWrites is a dm-log-writes device: a block device that passes every bio to dev and logs
// it (data, flags, and the marks it is sent) to logDev.
type logWrites struct {
	name, dev string
}

func newLogWrites(ctx context.Context, name, dev, logDev string, size uint64) (*logWrites, error) {
	table := fmt.Sprintf("0 %d log-writes %s %s", size/512, dev, logDev)
	// No udev in the guest: --noudevsync, and the device is used by its devtmpfs node.
	if out, err := exec.CommandContext(ctx, "dmsetup", "--noudevsync", "create", name, "--table", table).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("dmsetup create %s: %v: %s", table, err, out)
	}
	out, err := exec.CommandContext(ctx, "dmsetup", "info", "-c", "--noheadings", "-o", "minor", name).Output()
	if err != nil {
		return nil, fmt.Errorf("dmsetup info %s: %w", name, err)
	}
	return &logWrites{name: name, dev: "/dev/dm-" + strings.TrimSpace(string(out))}, nil
}

// mark writes mark "m<seq>" into the log: dm-log-writes queues it behind the writes already
// covered by a flush or FUA, ahead of the ones not yet.
func (l *logWrites) mark(ctx context.Context, seq int) error {
	if out, err := exec.CommandContext(ctx, "dmsetup", "message", l.name, "0", "mark", "m"+strconv.Itoa(seq)).CombinedOutput(); err != nil {
		return fmt.Errorf("dmsetup message mark: %v: %s", err, out)
	}
	return nil
}

func (l *logWrites) remove(ctx context.Context) error {
	if out, err := exec.CommandContext(ctx, "dmsetup", "--noudevsync", "remove", l.name).CombinedOutput(); err != nil {
		return fmt.Errorf("dmsetup remove %s: %v: %s", l.name, err, out)
	}
	return nil
}

// sparseCopy copies src to dst, leaving the all-zero megabytes holes (the cards are sparse
// files in the guest's RAM).
func sparseCopy(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := out.Truncate(fi.Size()); err != nil {
		out.Close()
		return err
	}
	buf := make([]byte, 1<<20)
	zero := make([]byte, len(buf))
	for off := int64(0); ; off += int64(len(buf)) {
		n, rerr := in.ReadAt(buf, off)
		if n > 0 && !bytes.Equal(buf[:n], zero[:n]) {
			if _, err := out.WriteAt(buf[:n], off); err != nil {
				out.Close()
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	return out.Close()
}
