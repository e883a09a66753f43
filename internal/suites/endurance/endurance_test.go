package endurance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/testkit/emulock"
	"github.com/fsbench/fsbench/internal/testkit/sessiontest"
	"github.com/fsbench/fsbench/internal/testkit/simcardtest"
	"github.com/fsbench/fsbench/internal/testkit/slow"
	"github.com/fsbench/fsbench/internal/vm"
)

// needCard skips a test that serves a simulated card where it cannot be served.
func needCard(t *testing.T) {
	t.Helper()
	sessiontest.RequireRoot(t)
	simcardtest.Require(t)
}

// quick is the reduced run make test makes: ext4 on a 64 MiB sd-typical whose blocks last
// about 6 erases, a logging day of 4 MiB: the card reaches its end in about six rounds of a
// second or two. endurance.toml sets the day; extra arguments follow.
func quick(t *testing.T, bin, out string, extra ...string) *exec.Cmd {
	return quickOn(t, bin, out, "simcard:sd-typical", "ext4", "64M", extra...)
}

// quickOn is quick on another target, variant and size.
func quickOn(t *testing.T, bin, out, target, variant, size string, extra ...string) *exec.Cmd {
	return quickDay(t, bin, out, target, variant, size, "logging", "4M", extra...)
}

// quickDay is quickOn with another workload and day.
func quickDay(t *testing.T, bin, out, target, variant, size, workload, day string, extra ...string) *exec.Cmd {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "endurance.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[endurance]\nworkload = %q\nday_bytes = %q\nsnapshot_every = \"0s\"\n", workload, day)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _ := flash.Lookup("sd-typical")
	args := append([]string{"run", "-c", cfg, "--suite", "endurance", "--target", target, "--size", size,
		"--endurance-scale", fmt.Sprint(6 / float64(p.Endurance)), "--time-scale", "0.01", "--variants", variant, "-n", "1", "-o", out}, extra...)
	return exec.Command(bin, args...)
}

// card reads the endurance record of the run in dir.
func card(t *testing.T, dir string) *results.Endurance {
	t.Helper()
	r, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	cell := r.Cell("ext4", Test)
	if len(cell) != 1 || cell[0].Status != results.OK || cell[0].Endurance == nil {
		t.Fatalf("ext4 endurance = %+v", cell)
	}
	return cell[0].Endurance
}

// TestEnduranceSimcard runs a card to its end through the engine, the path a run takes (the
// card served by its own process, a loop device, ext4), and checks the record: the card turned
// read-only (sd-typical's end) and the host's first error is that; bad blocks grew through
// 10, 25 and 50 % of the spares; the prediction is there; every round has its row in the round
// log; the report has the section, its chart and the verdict line.
func TestEnduranceSimcard(t *testing.T) {
	needCard(t)
	bin, _ := simcardtest.Binary(t)
	out := filepath.Join(t.TempDir(), "res")
	cmd := quick(t, bin, out)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("a card to its end in %v", time.Since(start).Round(time.Second))
	c := card(t, out)
	t.Logf("first error %.2f, read-only %.2f, end %.0f (%s), predicted %.2f, bad blocks %+v", c.FirstError.Round, c.ReadOnly.Round, c.End.Round, c.End.What, c.PredictedRounds, c.BadBlocks)
	if !c.FirstError.Reached() || c.ReadOnly.Round != c.FirstError.Round || !strings.Contains(c.End.What, "read-only") {
		t.Errorf("first error %+v, read-only %+v, end %+v: want the card turning read-only as the first error and the end", c.FirstError, c.ReadOnly, c.End)
	}
	if len(c.BadBlocks) != 3 || !c.BadBlocks[2].Reached() || c.BadBlocks[0].Round > c.BadBlocks[2].Round || c.SpareBlocks == 0 {
		t.Errorf("bad blocks %+v of %d spares: want 10, 25 and 50 %% reached, in order", c.BadBlocks, c.SpareBlocks)
	}
	if c.PredictedRounds <= 0 || len(c.PredictedEach) == 0 || c.Rounds != len(c.Series) || c.Wrong != 0 || c.Missing != 0 {
		t.Errorf("prediction %v (%v), %d rounds with %d points, %d wrong and %d missing files", c.PredictedRounds, c.PredictedEach, c.Rounds, len(c.Series), c.Wrong, c.Missing)
	}
	csv, err := os.ReadFile(filepath.Join(out, "endurance", "ext4.rep1", "rounds.csv"))
	if err != nil || bytes.Count(csv, []byte(",round,")) < c.Rounds {
		t.Errorf("round log: %v, %d round rows for %d rounds", err, bytes.Count(csv, []byte(",round,")), c.Rounds)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !bytes.Contains(page, []byte(`id="endurance"`)) || !bytes.Contains(page, []byte("<polyline")) || !bytes.Contains(page, []byte("card lifetime")) {
		t.Errorf("report.html lacks the endurance section, its chart or its verdict (%v)", err)
	}
	if !strings.Contains(log.String(), "first error predicted at round") {
		t.Errorf("the log says no estimate:\n%s", log.String())
	}
}

// TestEnduranceNextCard: a card after another's end. ext4 ends on its card (read-only, its
// last writes refused), and btrfs gets a fresh card on the same loop device: mkfs.btrfs must
// not be told of ext4's refused writes (the device's unseen write error, which its fsync
// reported: "Operation not permitted", every time, before the engine took it first). Two cards:
// FSBENCH_SLOW=1 only.
func TestEnduranceNextCard(t *testing.T) {
	needCard(t)
	if !slow.Enabled() {
		t.Skip("two cards to their end: FSBENCH_SLOW=1 (make test-slow)")
	}
	bin, _ := simcardtest.Binary(t)
	out := filepath.Join(t.TempDir(), "res")
	if b, err := quickOn(t, bin, out, "simcard:sd-typical", "ext4,btrfs", "128M", "--order", "grouped").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	r, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"ext4", "btrfs"} {
		cell := r.Cell(v, Test)
		if len(cell) != 1 || cell[0].Status != results.OK || cell[0].Endurance == nil || !cell[0].Endurance.FirstError.Reached() {
			t.Errorf("%s endurance = %+v: want its card run to an error", v, cell)
		}
	}
}

// TestEnduranceEnds: the card's other ends, through the same path. A wrong-data card answers
// every request: the filesystem goes on, and only the verifier, reading back what was promised,
// finds the wrong data; the run stops the card some rounds after, or the filesystem stops
// mounting when a worn block held its metadata. (The update day: its data outweighs ext4's
// metadata, so that a worn block mostly holds a promised file before it holds the
// filesystem's superblock, which ext4 refuses to mount: the logging day on 128 MiB ended that
// way.) Mostly, not always: which pages share the first worn block depends on the kernel's
// timing (12 runs here all ended with the verifier's catch; one CI run, on a fresh machine,
// with ext4 refusing to mount at round 13). Both are the card's ends, recorded as they
// happened, and each is checked as such; the verifier's catch is what this test is for, so a
// run that ended on the metadata is followed by another, up to three. (The engine's own
// test, TestRunner in internal/endurance, checks the catch on a deterministic filesystem.)
// A dead card's first error is the host's I/O error, and its end the card stopping
// (FSBENCH_SLOW=1 only: make test runs the wrong-data card).
func TestEnduranceEnds(t *testing.T) {
	needCard(t)
	bin, _ := simcardtest.Binary(t)
	for _, tt := range []struct {
		profile, workload, day string
		slow                   bool
		// check checks a run's record and says whether it is the end the test is for (false:
		// another end of the same card, already checked, and another run is worth making).
		check func(t *testing.T, c *results.Endurance) bool
	}{
		{"testdata/sd-typical-wrong-data.toml", "update", "8M", false, wrongDataEnd},
		{"testdata/sd-typical-dead.toml", "logging", "4M", true, func(t *testing.T, c *results.Endurance) bool {
			if !c.IOError.Reached() || c.FirstError != c.IOError || c.End.What != "the card stopped responding" {
				t.Errorf("I/O error %+v, first error %+v, end %q: want the card's refusal first, and its stopping the end", c.IOError, c.FirstError, c.End.What)
			}
			return true
		}},
	} {
		t.Run(tt.profile, func(t *testing.T) {
			if tt.slow && !slow.Enabled() {
				t.Log("reduced: this end runs with FSBENCH_SLOW=1 (make test-slow)")
				return
			}
			const runs = 3
			for i := 1; i <= runs; i++ {
				out := filepath.Join(t.TempDir(), "res")
				if b, err := quickDay(t, bin, out, "simcard:"+tt.profile, "ext4", "64M", tt.workload, tt.day).CombinedOutput(); err != nil {
					t.Fatalf("%v\n%s", err, b)
				}
				c := card(t, out)
				t.Logf("run %d: first error %+v; end %+v", i, c.FirstError, c.End)
				if tt.check(t, c) || t.Failed() {
					return
				}
			}
			t.Errorf("%d runs, none ended the way this test is for (the log says how each ended)", runs)
		})
	}
}

// wrongDataEnd checks the record of a wrong-data card: the verifier's catch as the first error
// (true), or ext4 refusing to mount what a worn block gave back of its metadata (false); never
// an I/O error, which this card does not give.
func wrongDataEnd(t *testing.T, c *results.Endurance) bool {
	t.Helper()
	caught, err := wrongDataRecord(c)
	if err != nil {
		t.Error(err)
	}
	return caught
}

// wrongDataRecord is wrongDataEnd's check: whether the verifier caught the wrong data, and
// what in the record is neither of the card's two ends.
func wrongDataRecord(c *results.Endurance) (caught bool, err error) {
	if c.IOError.Reached() {
		return false, fmt.Errorf("I/O error %+v: a wrong-data card answers every request", c.IOError)
	}
	if !c.WrongData.Reached() {
		// The metadata first: the mount refused is the first error and the end, and the
		// card's own state (the model's counters, in the round's point) says it had worn
		// blocks in service by then: the card's wrong data, not the filesystem's fault.
		var last results.EndurancePoint
		if len(c.Series) > 0 {
			last = c.Series[len(c.Series)-1]
		}
		if !c.Unmountable || !strings.Contains(c.FirstError.What, "refused to mount") || !strings.Contains(c.End.What, "no longer mounts") ||
			c.End.Round != c.FirstError.Round || last.Health != string(flash.WornWrong) {
			return false, fmt.Errorf("no wrong data caught: first error %+v, end %+v, unmountable %v, the card's health %q: want the verifier's catch, or ext4 refusing to mount a card serving worn blocks", c.FirstError, c.End, c.Unmountable, last.Health)
		}
		return false, nil
	}
	if c.Wrong == 0 || c.FirstError != c.WrongData {
		return true, fmt.Errorf("wrong data %+v (%d files), first error %+v: want the verifier's catch as the first error", c.WrongData, c.Wrong, c.FirstError)
	}
	// The end: the run's bound after the first error, or the filesystem refusing what the
	// card gave back in its metadata, whichever comes first.
	if !strings.Contains(c.End.What, "after the first error") && !strings.Contains(c.End.What, "no longer mounts") || c.End.Round <= c.FirstError.Round {
		return true, fmt.Errorf("end %+v: want the run's end after the first error, or the filesystem no longer mounting", c.End)
	}
	return true, nil
}

// TestWrongDataRecord: the two ends of a wrong-data card that TestEnduranceEnds accepts, and
// records that are neither. The metadata end is CI's run of 2026-11-28 (ext4 refused to mount
// at round 13, before the verifier read a promised file wrong).
func TestWrongDataRecord(t *testing.T) {
	refused := results.Milestone{Round: 13, Bytes: 139909378, DeviceBytes: 141417472, What: "the filesystem refused to mount: mount -t ext4 /dev/loop1: invalid argument"}
	noMount := results.Milestone{Round: 13, Bytes: 139909378, DeviceBytes: 150797312, What: "the filesystem no longer mounts: mount -t ext4 /dev/loop1: invalid argument"}
	wrong := results.Milestone{Round: 12, Bytes: 131217336, What: "7 promised files read back wrong without an error"}
	worn := []results.EndurancePoint{{Round: 12, Health: string(flash.Healthy)}, {Round: 13, Health: string(flash.WornWrong)}}
	healthy := []results.EndurancePoint{{Round: 13, Health: string(flash.Healthy)}}
	for _, tt := range []struct {
		name         string
		c            results.Endurance
		caught, fail bool
	}{
		{"the verifier's catch", results.Endurance{FirstError: wrong, WrongData: wrong, Wrong: 7, End: noMount, Series: worn}, true, false},
		{"the metadata first", results.Endurance{FirstError: refused, End: noMount, Unmountable: true, Series: worn}, false, false},
		{"refused to mount a healthy card", results.Endurance{FirstError: refused, End: noMount, Unmountable: true, Series: healthy}, false, true},
		{"an I/O error", results.Endurance{FirstError: refused, IOError: refused, End: noMount, Series: worn}, false, true},
		{"the catch not first", results.Endurance{FirstError: refused, WrongData: wrong, Wrong: 7, End: noMount, Series: worn}, true, true},
		{"ended at the catch", results.Endurance{FirstError: wrong, WrongData: wrong, Wrong: 7, End: wrong, Series: worn}, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			caught, err := wrongDataRecord(&tt.c)
			if caught != tt.caught || (err != nil) != tt.fail {
				t.Errorf("caught %v, error %v: want caught %v, an error %v", caught, err, tt.caught, tt.fail)
			}
		})
	}
}

// TestEnduranceResume: a run killed (kill -9, as a crash or a reboot) in the middle of a card
// and run again on the same results directory goes on from the card's last snapshot: the
// rounds before it are kept as they were, and the card runs on to its end. With
// FSBENCH_SLOW=1 (make test-slow) it also runs the card twice uninterrupted, with the same
// seed, and checks that the resumed run's milestones are theirs: within one round, because the
// kernel's path is not deterministic even uninterrupted (the filesystem's own writes depend on
// timing; two uninterrupted runs differed by 0.27 rounds and 3.5 % of the card's bytes).
// Exact equality is the engine's: TestRunnerResume (internal/endurance) checks it on a
// deterministic filesystem.
func TestEnduranceResume(t *testing.T) {
	needCard(t)
	bin, _ := simcardtest.Binary(t)
	out := filepath.Join(t.TempDir(), "resumed")
	cmd := quick(t, bin, out)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(out, "endurance", "ext4.rep1", "state.json")
	deadline := time.Now().Add(2 * time.Minute)
	var before struct {
		Round  int
		Result results.Endurance
	}
	for {
		if b, err := os.ReadFile(state); err == nil && json.Unmarshal(b, &before) == nil && before.Round >= 2 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no second round within 2 minutes:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	t.Logf("killed after round %d", before.Round)
	// The next run cleans up what the killed one left (its card server, loop device, mounts)
	// and goes on from the results directory.
	again := quick(t, bin, out, "--force")
	if b, err := again.CombinedOutput(); err != nil {
		t.Fatalf("the resumed run: %v\n%s", err, b)
	}
	got := card(t, out)
	if got.Resumed != 1 || !got.FirstError.Reached() || !got.End.Reached() {
		t.Errorf("resumed %d times, first error %+v, end %+v: want once, and the card run to its end", got.Resumed, got.FirstError, got.End)
	}
	// The snapshot was taken after round 1's day or later: what the rounds before it wrote is
	// kept as the killed run recorded it.
	if len(got.Series) == 0 || got.Series[0] != before.Result.Series[0] {
		t.Errorf("round 1 after resuming %+v, before the kill %+v", got.Series[:min(1, len(got.Series))], before.Result.Series[0])
	}
	if !slow.Enabled() {
		t.Log("reduced: the resumed run is not compared with uninterrupted ones (FSBENCH_SLOW=1 does)")
		return
	}
	for i := range 2 {
		whole := filepath.Join(t.TempDir(), "whole")
		if b, err := quick(t, bin, whole).CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		want := card(t, whole)
		t.Logf("uninterrupted run %d: first error %.3f, end %.0f; resumed: %.3f, %.0f", i+1, want.FirstError.Round, want.End.Round, got.FirstError.Round, got.End.Round)
		for _, m := range []struct {
			what      string
			want, got results.Milestone
		}{{"first error", want.FirstError, got.FirstError}, {"read-only", want.ReadOnly, got.ReadOnly}, {"end", want.End, got.End}} {
			if math.Abs(m.want.Round-m.got.Round) > 1 {
				t.Errorf("%s: round %.3f resumed, %.3f uninterrupted: more than a round apart", m.what, m.got.Round, m.want.Round)
			}
		}
	}
}

// TestEnduranceGuest runs f2fs, which this host's kernel lacks, to its card's end in the QEMU
// guest (vm:simcard): the guest serves the card itself, renews and saves it there.
func TestEnduranceGuest(t *testing.T) {
	slow.Need(t, "boots the QEMU guest")
	needCard(t)
	if _, err := vm.DefaultKernel(); err != nil {
		t.Skipf("no guest kernel: %v", err)
	}
	emulock.Hold(t)
	bin, _ := simcardtest.Binary(t)
	out := filepath.Join(t.TempDir(), "res")
	cmd := quickOn(t, bin, out, "vm:simcard:sd-typical", "f2fs", "128M")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	r, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	cell := r.Cell("f2fs", Test)
	if len(cell) != 1 || cell[0].Status != results.OK || cell[0].Endurance == nil || !cell[0].Endurance.FirstError.Reached() {
		t.Fatalf("f2fs endurance in the guest = %+v", cell)
	}
	t.Logf("f2fs in the guest: first error %.2f, predicted %.2f, end %s", cell[0].Endurance.FirstError.Round, cell[0].Endurance.PredictedRounds, cell[0].Endurance.End.What)
	// f2fs discards what it frees, and the card must see it: Debian 12's guest kernel refused
	// every discard of its loop device over the card while the card's FUSE mount said nothing
	// of its block size (simcard's statfs), and the card wore as if f2fs never discarded.
	if r.Device == nil || r.Device.Queue["discard_granularity"] == "0" || r.Card == nil || r.Card.Discards == 0 {
		t.Errorf("the guest's loop device over the card: %+v; the card's discards: %+v: want a discard granularity, and f2fs's discards on the card", r.Device, r.Card)
	}
}
