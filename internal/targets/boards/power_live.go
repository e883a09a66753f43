package boards

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/remote"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	pcsuite "github.com/fsbench/fsbench/internal/suites/powercut"
)

// A live power-cut campaign: --suite powercut on a board whose power fsbench can switch (a
// labgrid place's power resource, or --power-off/--power-on commands). Per variant the
// filesystem is made once; then, per cut: the workload runs on the board, streaming its
// promises to this host (powercut.Promises); at a seeded random moment the power goes off;
// it comes on again and the board is waited for; the board's fsbench mounts the filesystem
// (the recovery time), verifies every promise the host heard, runs the checker and, where it
// fails, the repair (pcsuite.CutChecker, the simulated card's check); the host records the cut
// and goes on. A board that does not come back is power-cycled again; if it still does not,
// the cut is marked lost and the campaign goes on. Every cut is kept in the results directory
// (powercut-live/) as it is made: a rerun with the same results directory (-o) resumes.

// LiveDir is the directory of the results directory that holds each variant's campaign.
const LiveDir = "powercut-live"

// lostInARow is how many cuts in a row the board may fail to come back after before the
// variant's campaign stops: a board that is dead is not cut for hours.
const lostInARow = 3

// liveState is one variant's campaign as it stands, written after every cut.
type liveState struct {
	Variant string            `json:"variant"`
	Made    bool              `json:"made"` // the filesystem was made on the device
	Cuts    []pcsuite.LiveCut `json:"cuts"`
	Resumed int               `json:"resumed,omitempty"`
	Error   string            `json:"error,omitempty"`
}

func liveStatePath(dir string, i int, v plan.Variant) string {
	return filepath.Join(dir, LiveDir, fmt.Sprintf("%02d-%s.json", i+1, sanitize(v.Name)))
}

func loadLiveState(p string, v plan.Variant) (*liveState, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return &liveState{Variant: v.Name}, nil
	}
	if err != nil {
		return nil, err
	}
	var st liveState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w (remove it to start that variant's cuts again)", p, err)
	}
	if st.Variant != v.Name {
		return nil, &plan.InputError{Err: fmt.Errorf("%s holds the cuts of variant %q, not %q: give -o another directory", p, st.Variant, v.Name)}
	}
	return &st, nil
}

func (st *liveState) save(p string) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// LiveResumable reports whether dir holds a live power-cut campaign that a rerun takes up again.
func LiveResumable(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, LiveDir, "*.json"))
	return len(m) > 0
}

// Resumes is true when dir holds a campaign of this board's power cuts: the runner then lets
// the rerun into the results directory, and the campaign goes on from its last cut.
func (t *sshTarget) Resumes(dir string) bool {
	return t.opt.Config.Suite.Has(plan.PowerCutSuite) && LiveResumable(dir)
}

// liveCampaign is the campaign on one board.
type liveCampaign struct {
	t    *sshTarget
	sw   powerSwitch
	wait func(ctx context.Context) error // returns once the board's SSH server answers
	ses  *session.Session
	req  plan.Request
	dev  string
	bin  string
	// facts are the board's, from the first connection.
	facts remote.BoardFacts
	up    bool
	lost  int // cuts in a row after which the board did not come back
}

// runLive carries out the campaign for every variant of req and returns its results, saved
// in s.Dir after every cut.
func (t *sshTarget) runLive(ctx context.Context, s *session.Session, req plan.Request, sw powerSwitch, wait func(context.Context) error) (*results.Run, error) {
	c := &liveCampaign{t: t, sw: sw, wait: wait, ses: s, req: req, dev: t.spec.Inner.Device}
	cfg := req.Config
	t.opt.Logf("suite powercut on a board: one campaign of %d cuts per variant, the board's power switched by %s (repetitions do not apply: a campaign's cuts are its trials)",
		pcsuite.ParamsOf(cfg.Params).Cuts, sw.Name())
	run := c.newRun()
	states := make([]*liveState, len(cfg.Variants))
	for i, v := range cfg.Variants {
		st, err := loadLiveState(liveStatePath(s.Dir, i, v), v)
		if err != nil {
			return nil, err
		}
		if len(st.Cuts) > 0 || st.Made {
			st.Resumed++
			t.opt.Logf("powercut %s: resuming after cut %d of %d", v.Name, len(st.Cuts), pcsuite.ParamsOf(cfg.Params).Cuts)
		}
		states[i] = st
	}
	save := func() error {
		c.fill(run, states)
		return results.Save(s.Dir, run)
	}
	if err := c.boot(ctx); err != nil {
		run.Status, run.Error = results.RunFailed, err.Error()
		return run, errors.Join(err, save())
	}
	var runErr error
	for i, v := range cfg.Variants {
		st := states[i]
		st.Error = ""
		err := c.variant(ctx, i, v, st, save)
		if err != nil {
			if ctx.Err() != nil {
				runErr = err
				break
			}
			st.Error = err.Error()
			t.opt.Logf("powercut %s: %v; the campaign goes on with the next variant", v.Name, err)
			if serr := st.save(liveStatePath(s.Dir, i, v)); serr != nil {
				return run, errors.Join(err, serr)
			}
		}
	}
	switch {
	case ctx.Err() != nil:
		run.Status = results.RunInterrupted
	default:
		run.Status = results.RunComplete
	}
	run.Finished = time.Now()
	if err := save(); err != nil {
		return run, errors.Join(runErr, err)
	}
	return run, runErr
}

// variant makes the variant's filesystem once and its cuts, from the first one not made yet.
func (c *liveCampaign) variant(ctx context.Context, i int, v plan.Variant, st *liveState, save func() error) error {
	p := liveStatePath(c.ses.Dir, i, v)
	want := pcsuite.ParamsOf(c.req.Config.Params).Cuts
	if !st.Made {
		if err := c.ensureUp(ctx); err != nil {
			return err
		}
		c.t.opt.Logf("powercut %s: making the filesystem on %s", v.Name, c.dev)
		if err := c.agent(ctx, AgentJob{Action: AgentMkfs}, v, nil); err != nil {
			return fmt.Errorf("mkfs: %w", err)
		}
		st.Made = true
		if err := st.save(p); err != nil {
			return err
		}
	}
	for n := len(st.Cuts) + 1; n <= want; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		cut, err := c.cut(ctx, i, v, n)
		if err != nil {
			return fmt.Errorf("cut %d: %w", n, err)
		}
		st.Cuts = append(st.Cuts, cut)
		if err := errors.Join(st.save(p), save()); err != nil {
			return err
		}
		c.t.opt.Logf("powercut %s: cut %d of %d: %s", v.Name, n, want, describeLiveCut(cut))
		if cut.Lost {
			c.lost++
			if c.lost >= lostInARow {
				return fmt.Errorf("the board did not come back after %d cuts in a row, even power-cycled again: stopping this variant's campaign", c.lost)
			}
			continue
		}
		c.lost = 0
		if !cut.Usable || cut.Repair == fs.FsckUnrecoverable {
			c.t.opt.Logf("powercut %s: the filesystem could not be repaired: making it again for the next cuts", v.Name)
			if err := c.agent(ctx, AgentJob{Action: AgentMkfs}, v, nil); err != nil {
				return fmt.Errorf("mkfs after an unrecoverable cut: %w", err)
			}
			st.Cuts[len(st.Cuts)-1].Remade = true
			if err := st.save(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// cutSeed seeds the moment of cut n of variant i, and its workload.
func (c *liveCampaign) cutSeed(i, n int) uint64 {
	return pcsuite.ParamsOf(c.req.Config.Params).Seed*1_000_000 + uint64(i)*1000 + uint64(n)
}

// cut makes one cut: the workload until a seeded moment, the power off, on again, the board
// waited for, the filesystem checked there.
func (c *liveCampaign) cut(ctx context.Context, i int, v plan.Variant, n int) (pcsuite.LiveCut, error) {
	t0 := time.Now()
	seed := c.cutSeed(i, n)
	rec := pcsuite.LiveCut{N: n, Seed: seed}
	if !c.up {
		// The last cut's board did not come back: another power cycle before this one.
		secs, recycled, lost, err := c.powerCycle(ctx)
		if err != nil {
			return rec, err
		}
		rec.BootSeconds, rec.Recycled = secs, recycled
		if lost {
			rec.Lost, rec.CutSeconds = true, time.Since(t0).Seconds()
			return rec, nil
		}
	}
	params := pcsuite.ParamsOf(c.req.Config.Params)
	spec := powercut.Spec{Seed: seed, Ops: params.Ops}
	p, workSecs, err := c.workloadUntilCut(ctx, v, spec, seed)
	if err != nil {
		return rec, err
	}
	rec.Pos, rec.Acks, rec.Ops, rec.InFlight, rec.WorkloadSeconds = p.Freeze(), p.Acks(), p.Ops(), p.InFlight() > 0, workSecs
	secs, recycled, lost, err := c.powerOn(ctx)
	if err != nil {
		return rec, err
	}
	rec.BootSeconds, rec.Recycled = secs, rec.Recycled || recycled
	if lost {
		rec.Lost, rec.CutSeconds = true, time.Since(t0).Seconds()
		return rec, nil
	}
	var checked pcsuite.LiveCut
	if err := c.agent(ctx, AgentJob{Action: AgentCheck, Manifest: p.Manifest(), Pos: rec.Pos}, v, &checked); err != nil {
		return rec, fmt.Errorf("checking the filesystem after the cut: %w", err)
	}
	checked.N, checked.Seed, checked.Pos, checked.Acks, checked.Ops, checked.InFlight = rec.N, rec.Seed, rec.Pos, rec.Acks, rec.Ops, rec.InFlight
	checked.WorkloadSeconds, checked.BootSeconds, checked.Recycled = rec.WorkloadSeconds, rec.BootSeconds, rec.Recycled
	checked.CutSeconds = time.Since(t0).Seconds()
	return checked, nil
}

// workloadUntilCut runs the workload on the board and switches the power off at the cut's
// moment: during operation k (seeded), after a seeded share of the time an operation has taken
// so far; or, when the workload ends first, that long after its end, on an idle board. It
// returns the promises the host heard and how long the workload ran until the cut.
func (c *liveCampaign) workloadUntilCut(ctx context.Context, v plan.Variant, spec powercut.Spec, seed uint64) (*powercut.Promises, float64, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6c697665))
	ops := max(spec.Ops, 1)
	k, frac := rng.IntN(ops), rng.Float64()
	job := c.job(AgentJob{Action: AgentWorkload, Spec: spec}, v)
	line, err := json.Marshal(job)
	if err != nil {
		return nil, 0, err
	}
	cmd := c.t.ssh.Command(nil, remote.Shq(c.bin)+" powercut-agent")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("starting ssh: %w", err)
	}
	if err := c.ses.Ledger.AddProcess(cmd.Process.Pid, "ssh to the board (powercut workload)", true); err != nil {
		c.t.opt.Logf("warning: %v", err)
	}
	defer c.ses.Ledger.RemoveProcess(cmd.Process.Pid)
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, 0, fmt.Errorf("handing the workload to the board: %w", err)
	}
	p := powercut.NewPromises(spec.Seed)
	cutNow := make(chan struct{})
	var once sync.Once
	var start, last time.Time
	var opTime time.Duration
	var opsSeen int
	schedule := func(d time.Duration) {
		time.AfterFunc(d, func() { once.Do(func() { p.Freeze(); close(cutNow) }) })
	}
	triggered := false
	onEvent := func(e powercut.Event) {
		now := time.Now()
		switch e.E {
		case powercut.EventReady:
			start, last = now, now
		case powercut.EventIntent:
			if opsSeen > 0 {
				opTime += now.Sub(last)
			}
			last = now
			opsSeen++
			if !triggered && e.N >= k {
				triggered = true
				schedule(time.Duration(frac * float64(meanOp(opTime, opsSeen))))
			}
		case powercut.EventEnd:
			if !triggered {
				triggered = true
				schedule(time.Duration(frac * float64(meanOp(opTime, opsSeen))))
			}
		}
	}
	followed := make(chan error, 1)
	go func() {
		followed <- powercut.Follow(stdout, stdin, p, onEvent, func(l string) { c.t.opt.Logf("[%s] %s", c.t.spec.Host, l) })
	}()
	select {
	case <-cutNow:
		worked := time.Since(start).Seconds()
		if start.IsZero() {
			worked = 0
		}
		err := c.sw.Set(ctx, false)
		c.up = false
		// The board is off: its SSH session is dead, whatever the client still believes.
		cmd.Process.Kill()
		<-followed
		cmd.Wait()
		if err != nil {
			return nil, 0, fmt.Errorf("switching the power off: %w", err)
		}
		return p, worked, nil
	case ferr := <-followed:
		werr := cmd.Wait()
		msg := strings.TrimSpace(stderr.String())
		return nil, 0, fmt.Errorf("the workload on the board ended before the cut (%v, %v)%s", ferr, werr, remote.Prefixed(": ", msg))
	case <-ctx.Done():
		// The end of its input stops the board's workload; it unmounts and exits.
		stdin.Close()
		select {
		case <-followed:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
		}
		cmd.Wait()
		return nil, 0, ctx.Err()
	}
}

// meanOp is the mean time of an operation so far (a tenth of a second before there is one).
func meanOp(total time.Duration, ops int) time.Duration {
	if ops < 2 {
		return 100 * time.Millisecond
	}
	return total / time.Duration(ops-1)
}

// boot brings the board up at the start of the campaign (or its resumption): power on, and
// wait for its SSH server; then fsbench is put on it.
func (c *liveCampaign) boot(ctx context.Context) error {
	_, _, lost, err := c.powerOn(ctx)
	if err != nil {
		return err
	}
	if lost {
		return fmt.Errorf("the board did not answer after its power came on, nor after a second power cycle (%s, --boot-timeout %s)", c.sw.Name(), c.bootTimeout())
	}
	return nil
}

// ensureUp brings a board that is off up again.
func (c *liveCampaign) ensureUp(ctx context.Context) error {
	if c.up {
		return nil
	}
	return c.boot(ctx)
}

func (c *liveCampaign) bootTimeout() time.Duration {
	if c.req.BootTimeout > 0 {
		return c.req.BootTimeout
	}
	return 5 * time.Minute
}

// powerOn switches the power on and waits for the board; when it does not come back, it
// power-cycles it once more (recycled). lost: it did not come back either way. err: the power
// switch itself failed, which ends the campaign.
func (c *liveCampaign) powerOn(ctx context.Context) (bootSecs float64, recycled, lost bool, err error) {
	t0 := time.Now()
	if err := c.sw.Set(ctx, true); err != nil {
		return 0, false, false, fmt.Errorf("switching the power on: %w", err)
	}
	if werr := c.waitUp(ctx); werr == nil {
		return time.Since(t0).Seconds(), false, false, nil
	} else if ctx.Err() != nil {
		return 0, false, false, ctx.Err()
	} else {
		c.t.opt.Logf("powercut: the board did not come back (%v): power-cycling it again", werr)
	}
	secs, lost, err := c.cycleOnce(ctx)
	return secs, true, lost, err
}

// powerCycle switches the board off and on and waits for it, twice at most.
func (c *liveCampaign) powerCycle(ctx context.Context) (bootSecs float64, recycled, lost bool, err error) {
	secs, lost, err := c.cycleOnce(ctx)
	if err != nil || !lost {
		return secs, false, lost, err
	}
	c.t.opt.Logf("powercut: the board did not come back: power-cycling it again")
	secs, lost, err = c.cycleOnce(ctx)
	return secs, true, lost, err
}

// cycleOnce is one power cycle and the wait for the board.
func (c *liveCampaign) cycleOnce(ctx context.Context) (bootSecs float64, lost bool, err error) {
	if err := c.sw.Set(ctx, false); err != nil {
		return 0, false, fmt.Errorf("switching the power off: %w", err)
	}
	c.up = false
	// A real supply's capacitors hold the board for a moment: off long enough to be off.
	select {
	case <-ctx.Done():
		return 0, false, ctx.Err()
	case <-time.After(2 * time.Second):
	}
	t0 := time.Now()
	if err := c.sw.Set(ctx, true); err != nil {
		return 0, false, fmt.Errorf("switching the power on: %w", err)
	}
	if werr := c.waitUp(ctx); werr != nil {
		if ctx.Err() != nil {
			return 0, false, ctx.Err()
		}
		c.t.opt.Logf("powercut: the board did not come back after a power cycle: %v", werr)
		return time.Since(t0).Seconds(), true, nil
	}
	return time.Since(t0).Seconds(), false, nil
}

// waitUp waits for the board's SSH server, then puts fsbench on the board (a board whose
// /var/tmp is in RAM lost it with its power) and reads its facts.
func (c *liveCampaign) waitUp(ctx context.Context) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	var err error
	// An SSH server that just started may refuse the first session for a moment.
	for try := 0; try < 3; try++ {
		var facts remote.BoardFacts
		if c.bin, facts, err = c.t.connect(ctx); err == nil {
			if c.facts.Hostname == "" {
				c.facts = facts
			}
			c.up = true
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(3 * time.Second):
		}
	}
	return err
}

// job fills in what every agent job of variant v carries.
func (c *liveCampaign) job(j AgentJob, v plan.Variant) AgentJob {
	j.Device, j.Dir, j.FS, j.Mkfs, j.Mount = c.dev, path.Join(c.t.remoteDir(), "powercut"), v.FS, v.MkfsArgs, v.MountOptions
	return j
}

// agent runs one job on the board and decodes its answer into out (nil: none expected).
func (c *liveCampaign) agent(ctx context.Context, j AgentJob, v plan.Variant, out any) error {
	line, err := json.Marshal(c.job(j, v))
	if err != nil {
		return err
	}
	b, err := c.t.ssh.Run(ctx, remote.Shq(c.bin)+" powercut-agent", bytes.NewReader(append(line, '\n')))
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the board's answer: %w: %q", err, firstLine(b))
	}
	return nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}

// describeLiveCut is a cut in one line, for the log.
func describeLiveCut(c pcsuite.LiveCut) string {
	if c.Lost {
		return "the board did not come back, even power-cycled again: marked lost"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "after %.1f s of workload (%d operations, %d acknowledgements heard", c.WorkloadSeconds, c.Ops, c.Acks)
	if c.InFlight {
		b.WriteString(", one in flight")
	}
	fmt.Fprintf(&b, "); back after %.1f s", c.BootSeconds)
	if c.Recycled {
		b.WriteString(" (power-cycled again)")
	}
	if c.Mounted {
		fmt.Fprintf(&b, "; mounted in %.2f s", c.RecoverySeconds)
	} else {
		b.WriteString("; did not mount")
	}
	fmt.Fprintf(&b, ", checker %s", c.Fsck)
	if c.Repair != "" {
		fmt.Fprintf(&b, ", repair %s", c.Repair)
	}
	fmt.Fprintf(&b, ", %d broken promises", c.Check.Violations())
	if c.Whole() {
		b.WriteString(": whole")
	} else if len(c.Check.Problems) > 0 {
		fmt.Fprintf(&b, "; first: %s", c.Check.Problems[0])
	}
	return b.String()
}

// newRun starts the campaign's results.
func (c *liveCampaign) newRun() *results.Run {
	cfgJSON, _ := json.Marshal(c.req.Config)
	r := &results.Run{Schema: results.Schema, Tool: results.Tool{Name: "fsbench", GoVersion: runtime.Version()},
		Status: results.RunRunning, Started: time.Now(), Config: cfgJSON, Measurements: []results.Measurement{},
		Target:  results.Target{Kind: results.KindDevice, Device: c.dev},
		Methods: map[string]string{"powercut": "live power cuts: the board's power switched off (" + c.sw.Name() + ") at a seeded moment of the workload, which streamed its promises to this host; the filesystem checked on the board after it came back (docs/powercut.md, Boards and relays)"}}
	for _, v := range c.req.Config.Variants {
		r.Variants = append(r.Variants, results.Variant{Name: v.Name, FS: v.FS, MkfsArgs: v.MkfsArgs, MountOptions: v.MountOptions, Status: results.OK})
	}
	return r
}

// fill puts the campaign's figures so far into r: one measurement per variant with cuts.
func (c *liveCampaign) fill(r *results.Run, states []*liveState) {
	f := c.facts
	r.Machine = results.Machine{Hostname: f.Hostname, Arch: f.Arch, Kernel: f.KernelRelease, OS: f.OS, MemBytes: f.MemBytes}
	r.Remote = &results.Remote{Target: c.t.spec.String(), Hostname: f.Hostname, Model: f.Model, Compatible: f.Compatible,
		Arch: f.Arch, KernelRelease: f.KernelRelease, OS: f.OS}
	r.Measurements = r.Measurements[:0]
	want := pcsuite.ParamsOf(c.req.Config.Params).Cuts
	for _, st := range states {
		if len(st.Cuts) == 0 {
			if st.Error != "" {
				r.Measurements = append(r.Measurements, results.Measurement{Variant: st.Variant, Test: pcsuite.Test, Rep: 1,
					Status: results.Failed, Error: st.Error})
			}
			continue
		}
		pc := pcsuite.SummarizeLive(st.Cuts, c.sw.Name())
		pc.Live.Resumed = st.Resumed
		m := results.Measurement{Variant: st.Variant, Test: pcsuite.Test, Rep: 1, Status: results.OK, Unit: catalog.Percent,
			PowerCut: &pc, Value: &pc.Safe.Pct}
		for _, cut := range st.Cuts {
			m.WallSeconds += cut.CutSeconds
		}
		m.Extra = map[string]float64{"cuts": float64(pc.Cuts), "lost_cuts": float64(pc.Live.Lost), "in_flight_cuts": float64(pc.Live.InFlight),
			"torn_renames": float64(pc.TornRenames), "acked_lost": float64(pc.AckedLost + pc.AckedCorrupt + pc.AckedUnreadable),
			"ack_loss_pct": pc.AckLossCuts.Pct, "mount_without_repair_pct": pc.MountWithoutRepair.Pct, "fsck_clean_pct": pc.FsckClean.Pct,
			"unrecoverable_pct": pc.Unrecoverable.Pct, "recovery_p50_s": pc.RecoveryP50Seconds, "recovery_max_s": pc.RecoveryMaxSeconds,
			"cuts_per_hour": pc.Live.CutsPerHour, "boot_p50_s": pc.Live.BootP50Seconds}
		var notes []string
		if n := len(st.Cuts); n < want {
			notes = append(notes, fmt.Sprintf("%d of %d cuts made", n, want))
		}
		if st.Error != "" {
			notes = append(notes, "stopped: "+st.Error)
		}
		if pc.Live.Lost > 0 {
			notes = append(notes, fmt.Sprintf("%d cuts lost: the board did not come back, even power-cycled again", pc.Live.Lost))
		}
		m.Note = strings.Join(notes, "; ")
		r.Measurements = append(r.Measurements, m)
	}
}
