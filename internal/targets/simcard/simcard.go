package simcard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/endurance"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/mountinfo"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/simcard"
	"github.com/fsbench/fsbench/internal/targets"
)

func init() {
	// simcard alone is the default profile's card.
	plan.RegisterTargetForm(plan.TargetSimcard, plan.TargetForm{Usage: "simcard:PROFILE (e.g. simcard:sd-typical; fsbench simcard profiles lists them)",
		Parse: func(arg string) (plan.TargetSpec, error) {
			if arg == "" {
				arg = plan.DefaultCardProfile
			}
			return plan.TargetSpec{Kind: plan.TargetSimcard, Profile: arg}, nil
		},
		Format: func(t plan.TargetSpec) string { return "simcard:" + t.Profile },
	})
	targets.RegisterKind(plan.TargetSimcard, targets.LocalDevice|targets.CardModel|targets.PowerControl,
		func(b targets.Base) targets.Target { return &simcardTarget{b} })
}

// SimcardOptions says which simulated card StartSimcard serves and how.
type SimcardOptions struct {
	Profile   string  // built-in profile name or profile file (flash.Lookup)
	Size      uint64  // card size in bytes, a multiple of the profile's AU size
	Dir       string  // mount point, created if missing; it then holds card and stats
	Backing   string  // sparse data file; empty: the server uses a temporary one
	TimeScale float64 // multiplies the modelled waits (1 real time; 0.01 a hundred times faster)
	// EnduranceScale multiplies every block's endurance (0: as the profile says; 0.01: the
	// card wears out after a hundredth of the writes); WearSeed draws them.
	EnduranceScale float64
	WearSeed       uint64
	// Command is the argv prefix that runs fsbench's command line; the default runs this
	// executable again ("/proc/self/exe"). Tests substitute a helper that re-executes the test
	// binary. "simcard serve ..." is appended.
	Command []string
	Env     []string  // extra environment for the server
	Log     io.Writer // the server's stderr is copied here (nil: only kept for error messages)
	// StartTimeout bounds the wait for DIR/card to appear (0: 15 s).
	StartTimeout time.Duration
	// OnStart, when set, is called with the server's pid as soon as it runs (before it serves),
	// so that the caller can record it for the cleanup of a killed run.
	OnStart func(pid int) error
	// PathOffset says how the server's path offset is set (simcard.Card.SetPathOffset):
	// "" or "loop" measures the round trip through a direct-I/O loop device over the served
	// file, the path fsbench's own I/O takes; "auto" lets the server measure the FUSE path
	// alone; "off" or a duration is passed on as it is (simcard.Config.PathOffset).
	PathOffset string
	// PathCalibration, when set, receives what the loop calibration measured.
	PathCalibration *simcard.RoundTrip
}

// Simcard is a running simulated-card server: a child process, so that a crash of the server
// cannot take the benchmark run down with it (the loop device's I/O fails instead, and the
// run records that).
type Simcard struct {
	dir     string
	cmd     *exec.Cmd
	stdout  bytes.Buffer
	stderr  syncBuffer
	done    chan struct{} // closed when the child has exited
	waitErr error
	stopped bool
}

// serveArgs is the "simcard serve" command line for opts, but its directory.
func serveArgs(opts SimcardOptions) []string {
	args := []string{"simcard", "serve",
		"--profile", opts.Profile,
		"--size", strconv.FormatUint(opts.Size, 10),
		"--time-scale", strconv.FormatFloat(opts.TimeScale, 'g', -1, 64),
		"--unmount-timeout", "20s"}
	if opts.Backing != "" {
		args = append(args, "--backing", opts.Backing)
	}
	if opts.EnduranceScale > 0 && opts.EnduranceScale != 1 {
		args = append(args, "--endurance-scale", strconv.FormatFloat(opts.EnduranceScale, 'g', -1, 64))
	}
	if opts.WearSeed != 0 {
		args = append(args, "--wear-seed", strconv.FormatUint(opts.WearSeed, 10))
	}
	return args
}

// StartSimcard starts the server and waits until DIR/card is served.
func StartSimcard(ctx context.Context, opts SimcardOptions) (*Simcard, error) {
	if opts.Dir == "" {
		return nil, errors.New("simcard: no mount directory given")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simcard mount point: %w", err)
	}
	if _, err := flash.Lookup(opts.Profile); err != nil {
		return nil, fmt.Errorf("simcard: %w", err) // fail here, with the real message, not in the child
	}
	argv := opts.Command
	if len(argv) == 0 {
		// In a Go test binary /proc/self/exe has no "simcard serve" command: it would run the
		// whole test suite again, recursively, each copy making loop devices and mounts.
		if strings.HasSuffix(os.Args[0], ".test") {
			return nil, errors.New("simcard: set SimcardOptions.Command in tests (this executable is a test binary)")
		}
		argv = []string{"/proc/self/exe"}
	}
	args := append(append(append([]string(nil), argv[1:]...), serveArgs(opts)...), dir)
	// Not CommandContext: cancelling the run must not kill the server under a mounted
	// filesystem; the caller unmounts, detaches and then calls Stop.
	cmd := exec.Command(argv[0], args...)
	loopCalib := opts.PathOffset == "" || opts.PathOffset == "loop"
	serverMode := opts.PathOffset
	if loopCalib {
		serverMode = "external"
	}
	cmd.Env = append(append(os.Environ(), simcard.PathOffsetEnv+"="+serverMode), opts.Env...)
	s := &Simcard{dir: dir, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout = &s.stdout
	cmd.Stderr = &s.stderr
	if opts.Log != nil {
		cmd.Stderr = io.MultiWriter(&s.stderr, opts.Log)
	}
	// Its own process group: a Ctrl-C on the terminal reaches fsbench, which stops the
	// server in order (after unmounting and detaching), not the server at the same moment.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start simcard server %s: %w", argv[0], err)
	}
	go func() { s.waitErr = cmd.Wait(); close(s.done) }()
	if opts.OnStart != nil {
		if err := opts.OnStart(cmd.Process.Pid); err != nil {
			return nil, errors.Join(err, s.Stop())
		}
	}

	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	deadline := time.Now().Add(timeout)
	calibrated := !loopCalib
	for {
		if st, err := os.Stat(s.CardPath()); err == nil && st.Mode().IsRegular() && mounted(dir) {
			return s, nil
		}
		if !calibrated && mounted(dir) {
			calib := filepath.Join(dir, simcard.CalibrationFile)
			if st, err := os.Stat(calib); err == nil && st.Mode().IsRegular() {
				calibrated = true
				msg := "auto"
				if rt, err := calibrateThroughLoop(calib); err != nil {
					fmt.Fprintf(s.logw(opts.Log), "simcard: calibrating the path through a loop device: %v; the server measures the FUSE path alone\n", err)
				} else {
					msg = simcard.CalibrationMessage(rt.Offset(), rt.String())
					if opts.PathCalibration != nil {
						*opts.PathCalibration = rt
					}
				}
				if err := os.WriteFile(calib, []byte(msg), 0); err != nil {
					return nil, errors.Join(fmt.Errorf("simcard: hand the path calibration to the server: %w", err), s.Stop())
				}
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("simcard server exited before serving (%v): %s", s.waitErr, bytes.TrimSpace(s.stderr.Bytes()))
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), s.Stop())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("simcard server did not serve %s within %v: %s", s.CardPath(), timeout, bytes.TrimSpace(s.stderr.Bytes())), s.Stop())
		}
	}
}

// calibrateThroughLoop measures the round trip through a direct-I/O loop device over the
// server's calibration file: the kernel path between a tool on the loop device and the
// server, which the card's clock may start a request early by (see
// simcard.Card.SetPathOffset). The loop device is attached only for the measurement.
func calibrateThroughLoop(calib string) (rt simcard.RoundTrip, err error) {
	l, err := session.AttachLoop(calib, session.LoopOptions{DirectIO: true, ReadOnly: true})
	if err != nil {
		return rt, err
	}
	defer func() {
		if derr := l.Detach(); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	if !l.DirectIO {
		return rt, fmt.Errorf("%s over %s: the kernel refused direct I/O, so its round trips would be the page cache's", l.Path, calib)
	}
	return simcard.MeasureRoundTrip(l.Path, "a direct-I/O loop device over the FUSE file")
}

func (s *Simcard) logw(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// CardPath is the simulated card: attach a loop device to it (with DirectIO, so that the
// host page cache does not absorb the I/O the model should see).
func (s *Simcard) CardPath() string { return filepath.Join(s.dir, simcard.CardFile) }

// Dir is the mount point.
func (s *Simcard) Dir() string { return s.dir }

// Pid is the server's process id.
func (s *Simcard) Pid() int { return s.cmd.Process.Pid }

// Exited returns an error when the server is no longer running (it crashed, or was killed):
// the loop device's I/O then fails, which is not the tested filesystem's fault.
func (s *Simcard) Exited() error {
	select {
	case <-s.done:
		if s.stopped {
			return nil
		}
		return fmt.Errorf("the simulated card's server (pid %d) exited during the run (%v): %s", s.Pid(), s.waitErr, bytes.TrimSpace(s.stderr.Bytes()))
	default:
		return nil
	}
}

// Stats returns the card's counters: live from DIR/stats while the server runs, and the
// final ones it printed after Stop.
func (s *Simcard) Stats() (flash.Counters, error) {
	st, err := s.FullStats()
	return st.Counters, err
}

// FullStats is Stats with the server's extras (request sizes, time scale, real waiting).
func (s *Simcard) FullStats() (simcard.Stats, error) {
	var st simcard.Stats
	var data []byte
	var err error
	if s.stopped {
		data = s.stdout.Bytes()
		if len(data) == 0 {
			return st, fmt.Errorf("simcard server printed no final stats (%v): %s", s.waitErr, bytes.TrimSpace(s.stderr.Bytes()))
		}
	} else if data, err = os.ReadFile(filepath.Join(s.dir, simcard.StatsFile)); err != nil {
		return st, fmt.Errorf("read simcard stats: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("decode simcard stats: %w", err)
	}
	return st, nil
}

// Stop sends SIGTERM to the server (its pid only), waits for it to unmount and exit, and
// checks that the mount is gone. Detach loop devices over CardPath first: until then the
// kernel holds the file and the server waits (up to 20 s) for it. Stop is idempotent.
func (s *Simcard) Stop() error {
	var errs []error
	select {
	case <-s.done:
	default:
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("signal simcard server: %w", err))
		}
		select {
		case <-s.done:
		case <-time.After(40 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
			errs = append(errs, errors.New("simcard server did not exit within 40 s of SIGTERM; killed it"))
		}
	}
	if !s.stopped && s.waitErr != nil {
		errs = append(errs, fmt.Errorf("simcard server: %v: %s", s.waitErr, bytes.TrimSpace(s.stderr.Bytes())))
	}
	s.stopped = true
	if mounted(s.dir) {
		// The server died without unmounting (killed, crashed): the mount is a dead FUSE
		// connection ("Transport endpoint is not connected"). A plain umount fails with EBUSY
		// while a loop device still references the card file, so detach it lazily: it leaves
		// the namespace now and the kernel frees it when the last reference goes.
		if _, err := mountinfo.Unmount(context.Background(), s.dir, mountinfo.UnmountOptions{Detach: true}); err != nil {
			errs = append(errs, fmt.Errorf("lazy unmount of dead simcard mount %s: %w", s.dir, err))
		} else {
			errs = append(errs, fmt.Errorf("simcard server left %s mounted; detached it lazily", s.dir))
		}
	}
	if mounted(s.dir) {
		errs = append(errs, fmt.Errorf("%s is still mounted", s.dir))
	}
	return errors.Join(errs...)
}

// mounted reports whether dir is a mount point in this namespace.
func mounted(dir string) bool {
	f, err := os.Open(mountinfo.TablePath)
	if err != nil {
		return false
	}
	defer f.Close()
	ents, err := mountinfo.Parse(f)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.MountPoint == dir {
			return true
		}
	}
	return false
}

// syncBuffer is a bytes.Buffer safe for the exec copier goroutine and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.b.Bytes()...)
}

// simcardTarget serves the flash model as a file (FUSE, in a child process) and attaches a loop
// device with direct I/O over it: every request the filesystem sends reaches the card model.
type simcardTarget struct{ targets.Base }

// Check refuses a profile that does not load, a card size that is not a whole number of its
// allocation units, a time scale that is not a positive number, and a build without FUSE.
func (t *simcardTarget) Check(cfg plan.Config) error {
	if err := targets.CheckBlockSuite(cfg); err != nil {
		return err
	}
	if !simcard.FUSEAvailable {
		return plan.Refusef("--target %s: this build of fsbench has no FUSE card server (32-bit ARM): run the simulated card on a 64-bit machine", t.Spec())
	}
	return CheckCard(t.Spec().Profile, cfg.Size, t.Opt.TimeScale)
}

// CheckCard refuses a card profile that does not load, a size that is not a whole number of its
// allocation units, and a time scale that is not a positive finite number.
func CheckCard(profile string, size uint64, scale float64) error {
	p, err := flash.CardProfile(profile)
	if err != nil {
		return &plan.InputError{Err: fmt.Errorf("%w (fsbench simcard profiles lists the built-in ones)", err)}
	}
	if au := uint64(p.AUSize); au > 0 && size%au != 0 {
		return plan.Refusef("the simulated card %s has %s allocation units: give a --size that is a multiple of it (e.g. %s)",
			p.Name, bytesize.Format(au), bytesize.Format((size/au+1)*au))
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return plan.Refusef("--time-scale must be a positive number (1 = real time, 0.1 ten times faster), not %g", scale)
	}
	return nil
}

func (t *simcardTarget) Prepare(ctx context.Context, s *session.Session, cfg plan.Config) (*targets.Prepared, error) {
	cardDir := filepath.Join(s.Work, "simcard")
	data := filepath.Join(s.Work, "simcard.data")
	if err := targets.CheckRoom(s.Work, cfg.Size, "the simulated card's data file"); err != nil {
		return nil, err
	}
	if err := s.Mountpoint(cardDir); err != nil {
		return nil, err
	}
	// The server creates the data file (sparse, the card's size) in the run's new work
	// directory; it is recorded, with its identity, once the server made it.
	s.OnClose("simulated card data "+data, func() error { return targets.RemoveFile(data) })
	card, err := StartSimcard(ctx, SimcardOptions{
		Profile: t.Spec().Profile, Size: cfg.Size, Dir: cardDir, Backing: data, TimeScale: t.Opt.TimeScale,
		EnduranceScale: t.Opt.EnduranceScale,
		Command:        t.Opt.Self,
		OnStart:        func(pid int) error { return s.Ledger.AddProcess(pid, "simulated card server", true) },
	})
	if err != nil {
		return nil, err
	}
	s.OnClose("simulated card server", func() error {
		if err := card.Stop(); err != nil {
			return fmt.Errorf("stopping the simulated card: %w", err)
		}
		return s.Ledger.RemoveProcess(card.Pid())
	})
	if err := s.Ledger.AddFile(data); err != nil {
		return nil, err
	}
	t.Opt.Logf("simulated card %s (%s) served at %s, modelled waits × %g", t.Spec().Profile, bytesize.Format(cfg.Size), card.CardPath(), t.Opt.TimeScale)
	prof := t.Spec().Profile
	p := &targets.Prepared{Size: cfg.Size, Backing: data,
		Result: results.Target{Kind: results.KindSimcard, CardVia: results.CardOnLoop, Profile: prof, CardProfile: ProfileName(prof), TimeScale: t.Opt.TimeScale,
			EnduranceScale: t.Opt.EnduranceScale}}
	// The path calibration the server settled on, for results.json.
	if st, err := card.FullStats(); err == nil {
		p.Result.PathOffsetNs, p.Result.PathCalibration = st.PathOffsetNs, st.PathCalibration
	}
	p.Underlying = card.CardPath()
	if err := targets.AttachLoopTo(s, card.CardPath(), !t.Opt.NoDirectIO, p); err != nil {
		return nil, err
	}
	p.Extra = &Card{server: card, profile: prof, cut: &cutCard{s: s, dir: card.Dir()}}
	p.Health = func() error {
		if err := card.Exited(); err != nil {
			return err
		}
		return targets.BackingHealth(s.Work, "simulated card's data file")
	}
	return p, nil
}

// ProfileName is the name of the card profile spec (a built-in name or a profile file): the
// name its traces' replays are keyed by, which results record as the card to rate on
// (results.Target.CardProfile). A profile that does not load keeps the name it was given
// (CheckCard refuses it before a run).
func ProfileName(spec string) string {
	p, err := flash.CardProfile(spec)
	if err != nil {
		return spec
	}
	return p.Name
}

// Card is what the simulated card yields beyond its loop device (targets.Prepared.Extra): its
// counters, its profile and its power cuts. The engine asks for each by an interface of its
// own (internal/runner/kinddata.go), so that package targets knows nothing of cards.
type Card struct {
	server  *Simcard
	profile string
	cut     *cutCard
}

// CardStats reads the card's counters and its server's overhead.
func (c *Card) CardStats() (simcard.Stats, error) { return c.server.FullStats() }

// CardProfile is the card's profile as the target names it (a built-in name or a profile
// file), which the run's block traces are replayed through too.
func (c *Card) CardProfile() string { return c.profile }

// PowerCutCard records the card's request stream and builds the card after a power cut (the
// powercut suite).
func (c *Card) PowerCutCard() powercut.Card { return c.cut }

// EnduranceCard drives the card's wear (the endurance suite): a fresh card for each variant,
// its state saved and restored for a resumed run.
func (c *Card) EnduranceCard() endurance.Card { return wearCard{dir: c.server.Dir()} }

// wearCard drives the simulated card's wear through its wear file (simcard.WearFile).
type wearCard struct{ dir string }

var _ endurance.Card = wearCard{}

func (w wearCard) command(line string) error {
	f, err := os.OpenFile(filepath.Join(w.dir, simcard.WearFile), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("simulated card's wear file: %w", err)
	}
	_, err = f.Write([]byte(line))
	f.Close()
	if err != nil {
		if st, serr := w.status(); serr == nil && st.Error != "" {
			return fmt.Errorf("simulated card: %s: %s", strings.Fields(line)[0], st.Error)
		}
		return fmt.Errorf("simulated card: %s: %w", line, err)
	}
	return nil
}

func (w wearCard) status() (simcard.WearStatus, error) {
	var st simcard.WearStatus
	b, err := os.ReadFile(filepath.Join(w.dir, simcard.WearFile))
	if err != nil {
		return st, fmt.Errorf("read the simulated card's wear: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("decode the simulated card's wear: %w", err)
	}
	return st, nil
}

// Renew puts a fresh card in, its blocks drawn with seed (at the card's endurance scale).
func (w wearCard) Renew(seed uint64) error { return w.command(fmt.Sprintf("renew %d", seed)) }

// Status is the card's wear now.
func (w wearCard) Status() (endurance.Status, error) {
	st, err := w.status()
	return endurance.Status{WearOut: st.WearOut, Behaviour: st.EndOfLife.Behaviour, HostBytesWritten: st.HostBytesWritten}, err
}

// Save and Restore write the card into a directory and make it that card again (the server
// does the work: the directory must be one it can reach, in the results directory).
func (w wearCard) Save(dir string) error    { return w.command("save " + dir) }
func (w wearCard) Restore(dir string) error { return w.command("restore " + dir) }

// cutCard drives the simulated card's power-cut machinery through its powercut file and
// attaches loop devices over its cut file, each recorded in the session's ledger so that a
// killed run's cleanup detaches them.
type cutCard struct {
	s      *session.Session
	dir    string
	stream string // the recording's directory, in the session's work directory
}

var _ powercut.Card = (*cutCard)(nil)

func (c *cutCard) command(line string) error {
	f, err := os.OpenFile(filepath.Join(c.dir, simcard.PowerCutFile), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("simulated card's powercut file: %w", err)
	}
	_, err = f.Write([]byte(line))
	f.Close()
	if err != nil {
		if st, serr := c.status(); serr == nil && st.Error != "" {
			return fmt.Errorf("simulated card: %s: %s", strings.Fields(line)[0], st.Error)
		}
		return fmt.Errorf("simulated card: %s: %w", line, err)
	}
	return nil
}

func (c *cutCard) status() (simcard.PowerCutStatus, error) {
	var st simcard.PowerCutStatus
	b, err := os.ReadFile(filepath.Join(c.dir, simcard.PowerCutFile))
	if err != nil {
		return st, fmt.Errorf("read the simulated card's powercut status: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("decode the simulated card's powercut status: %w", err)
	}
	return st, nil
}

// Record makes the recording's directory beside the card's data file (on disk: it holds a
// copy of the card and every byte written during the workload), recorded in the ledger.
func (c *cutCard) Record(limit uint64) (string, error) {
	if err := c.removeStream(); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(c.s.Work, "powercut-")
	if err != nil {
		return "", fmt.Errorf("directory for the card's write stream: %w", err)
	}
	if err := c.s.Ledger.AddTree(dir); err != nil {
		return "", errors.Join(err, os.RemoveAll(dir))
	}
	c.stream = dir
	if err := targets.CheckRoom(dir, limit/2, "the card's copy and write stream"); err != nil {
		return "", err
	}
	return dir, c.command(fmt.Sprintf("record %s %d", dir, limit))
}

func (c *cutCard) removeStream() error {
	if c.stream == "" {
		return nil
	}
	if err := os.RemoveAll(c.stream); err != nil {
		return fmt.Errorf("remove the card's write stream: %w", err)
	}
	err := c.s.Ledger.RemoveTree(c.stream)
	c.stream = ""
	return err
}

// Pos, Stop, Reset, Cut and Close carry out powercut.Card's methods through the card's
// powercut file (see simcard.PowerCutCommand).
func (c *cutCard) Pos() (uint64, error) {
	st, err := c.status()
	return st.Pos, err
}

func (c *cutCard) Stop() error  { return c.command("stop") }
func (c *cutCard) Reset() error { return c.command("reset") }
func (c *cutCard) Close() error { return errors.Join(c.command("close"), c.removeStream()) }

func (c *cutCard) Cut(cut powercut.Cut, mergeLoss bool) (powercut.Outcome, error) {
	line := fmt.Sprintf("cut %d %d", cut.Pos, cut.Seed)
	if mergeLoss {
		line += " merge-loss"
	}
	if err := c.command(line); err != nil {
		return powercut.Outcome{}, err
	}
	st, err := c.status()
	if err != nil {
		return powercut.Outcome{}, err
	}
	if st.Outcome == nil {
		return powercut.Outcome{}, errors.New("simulated card built no cut")
	}
	o := *st.Outcome
	o.Cut.Kind = cut.Kind
	return o, nil
}

// Attach attaches a loop device (direct I/O: no page cache between the filesystem and the
// cut) over the cut file, recorded in the ledger first so a killed run still detaches it.
func (c *cutCard) Attach(ctx context.Context) (string, func() error, error) {
	file := filepath.Join(c.dir, simcard.CutFile)
	l, err := session.AttachLoop(file, session.LoopOptions{DirectIO: true})
	if err != nil {
		return "", nil, fmt.Errorf("loop device over the cut: %w", err)
	}
	if err := c.s.Ledger.AddLoop(l.Path, file); err != nil {
		return "", nil, errors.Join(err, l.Detach())
	}
	detach := func() error {
		if err := l.Detach(); err != nil {
			return err
		}
		return c.s.Ledger.RemoveLoop(l.Path)
	}
	return l.Path, detach, nil
}
