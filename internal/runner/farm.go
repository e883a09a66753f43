package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/remote"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
)

// FarmMember is one board of a farm run: a remote target and the name its rows get in the
// merged report (a labgrid place's name, a board's host).
type FarmMember struct {
	Name   string
	Target plan.TargetSpec
}

// FarmOptions describe a farm run: the same matrix on several boards at once.
type FarmOptions struct {
	// Options are the run's own: the merged results directory (Out, else a timestamped one
	// under Config.ResultsDir; each member's own results go to Out/places/NAME), Force, the
	// ledger, the log (each member's lines prefixed with its name) and Self, the argv prefix
	// that runs fsbench (default: this executable).
	Options
	Members []FarmMember
	// Args are the arguments of `fsbench run` every board's run gets besides its --target and -o.
	Args []string
}

// FarmError lists the members of a farm whose runs failed; the others' results are merged.
type FarmError struct{ Failed []string }

func (e *FarmError) Error() string {
	return "on " + strings.Join(e.Failed, "; on ")
}

// runsElsewhere says whether spec's target hands its run to another fsbench (a board): only
// those run side by side.
func runsElsewhere(spec plan.TargetSpec) bool {
	t, err := targets.New(spec, targets.Options{})
	return err == nil && t.Caps().Has(targets.RemoteRunner)
}

// RunFarm runs the same matrix on every member in parallel and merges their results into one
// results directory, each member's rows labelled with its name, so that one report compares
// the boards. Each member runs as a child `fsbench run` with its own results directory, ledger
// and cleanup: a board that fails (or a child that crashes) is recorded and the others go on.
// The children stop in order (and release their places) when ctx is cancelled, and, through
// the kernel's parent-death signal, when this process is killed.
func RunFarm(ctx context.Context, opt FarmOptions) (out *Outcome, err error) {
	if opt.Log == nil {
		opt.Log = func(string, ...any) {}
	}
	logf := opt.Log
	if os.Geteuid() != 0 {
		return nil, errors.New("fsbench run needs root: it makes loop devices, mounts filesystems and drops caches; run it with sudo")
	}
	if err := checkMembers(opt.Members); err != nil {
		return nil, err
	}
	self := opt.Self
	if len(self) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		self = []string{exe}
	}
	ses, err := openSession(opt.Options, opt.ledgerDir())
	if err != nil {
		return nil, err
	}
	out = &Outcome{Dir: ses.Dir}
	defer closeSession(ses, &err)
	places := filepath.Join(ses.Dir, "places")
	if err := os.MkdirAll(places, 0o755); err != nil {
		return out, fmt.Errorf("making %s: %w", places, err)
	}
	res := make([]memberResult, len(opt.Members))
	var wg sync.WaitGroup
	for i, m := range opt.Members {
		res[i].dir = filepath.Join(places, m.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			res[i].err = runMember(ctx, ses, self, opt, m, res[i].dir, logf)
			res[i].d = time.Since(t0)
		}()
	}
	wg.Wait()
	runs, dirs, labels, failed := collectMembers(opt.Members, res, logf)
	var ferr error
	if len(failed) > 0 {
		ferr = &FarmError{Failed: failed}
	}
	if len(runs) == 0 {
		return out, fmt.Errorf("no board produced results: %w", ferr)
	}
	merged, err := results.MergeLabeled(runs, dirs, labels)
	if err != nil {
		return out, err
	}
	if len(failed) > 0 {
		merged.Status = results.RunFailed
		merged.Error = strings.TrimPrefix(strings.Join(append([]string{merged.Error}, failed...), "; "), "; ")
	}
	if err := results.Save(ses.Dir, merged); err != nil {
		return out, &SaveError{Err: err}
	}
	out.Run, out.Saved = merged, true
	return out, ferr
}

// checkMembers refuses a farm of fewer than two boards, a member that runs on this machine,
// and a board named twice.
func checkMembers(members []FarmMember) error {
	if len(members) < 2 {
		return &plan.InputError{Err: errors.New("a farm run needs at least two boards")}
	}
	seen := map[string]bool{}
	for _, m := range members {
		if !runsElsewhere(m.Target) {
			return &plan.InputError{Err: fmt.Errorf("--target %s runs on this machine: only boards (labgrid:PLACE, ssh://...) run side by side in one command; run local targets one after the other and fsbench merge them", m.Target)}
		}
		if seen[m.Name] {
			return &plan.InputError{Err: fmt.Errorf("%s is named twice in --target: each board runs once", m.Name)}
		}
		seen[m.Name] = true
	}
	return nil
}

// memberResult is how one member's child run ended: its results directory, its error and
// how long it took.
type memberResult struct {
	dir string
	err error
	d   time.Duration
}

// collectMembers logs how each member ended and loads the results each saved, a failed
// board's completed cells too; failed says which members failed and why.
func collectMembers(members []FarmMember, res []memberResult, logf func(string, ...any)) (runs []*results.Run, dirs, labels, failed []string) {
	for i, m := range members {
		r := res[i]
		if r.err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", m.Name, r.err))
			logf("[%s] failed after %s: %v", m.Name, r.d.Round(time.Second), r.err)
		} else {
			logf("[%s] done in %s", m.Name, r.d.Round(time.Second))
		}
		run, lerr := results.Load(r.dir)
		if lerr != nil {
			continue
		}
		runs, dirs, labels = append(runs, run), append(dirs, r.dir), append(labels, m.Name)
	}
	return runs, dirs, labels, failed
}

// runMember runs one board's `fsbench run` as a child and streams its log lines, prefixed
// with the member's name.
func runMember(ctx context.Context, ses *session.Session, self []string, opt FarmOptions, m FarmMember, dir string, logf func(string, ...any)) error {
	args := append(append(append([]string(nil), self[1:]...), "run"), opt.Args...)
	args = append(args, "--target", m.Target.String(), "-o", dir)
	if opt.Force {
		args = append(args, "--force")
	}
	cmd := exec.Command(self[0], args...)
	// Its own process group, so that a Ctrl-C on the terminal reaches this process only,
	// which passes it on: every board then stops in order. Pdeathsig stops the child if this
	// process is killed outright; it is sent when the thread that started the child ends, so
	// that thread stays locked to this goroutine until the child is gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = io.Discard // each board's summary: the merged one is printed instead
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting fsbench for %s: %w", m.Name, err)
	}
	if err := ses.Ledger.AddProcess(cmd.Process.Pid, "fsbench run on "+m.Name, true); err != nil {
		logf("warning: %v", err)
	}
	var last string
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := remote.ChildMessage(sc.Text())
			if strings.TrimSpace(line) != "" {
				last = line
			}
			// A labgrid place's board already prefixes its lines with the place's name.
			if !strings.HasPrefix(line, "["+m.Name+"] ") {
				line = "[" + m.Name + "] " + line
			}
			logf("%s", line)
		}
		io.Copy(io.Discard, pr)
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		// What Ctrl-C would have done: the child stops in order, releases its place.
		cmd.Process.Signal(syscall.SIGINT)
		werr = <-done
	}
	pw.Close()
	<-lines
	ses.Ledger.RemoveProcess(cmd.Process.Pid)
	if werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			return fmt.Errorf("fsbench exited %d: %s", ee.ExitCode(), last)
		}
		return werr
	}
	return nil
}
