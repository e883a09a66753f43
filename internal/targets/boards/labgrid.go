package boards

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/remote"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
)

// labgridTarget is a place of a labgrid farm: it acquires the place, reads how its board is
// reached over remote.SSH from the place's NetworkService, runs there exactly as --target ssh://
// does (by composition: an sshTarget made for that address), and releases the place when the
// run ends, fails or is interrupted, or, after a kill, when the ledger is cleaned up.
type labgridTarget struct {
	spec plan.TargetSpec
	opt  targets.Options
}

func (t *labgridTarget) Spec() plan.TargetSpec { return t.spec }

// Resumes is true when dir holds a live power-cut campaign of the place's board.
func (t *labgridTarget) Resumes(dir string) bool {
	return t.opt.Config.Suite.Has(plan.PowerCutSuite) && LiveResumable(dir)
}
func (t *labgridTarget) Caps() targets.Capability { return targets.RemoteRunner }

// Check refuses what no board can do, as the ssh target does; the board itself is only known
// once the place is acquired.
func (t *labgridTarget) Check(cfg plan.Config) error {
	return t.inner(t.spec.Place, 0, "").Check(cfg)
}

// inner is the ssh target for the board at host:port. It connects there, but its spec is the
// labgrid one, with the place as its Host: the results say labgrid:PLACE, the ssh target's
// messages (fsbench fetch TARGET RUN, ...) name the place, and its progress lines are
// remote.Prefixed [PLACE].
func (t *labgridTarget) inner(host string, port int, user string) *sshTarget {
	in := newSSHTarget(plan.TargetSpec{Kind: plan.TargetSSH, Host: host, Port: port, User: user, Inner: t.spec.Inner}, t.opt)
	in.spec = t.spec
	in.spec.Host = t.spec.Place
	return in
}

// Run acquires the place, runs on its board and releases the place.
func (t *labgridTarget) Run(ctx context.Context, s *session.Session, req plan.Request) (*results.Run, error) {
	place := t.spec.Place
	lg, err := remote.NewLabgrid(t.opt.LabgridCoordinator, t.opt.LabgridClient)
	if err != nil {
		return nil, err
	}
	t.opt.Logf("labgrid: acquiring place %s at %s", place, lg.Coordinator)
	// Recorded before it is acquired, so that a kill at any moment from here leaves a record;
	// until the owner is known, a cleanup releases it only if it still looks like ours.
	rec := session.PlaceRecord{Client: lg.Program, Coordinator: lg.Coordinator, Place: place}
	if err := s.Ledger.AddPlace(rec); err != nil {
		return nil, err
	}
	if err := lg.Acquire(ctx, place); err != nil {
		s.Ledger.RemovePlace(rec)
		return nil, err
	}
	s.OnClose("labgrid place "+place, func() error {
		// A fresh context: this runs after Ctrl-C too, which cancelled the run's.
		ctx, cancel := context.WithTimeout(context.Background(), remote.LabgridTimeout)
		defer cancel()
		if err := lg.Release(ctx, place); err != nil {
			return fmt.Errorf("releasing labgrid place %s: %w (labgrid-client -x %s -p %s release)", place, err, lg.Coordinator, place)
		}
		t.opt.Logf("labgrid: released place %s", place)
		return s.Ledger.RemovePlace(rec)
	})
	p, err := lg.Show(ctx, place)
	if err != nil {
		return nil, err
	}
	owned := rec
	owned.Owner, owned.Changed = p.Acquired, p.Changed
	if err := s.Ledger.UpdatePlace(rec, owned); err != nil {
		return nil, err
	}
	rec = owned
	ns, err := p.NetworkService()
	if err != nil {
		return nil, &plan.InputError{Err: err}
	}
	in := t.inner(ns.Address, ns.Port, ns.User)
	if ns.Proxy != "" {
		in.ssh.Options = append(in.ssh.Options, "-o", "ProxyJump="+ns.Proxy)
	}
	t.opt.Logf("labgrid: place %s is the board %s", place, in.ssh.Dest())
	var r *results.Run
	if req.Config.Suite.Has(plan.PowerCutSuite) {
		if !p.HasPower() {
			return nil, &plan.InputError{Err: fmt.Errorf("suite powercut: place %s has no power resource (a NetworkPowerPort, PDUDaemonPort, ... in its exporter) for fsbench to cut the board's power with", place)}
		}
		r, err = in.runLive(ctx, s, req, labgridPower{lg: lg, place: place}, func(ctx context.Context) error { return in.waitSSH(ctx, in.bootTimeout()) })
	} else if t.opt.PowerCycle {
		if !p.HasPower() {
			return nil, &plan.InputError{Err: fmt.Errorf("--power-cycle: place %s has no power resource (a NetworkPowerPort, PDUDaemonPort, ... in its exporter)", place)}
		}
		cycle := func() error {
			t.opt.Logf("labgrid: power-cycling place %s", place)
			if err := lg.Power(ctx, place, "cycle"); err != nil {
				return err
			}
			if err := remote.WaitBoard(ctx, ns, in.ssh.Program, t.opt.SSHOptions, t.opt.BootTimeout); err != nil {
				return fmt.Errorf("place %s after its power cycle: %w", place, err)
			}
			return nil
		}
		r, err = t.runCycled(ctx, s, req, in, cycle)
	} else {
		r, err = in.Run(ctx, s, req)
	}
	if r != nil && r.Remote != nil {
		r.Remote.Target, r.Remote.Place = t.spec.String(), place
		r.Remote.Address = (&plan.TargetSpec{Kind: plan.TargetSSH, Host: in.ssh.Host, Port: in.ssh.Port, User: in.ssh.User, Inner: t.spec.Inner}).String()
		if serr := results.Save(s.Dir, r); serr != nil && err == nil {
			err = serr
		}
	}
	return r, err
}

// runCycled runs each variant on a freshly power-cycled board, one board run per variant
// (results in s.Dir/variants/N), and merges them into s.Dir: every variant then starts from a
// cold board and a card that was powered off, as after a real reboot. The repetitions of a
// variant are then grouped, not interleaved with the other variants'.
func (t *labgridTarget) runCycled(ctx context.Context, s *session.Session, req plan.Request, in *sshTarget, cycle func() error) (*results.Run, error) {
	var runs []*results.Run
	var dirs []string
	var runErr error
	for i, v := range req.Config.Variants {
		if err := cycle(); err != nil {
			runErr = err
			break
		}
		sub := s.Sub(filepath.Join(s.Dir, "variants", fmt.Sprintf("%02d-%s", i+1, sanitize(v.Name))))
		if err := os.MkdirAll(sub.Dir, 0o755); err != nil {
			return nil, err
		}
		one := req
		one.Config.Variants = []plan.Variant{v}
		one.Out = sub.Dir
		r, err := in.Run(ctx, sub, one)
		if r != nil {
			runs, dirs = append(runs, r), append(dirs, sub.Dir)
		}
		if err != nil {
			runErr = fmt.Errorf("variant %s: %w", v.Name, err)
			break
		}
	}
	if len(runs) == 0 {
		return nil, runErr
	}
	merged, err := results.MergeLabeled(runs, dirs, nil)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	merged.Remote = runs[0].Remote
	// One board, one kernel: the per-variant directories are where the figures came from,
	// not different sources to set apart in the report.
	for i := range merged.Variants {
		merged.Variants[i].Source = nil
	}
	if err := results.Save(s.Dir, merged); err != nil {
		return merged, errors.Join(runErr, err)
	}
	return merged, runErr
}

// OpenBoard is NewBoard for any board target: an ssh:// board as it is, a labgrid place
// acquired for the command (fetch, cleanup) and reached through its NetworkService. The
// returned close releases the place; call it when done, also after an error.
func OpenBoard(ctx context.Context, spec plan.TargetSpec, opt targets.Options) (*Board, func() error, error) {
	nothing := func() error { return nil }
	if spec.Kind != plan.TargetLabgrid {
		b, err := NewBoard(spec, opt)
		return b, nothing, err
	}
	lg, err := remote.NewLabgrid(opt.LabgridCoordinator, opt.LabgridClient)
	if err != nil {
		return nil, nothing, err
	}
	place := spec.Place
	if err := lg.Acquire(ctx, place); err != nil {
		return nil, nothing, err
	}
	release := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), remote.LabgridTimeout)
		defer cancel()
		if err := lg.Release(ctx, place); err != nil {
			return fmt.Errorf("releasing labgrid place %s: %w (labgrid-client -x %s -p %s release)", place, err, lg.Coordinator, place)
		}
		return nil
	}
	p, err := lg.Show(ctx, place)
	if err == nil {
		var ns remote.LabgridSSH
		if ns, err = p.NetworkService(); err == nil {
			t := &labgridTarget{spec: spec, opt: opt}
			in := t.inner(ns.Address, ns.Port, ns.User)
			if ns.Proxy != "" {
				in.ssh.Options = append(in.ssh.Options, "-o", "ProxyJump="+ns.Proxy)
			}
			return &Board{in}, release, nil
		}
	}
	return nil, nothing, errors.Join(err, release())
}
