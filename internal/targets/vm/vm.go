package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/simcard"
	"github.com/fsbench/fsbench/internal/targets"
	simkind "github.com/fsbench/fsbench/internal/targets/simcard"
	qemu "github.com/fsbench/fsbench/internal/vm"

	// The kinds the guest runs on (device:/dev/mmcblk0, nandsim): the request handed to it
	// carries their --target forms, which their packages register.
	_ "github.com/fsbench/fsbench/internal/targets/device"
	_ "github.com/fsbench/fsbench/internal/targets/nandsim"
)

func init() {
	plan.RegisterTargetForm(plan.TargetVM, plan.TargetForm{Usage: "vm or vm:simcard:PROFILE (a guest kernel under QEMU, for filesystems this kernel lacks)", Parse: parseSpec, Format: formatSpec})
	targets.Register(plan.TargetVM, func(s plan.TargetSpec, opt targets.Options) (targets.Target, error) {
		return &vmTarget{spec: s, opt: opt}, nil
	})
}

// parseSpec reads what follows vm: the guest's SD card, an image file (nothing) or a simulated
// card served on the host (simcard:PROFILE).
func parseSpec(arg string) (plan.TargetSpec, error) {
	if arg == "" {
		return plan.TargetSpec{Kind: plan.TargetVM}, nil
	}
	in, err := plan.ParseTarget(arg)
	if err != nil || in.Kind != plan.TargetSimcard {
		return plan.TargetSpec{}, errors.New("a guest's SD card can be vm (an image file) or vm:simcard:PROFILE")
	}
	return plan.TargetSpec{Kind: plan.TargetVM, Inner: &in}, nil
}

// formatSpec gives a vm spec back as parseSpec reads it.
func formatSpec(t plan.TargetSpec) string {
	if t.Inner != nil {
		return "vm:" + t.Inner.String()
	}
	return "vm"
}

// GuestCard is the emulated SD card as the guest kernel names it.
const GuestCard = "/dev/mmcblk0"

// vmTarget boots a guest kernel under QEMU (internal/vm) with an emulated SD card backed by an
// image file, or by a simulated card served on the host, and runs the same fsbench binary in
// it: for filesystems this machine's kernel lacks (f2fs, nilfs2, vfat; raw NAND).
type vmTarget struct {
	spec plan.TargetSpec
	opt  targets.Options
}

func (t *vmTarget) Spec() plan.TargetSpec { return t.spec }

// Caps: a guest runs the run; with a simulated card (vm:simcard:PROFILE) its device is the card
// model, whose power the guest can cut. Expanding the variants is the guest's business.
func (t *vmTarget) Caps() targets.Capability {
	if t.spec.Inner != nil && t.spec.Inner.Kind == plan.TargetSimcard {
		return targets.RemoteRunner | targets.CardModel | targets.PowerControl
	}
	return targets.RemoteRunner
}

// cardSize is the guest's SD card: the run's size; the raw-flash suite and a card served in
// the guest (guestServesCard) do not use it, but the guest always has one, a small one.
func (t *vmTarget) cardSize(cfg plan.Config) uint64 {
	if cfg.FlashSuite() || t.guestServesCard(cfg) {
		return 64 << 20
	}
	return cfg.Size
}

// guestServesCard says whether the guest serves the simulated card itself (vm:simcard with the
// powercut suite). A cut needs the card's recording, its cut images and a loop device over
// each beside the filesystem's mounts, fsck and the verifier: with the card on the host behind
// QEMU's SD card, the two halves would be on both sides of the emulator. The guest kernel has
// FUSE and loop, so the guest runs the same code as --target simcard:PROFILE on the host,
// and only the results come back. QEMU's SD card is then unused (and the card sees the
// loop device's requests, not QEMU's 512-byte ones).
func (t *vmTarget) guestServesCard(cfg plan.Config) bool {
	return t.spec.Inner != nil && (hasPowerCut(cfg) || cfg.Suite.Has(plan.EnduranceSuite))
}

func hasPowerCut(cfg plan.Config) bool {
	return cfg.Suite.Has(plan.PowerCutSuite)
}

// Check refuses what the guest cannot do: a user's dataset (the guest sees only the results
// directory), the raw-flash suite on a simulated SD card, a card size QEMU's SD model refuses,
// and power cuts on a plain image file (on vm:simcard the guest serves the card and cuts it).
func (t *vmTarget) Check(cfg plan.Config) error {
	if err := cfg.CheckSuiteMix(); err != nil {
		return err
	}
	if t.spec.Inner == nil {
		if err := targets.CheckNoPowerCut(cfg, "--target "+t.spec.String(), "the guest's card is a plain image file, whose power cannot be cut; use --target vm:simcard:PROFILE"); err != nil {
			return err
		}
		if err := targets.CheckCardEnds(cfg, "--target "+t.spec.String()+" (the guest's card is a plain image file; --target vm:simcard:PROFILE wears out)"); err != nil {
			return err
		}
	}
	if t.guestServesCard(cfg) && !simcard.FUSEAvailable {
		return plan.Refusef("--target %s: this build of fsbench has no FUSE card server, which the guest runs for the powercut suite", t.spec)
	}
	if cfg.Dataset != "" {
		return plan.Refusef("--dataset is not available with --target vm yet: the guest sees only the results directory; copy your tree there and run fsbench in the guest yourself, or use the generated dataset")
	}
	if cfg.FlashSuite() && t.spec.Inner != nil {
		return plan.Refusef("--target %s: the free-electrons suite runs on the guest's simulated NAND, not on its SD card; use --target vm", t.spec)
	}
	if err := qemu.CheckCardSize(t.cardSize(cfg)); err != nil {
		return &plan.InputError{Err: fmt.Errorf("--size: %w", err)}
	}
	if t.spec.Inner != nil {
		if err := simkind.CheckCard(t.spec.Inner.Profile, cfg.Size, t.opt.TimeScale); err != nil {
			return err
		}
	}
	return nil
}

// guestRequest is what the guest runs: the same configuration, on its SD card (or its nandsim
// chip), with the results written into the shared directory, which the host already holds.
func (t *vmTarget) guestRequest(req plan.Request, inputs string) (plan.Request, error) {
	g := plan.Request{Config: req.Config, Out: req.Out, Force: true, Work: "/tmp", NoCapacityCheck: req.NoCapacityCheck,
		Target: plan.TargetSpec{Kind: plan.TargetDevice, Device: GuestCard}, Destroy: GuestCard}
	if req.Config.FlashSuite() {
		g.Target, g.Destroy = plan.TargetSpec{Kind: plan.TargetNandsim}, ""
	}
	if t.guestServesCard(req.Config) {
		prof := t.spec.Inner.Profile
		if isPath(prof) {
			p, err := copyInput(prof, inputs)
			if err != nil {
				return g, fmt.Errorf("card profile: %w", err)
			}
			prof = p
		}
		g.Target, g.Destroy = plan.TargetSpec{Kind: plan.TargetSimcard, Profile: prof}, ""
		g.TimeScale, g.EnduranceScale = t.opt.TimeScale, t.opt.EnduranceScale
	}
	// The guest sees only the results directory: a card profile given as a file is copied in.
	if c := req.Config.Card; c != "" && isPath(c) {
		p, err := copyInput(c, inputs)
		if err != nil {
			return g, fmt.Errorf("--card: %w", err)
		}
		g.Config.Card = p
	}
	return g, nil
}

func isPath(s string) bool {
	return filepath.IsAbs(s) || filepath.Base(s) != s || filepath.Ext(s) == ".toml" || filepath.Ext(s) == ".json"
}

// copyInput copies a file into dir and returns the copy's path, which the guest sees at the
// same place.
func copyInput(src, dir string) (string, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(src))
	return dst, os.WriteFile(dst, b, 0o644)
}

// Run boots the guest and waits for it. Everything it makes on the host is recorded first: the
// inputs directory inside the results directory (the request, the card image, the simulated
// card's mount and data), the initramfs directory under /tmp, and the QEMU and card-server
// processes.
func (t *vmTarget) Run(ctx context.Context, s *session.Session, req plan.Request) (*results.Run, error) {
	cfg := req.Config
	if strings.ContainsAny(s.Dir, ",\n") {
		// QEMU's -virtfs takes comma-separated options: a comma in the path would split it.
		return nil, plan.Refusef("results directory %q: QEMU cannot share a path with a comma or newline with the guest: choose another -o", s.Dir)
	}
	inputs := filepath.Join(s.Dir, ".vm")
	if err := s.Mkdir(inputs); err != nil {
		return nil, err
	}
	greq, err := t.guestRequest(req, inputs)
	if err != nil {
		return nil, err
	}
	reqFile := filepath.Join(inputs, "request.json")
	if err := s.File(reqFile, func() error { return plan.WriteRequest(reqFile, greq) }); err != nil {
		return nil, err
	}
	img, card, err := t.guestCard(ctx, s, cfg, inputs)
	if err != nil {
		return nil, err
	}
	scratch, err := guestScratch(s)
	if err != nil {
		return nil, err
	}
	args := []string{"run", "--request", reqFile}
	t.opt.Logf("booting a guest kernel under QEMU with %s; the guest runs: fsbench %v on %s", t.describeCard(cfg, card), args, greq.Target)
	res, runErr := qemu.Run(ctx, qemu.Options{Kernel: t.opt.Kernel, Image: img, Args: args, OutDir: s.Dir, Console: t.opt.Console,
		Timeout: vmTimeout(cfg), MemoryMiB: vmMemoryMiB(cfg), Scratch: scratch,
		OnStart: func(pid int) error { return s.Ledger.AddProcess(pid, "QEMU guest", false) }})
	if res.PID > 0 {
		s.Ledger.RemoveProcess(res.PID)
	}
	r, err := t.guestResults(ctx, s.Dir, cfg, card, res, runErr)
	if r == nil {
		return nil, err
	}
	if err := results.Save(s.Dir, r); err != nil {
		return r, err
	}
	var ee *qemu.ExitError
	if errors.As(runErr, &ee) && ee.Status == 2 {
		// The guest refused the request (a usage error there): so does the host.
		return r, &plan.InputError{Err: runErr}
	}
	return r, runErr
}

// guestCard makes the guest's SD card: the simulated card served on the host (vm:simcard,
// unless the guest serves it itself), else an image file. img is the file QEMU's card uses.
func (t *vmTarget) guestCard(ctx context.Context, s *session.Session, cfg plan.Config, inputs string) (img string, card *simkind.Simcard, err error) {
	cardSize := t.cardSize(cfg)
	in := t.spec.Inner
	if in == nil || t.guestServesCard(cfg) {
		img = filepath.Join(inputs, "card.img")
		return img, nil, s.File(img, func() error { return qemu.CreateImage(img, cardSize) })
	}
	cardDir := filepath.Join(inputs, "simcard")
	data := filepath.Join(inputs, "simcard.data")
	if err := s.Mountpoint(cardDir); err != nil {
		return "", nil, err
	}
	// The server creates the data file; it is recorded, with its identity, once the server
	// made it (the ledger records only what exists), as on the host (simcard.go).
	s.OnClose("simulated card data "+data, func() error { return targets.RemoveFile(data) })
	card, err = simkind.StartSimcard(ctx, simkind.SimcardOptions{Profile: in.Profile, Size: cardSize, Dir: cardDir, Backing: data,
		TimeScale: t.opt.TimeScale, Command: t.opt.Self,
		OnStart: func(pid int) error { return s.Ledger.AddProcess(pid, "simulated card server", true) }})
	if err != nil {
		return "", nil, err
	}
	s.OnClose("simulated card server", func() error {
		if err := card.Stop(); err != nil {
			return fmt.Errorf("stopping the simulated card: %w", err)
		}
		return s.Ledger.RemoveProcess(card.Pid())
	})
	if err := s.Ledger.AddFile(data); err != nil {
		return "", nil, err
	}
	return card.CardPath(), card, nil
}

// guestScratch makes the directory the initramfs is built in, under /tmp: recorded, with its
// identity, once it is made (a killed run before that leaves an empty directory at most).
func guestScratch(s *session.Session) (string, error) {
	scratch := filepath.Join(os.TempDir(), "fsbench-vm-"+strconv.Itoa(os.Getpid())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return "", fmt.Errorf("making the guest's scratch directory: %w", err)
	}
	if err := s.Ledger.AddTree(scratch); err != nil {
		return "", errors.Join(err, os.Remove(scratch))
	}
	s.OnClose("guest scratch "+scratch, func() error {
		if err := os.RemoveAll(scratch); err != nil {
			return err
		}
		return s.Ledger.RemoveTree(scratch)
	})
	return scratch, nil
}

// describeCard says what the guest runs on, for the log.
func (t *vmTarget) describeCard(cfg plan.Config, card *simkind.Simcard) string {
	cardSize := t.cardSize(cfg)
	switch {
	case cfg.FlashSuite():
		return "nandsim (simulated raw NAND)"
	case t.guestServesCard(cfg):
		return fmt.Sprintf("the simulated card %s served in the guest (the powercut suite cuts its power there, the endurance suite renews and saves it; modelled waits × %g)", t.spec.Inner.Profile, t.opt.TimeScale)
	case card != nil:
		return fmt.Sprintf("a %s SD card backed by the simulated card %s (modelled waits × %g)", bytesize.Format(cardSize), t.spec.Inner.Profile, t.opt.TimeScale)
	}
	return fmt.Sprintf("a %s SD card", bytesize.Format(cardSize))
}

// guestResults loads the results the guest wrote in dir and tags them with how it ran: a
// guest that stopped mid-run, the simulated card behind its SD card, the guest itself. A nil
// run comes with the error that explains it.
func (t *vmTarget) guestResults(ctx context.Context, dir string, cfg plan.Config, card *simkind.Simcard, res qemu.Result, runErr error) (*results.Run, error) {
	r, lerr := results.Load(dir)
	if lerr != nil {
		if runErr != nil {
			return nil, fmt.Errorf("the guest run failed (console: %s): %w", res.ConsoleLog, runErr)
		}
		return nil, lerr
	}
	if runErr != nil && r.Status == results.RunRunning {
		// The guest was killed (timeout, Ctrl-C) or crashed mid-run: its completed cells are
		// kept, and the run says why it stopped instead of looking still in progress.
		r.Status, r.Error, r.Finished = results.RunFailed, runErr.Error(), time.Now()
		if ctx.Err() != nil {
			r.Status = results.RunInterrupted
		}
	}
	if card != nil {
		t.tagHostCard(r, card)
	}
	if t.guestServesCard(cfg) && r.Target.SimulatedCard() {
		// The guest's own simcard target: its results already carry the card's profile,
		// counters and time scale, and r.Guest says it ran there.
		if r.Methods == nil {
			r.Methods = map[string]string{}
		}
		r.Methods["vm_simcard"] = vmGuestSimcardMethod
	}
	// Tag the results with how the guest ran; its kernel is already in machine.kernel.
	console, _ := filepath.Rel(dir, res.ConsoleLog)
	r.Guest = &results.Guest{Kernel: res.Kernel, KernelRelease: res.KernelRelease, Accel: res.Accel, AccelNote: res.AccelNote,
		QEMU: res.QEMUVersion, BootSeconds: res.BootSeconds, ConsoleLog: filepath.ToSlash(console), Stalled: res.Stalled, Revived: res.Revived}
	return r, nil
}

// tagHostCard records in r the simulated card the host served behind the guest's SD card.
func (t *vmTarget) tagHostCard(r *results.Run, card *simkind.Simcard) {
	// The card saw every request of the guest's run: its final state (and wear histogram)
	// is the run's. Per-test flash figures come from the guest's traces, replayed.
	if c, err := card.Stats(); err == nil {
		r.Card = results.FromCounters(c)
	} else {
		t.opt.Logf("reading the simulated card's counters: %v", err)
	}
	// The guest made its filesystems on /dev/mmcblk0, a device to it: the host knows it
	// was the simulated card, and that the card figures are rated on that card.
	r.Target.Profile, r.Target.TimeScale = t.spec.Inner.Profile, t.opt.TimeScale
	r.Target.Kind, r.Target.CardVia = results.KindSimcard, results.CardBehindGuestSD
	r.Target.CardProfile = simkind.ProfileName(t.spec.Inner.Profile)
	if r.Methods == nil {
		r.Methods = map[string]string{}
	}
	r.Methods["vm_simcard"] = vmSimcardMethod
}

// vmTimeout bounds the whole guest run: every test's timeout for every repetition would be far
// too long, so the guest gets the per-test timeout times a generous number of tests.
func vmTimeout(cfg plan.Config) time.Duration {
	if cfg.FlashSuite() {
		// One fresh chip per size, variant and repetition, each with a handful of tests.
		cells := len(cfg.PartitionSizes()) * len(cfg.Variants) * (cfg.Repetitions + 1)
		return cfg.Timeout.Duration * time.Duration(4+cells)
	}
	if cfg.Suite.Has(plan.EnduranceSuite) {
		// Each card runs to its end, round after round, each round bounded by the timeout.
		return cfg.Timeout.Duration * time.Duration(4+20*len(cfg.Variants)*cfg.Repetitions)
	}
	return cfg.Timeout.Duration * time.Duration(4+2*cfg.Repetitions)
}

// vmMemoryMiB is the guest's RAM: the default for the block suites (their data is staged in
// RAM at size/12 + size/8); for raw NAND, nandsim keeps the written chip in RAM besides the
// data and the image built from it, about 4 times the largest partition.
func vmMemoryMiB(cfg plan.Config) uint64 {
	if hasPowerCut(cfg) || cfg.Suite.Has(plan.EnduranceSuite) {
		// A card served in the guest keeps everything in the guest's /tmp (tmpfs, half the
		// RAM): the card's sparse data file and, during the workload, the copy of the card
		// and the write stream, which the recording wants room for (up to the card's size
		// again). Four times the card leaves tmpfs twice the card.
		return 1024 + 4*cfg.Size>>20
	}
	if !cfg.FlashSuite() {
		return 0
	}
	var largest uint64
	for _, s := range cfg.PartitionSizes() {
		largest = max(largest, s)
	}
	return 768 + 5*largest>>20
}

// vmGuestSimcardMethod says how the card was driven when the guest served it.
const vmGuestSimcardMethod = "card: the simulated card was served in the guest (FUSE) under a direct-I/O loop device, as --target simcard does on a host, so that the powercut suite's recording, cuts, checks and mounts all ran in the guest; QEMU's SD card was not used"

// vmSimcardMethod says how the simulated card behind QEMU's SD card sees the guest's I/O.
// Measured with QEMU 7.2: every request reaches the card file as 512-byte reads and writes
// (620,200 writes of 512 bytes for one f2fs run on 128 MiB), and an erase (the guest's
// discard) arrives as writes of the erased range, never as a discard. The card's counters thus
// show QEMU's SD model, not the guest's request sizes.
const vmSimcardMethod = "card: the simulated card's counters over the whole guest run. QEMU's SD card model (7.2) moves 512 bytes per request and carries out an erase (the guest's discard) by writing the range, so the card sees 512-byte writes and no discards: its write amplification and wear are those of that traffic. The per-test trace replays (from the guest's own block requests) show what a real card would get"
