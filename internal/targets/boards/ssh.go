package boards

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/remote"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
)

func init() {
	targets.Register(plan.TargetSSH, func(s plan.TargetSpec, opt targets.Options) (targets.Target, error) { return newSSHTarget(s, opt), nil })
	targets.Register(plan.TargetLabgrid, func(s plan.TargetSpec, opt targets.Options) (targets.Target, error) {
		return &labgridTarget{spec: s, opt: opt}, nil
	})
}

// DefaultRemoteDir is where fsbench keeps its binary and its runs on a board: /var/tmp survives a
// reboot on most boards (a run's partial results can be fetched afterwards), unlike /tmp.
const DefaultRemoteDir = "/var/tmp/fsbench"

// Binaries finds the fsbench binary for a board's architecture: given with --remote-binary, next
// to this executable as fsbench-linux-<arch> (release files), in dist/ (make cross), or this
// executable itself when the board has the host's architecture.
func binaryFor(o targets.Options, arch string) (string, error) {
	if o.RemoteBinary != "" {
		return o.RemoteBinary, nil
	}
	self, err := os.Executable()
	if err != nil {
		self = "/proc/self/exe"
	}
	name := "fsbench-linux-" + arch
	var tried []string
	for _, p := range []string{filepath.Join(filepath.Dir(self), name), filepath.Join(filepath.Dir(self), "dist", name), filepath.Join("dist", name)} {
		tried = append(tried, p)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	hostArch := runtime.GOARCH
	if hostArch == "arm" {
		hostArch = "armv7"
	}
	if arch == hostArch {
		return self, nil
	}
	return "", fmt.Errorf("no fsbench binary for the board's %s: looked for %s; build them with make cross, or give one with --remote-binary", arch, strings.Join(tried, ", "))
}

// sshTarget runs fsbench on a board: it puts the matching static binary there, learns what the
// board can run before anything starts, hands it the run as a request file, streams its
// progress, and brings its results (and traces) back into the host's results directory.
type sshTarget struct {
	spec plan.TargetSpec
	opt  targets.Options
	ssh  *remote.SSH
}

func newSSHTarget(spec plan.TargetSpec, opt targets.Options) *sshTarget {
	return &sshTarget{spec: spec, opt: opt, ssh: remote.NewSSH(spec, opt.SSHOptions)}
}

func (t *sshTarget) Spec() plan.TargetSpec    { return t.spec }
func (t *sshTarget) Caps() targets.Capability { return targets.RemoteRunner }

// Check refuses, on the host, what cannot work on any board: the user's dataset (a path on the
// host), a device not named twice.
func (t *sshTarget) Check(cfg plan.Config) error {
	if cfg.Suite.Has(plan.PowerCutSuite) {
		return t.checkLive(cfg)
	}
	if err := cfg.CheckSuiteMix(); err != nil {
		return err
	}
	if cfg.Dataset != "" {
		return plan.Refusef("--dataset is not available with --target %s yet: the dataset is a path on the host; copy your tree to the board and run fsbench there, or use the generated dataset", t.spec)
	}
	if in := t.spec.Inner; in != nil && in.Kind == plan.TargetDevice {
		if t.opt.Destroy == "" {
			return plan.Refusef("--destroy was not given: writing to %s on %s destroys everything on it; repeat the device's name with --destroy %s to confirm", in.Device, t.spec.Host, in.Device)
		}
		if t.opt.Destroy != in.Device {
			return plan.Refusef("--destroy names %s but the device to use on %s is %s: name the same device twice to confirm", t.opt.Destroy, t.spec.Host, in.Device)
		}
	}
	if cfg.FlashSuite() && t.spec.Inner != nil && t.spec.Inner.Kind != plan.TargetImage {
		return plan.Refusef("--target %s: the free-electrons suite runs on the board's nandsim, not on a block device; use ssh://HOST", t.spec)
	}
	return nil
}

// boardRun is one run's place on the board.
type boardRun struct {
	dir, bin string
}

// connect learns the board's architecture, puts the matching fsbench on it (kept by content
// hash, so that it is copied once) and reads its facts.
func (t *sshTarget) connect(ctx context.Context) (bin string, facts remote.BoardFacts, err error) {
	out, err := t.ssh.Run(ctx, "uname -m", nil)
	if err != nil {
		return "", facts, fmt.Errorf("reaching the board: %w", err)
	}
	arch, err := remote.GoArch(strings.TrimSpace(string(out)))
	if err != nil {
		return "", facts, &plan.InputError{Err: err}
	}
	local, err := binaryFor(t.opt, arch)
	if err != nil {
		return "", facts, &plan.InputError{Err: err}
	}
	b, err := os.ReadFile(local)
	if err != nil {
		return "", facts, fmt.Errorf("reading the board's fsbench binary: %w", err)
	}
	sum := sha256.Sum256(b)
	bin = path.Join(t.remoteDir(), "bin", "fsbench-"+hex.EncodeToString(sum[:8]))
	// Upload only when missing, through a temporary name: a run on the board never sees half a
	// binary. Plain sh, cat and chmod: a board needs no scp or sftp server.
	script := fmt.Sprintf("test -x %[1]s || { mkdir -p %[2]s && cat > %[1]s.$$ && chmod 755 %[1]s.$$ && mv %[1]s.$$ %[1]s; }", remote.Shq(bin), remote.Shq(path.Dir(bin)))
	t.opt.Logf("board %s: %s; fsbench %s from %s", t.ssh.Dest(), arch, path.Base(bin), local)
	if _, err := t.ssh.Run(ctx, script, bytes.NewReader(b)); err != nil {
		return "", facts, fmt.Errorf("putting fsbench on the board: %w", err)
	}
	out, err = t.ssh.Run(ctx, remote.Shq(bin)+" facts", nil)
	if err != nil {
		return "", facts, fmt.Errorf("reading what the board can run: %w", err)
	}
	if err := json.Unmarshal(out, &facts); err != nil {
		return "", facts, fmt.Errorf("the board's facts: %w", err)
	}
	return bin, facts, nil
}

func (t *sshTarget) remoteDir() string {
	if t.opt.RemoteDir != "" {
		return t.opt.RemoteDir
	}
	return DefaultRemoteDir
}

// Missing lists the variants of cfg a board with facts cannot run, each with what to install or
// enable there (Debian/Ubuntu package, Buildroot option, Yocto recipe, kernel option).
func Missing(cfg plan.Config, facts fs.Facts) []string {
	var out []string
	for _, v := range cfg.Variants {
		k, ok := fs.Lookup(v.FS)
		if !ok {
			continue
		}
		a := facts.Check(k)
		if a.Runs {
			continue
		}
		line := fmt.Sprintf("%s: %s", v.Name, a.Reason)
		if h := fs.BoardHint(k, a); h != "" {
			line += " (" + h + ")"
		}
		out = append(out, line)
	}
	return out
}

// Run carries out req on the board.
func (t *sshTarget) Run(ctx context.Context, s *session.Session, req plan.Request) (*results.Run, error) {
	if req.Config.Suite.Has(plan.PowerCutSuite) {
		sw := commandPower{off: t.opt.PowerOff, on: t.opt.PowerOn}
		return t.runLive(ctx, s, req, sw, func(ctx context.Context) error { return t.waitSSH(ctx, t.bootTimeout()) })
	}
	bin, facts, err := t.connect(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range Missing(req.Config, facts.Facts) {
		t.opt.Logf("the board cannot run %s", m)
	}
	if len(Missing(req.Config, facts.Facts)) == len(req.Config.Variants) {
		return nil, plan.Refusef("the board %s (%s, kernel %s) can run none of the variants: install what is named above", facts.Hostname, facts.Arch, facts.KernelRelease)
	}
	id := fmt.Sprintf("%s-%d-%d", sanitize(hostname()), os.Getpid(), time.Now().Unix())
	br := boardRun{dir: path.Join(t.remoteDir(), "runs", id), bin: bin}
	// The request the board carries out: the same configuration, on the board's own target,
	// results in the run's directory there and the work directory beside them.
	// The host's own settings (json:"-") stay here.
	breq := req
	breq.Target, breq.Destroy, breq.Out, breq.Work, breq.Force = *t.spec.Inner, t.opt.Destroy, path.Join(br.dir, "res"), br.dir, false
	rb, err := json.MarshalIndent(breq, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := t.ssh.Run(ctx, fmt.Sprintf("mkdir -p %[1]s && cat > %[1]s/request.json", remote.Shq(br.dir)), bytes.NewReader(rb)); err != nil {
		return nil, fmt.Errorf("handing the run to the board: %w", err)
	}
	t.opt.Logf("board %s: running fsbench in %s", t.ssh.Dest(), br.dir)
	runErr := t.stream(ctx, s, br)
	// Whatever happened, bring back what the board saved: a run that was interrupted or failed
	// keeps its completed cells.
	r, ferr := t.fetch(context.WithoutCancel(ctx), br, s.Dir)
	if ferr != nil {
		if runErr != nil {
			return nil, fmt.Errorf("%w (and its results could not be fetched: %v; fsbench fetch %s %s retries)", runErr, ferr, t.spec, path.Base(br.dir))
		}
		return nil, ferr
	}
	r.Remote = &results.Remote{Target: t.spec.String(), Hostname: facts.Hostname, Model: facts.Model, Compatible: facts.Compatible,
		Arch: facts.Arch, KernelRelease: facts.KernelRelease, OS: facts.OS, RunDir: br.dir}
	if err := results.Save(s.Dir, r); err != nil {
		return r, err
	}
	if runErr == nil {
		// Fetched and saved on the host: the board's copy goes, so that runs do not pile up
		// on its storage.
		if _, err := t.ssh.Run(context.WithoutCancel(ctx), "rm -rf "+remote.Shq(br.dir), nil); err != nil {
			t.opt.Logf("warning: removing the run's directory on the board: %v", err)
		}
	} else {
		t.opt.Logf("the board keeps its copy of this run in %s (fsbench fetch %s %s)", br.dir, t.spec, path.Base(br.dir))
	}
	return r, runErr
}

// DefaultLinkTimeout is how long a board's run goes on without hearing from the host: as long
// as the host's ssh client waits for an answer from the board (ServerAliveInterval 15 s ×
// ServerAliveCountMax 4), so that both ends give up on a silent link at about the same time.
const DefaultLinkTimeout = 60 * time.Second

// stream runs fsbench on the board and copies its output, line by line, to the host's log. The
// ssh client's standard input stays open for the whole run: when it closes (Ctrl-C here, or the
// link drops and the connection closes) the board's fsbench sees end of file and stops in
// order, unmounting and detaching before it exits. A link that goes silent without closing is
// noticed by a watchdog: the host writes a newline to that input every quarter of the link
// timeout, and the board's fsbench stops in order once nothing has come for the link timeout.
func (t *sshTarget) stream(ctx context.Context, s *session.Session, br boardRun) error {
	link := t.opt.LinkTimeout
	if link <= 0 {
		link = DefaultLinkTimeout
	}
	cmd := t.ssh.Command(nil, fmt.Sprintf("cd %s && exec %s run --request request.json --stop-on-stdin-eof --stop-on-stdin-silence %s",
		remote.Shq(br.dir), remote.Shq(br.bin), link))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting ssh: %w", err)
	}
	if err := s.Ledger.AddProcess(cmd.Process.Pid, "ssh to the board", true); err != nil {
		t.opt.Logf("warning: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		pw.Close()
		done <- err
	}()
	fed := make(chan struct{})
	defer close(fed)
	go func() {
		tick := time.NewTicker(link / 4)
		defer tick.Stop()
		for {
			select {
			case <-fed:
				return
			case <-tick.C:
				// A write to a closed input (Ctrl-C here) fails: nothing more to feed.
				if _, err := stdin.Write([]byte{'\n'}); err != nil {
					return
				}
			}
		}
	}()
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := remote.ChildMessage(sc.Text())
			t.opt.Logf("[%s] %s", t.spec.Host, line)
		}
		io.Copy(io.Discard, pr)
	}()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		// Ask the board to stop: end of its input. It cleans up and exits; give it time.
		stdin.Close()
		select {
		case werr = <-done:
		case <-time.After(5 * time.Minute):
			cmd.Process.Kill()
			werr = <-done
		}
	}
	stdin.Close()
	s.Ledger.RemoveProcess(cmd.Process.Pid)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted; the board stopped its run and cleaned up: %w", ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		switch code := ee.ExitCode(); {
		case code == 2:
			return &plan.InputError{Err: fmt.Errorf("the board refused the run (exit 2): see its messages above")}
		case code == 255:
			return fmt.Errorf("the connection to the board was lost (ssh exit 255); the board stops its run when it notices: fsbench cleanup --target %s makes sure", t.spec)
		case code >= 128:
			return fmt.Errorf("fsbench on the board was interrupted (exit %d)", code)
		default:
			return fmt.Errorf("fsbench on the board failed (exit %d)", code)
		}
	}
	return werr
}

// fetch copies the run's results directory from the board into dir (results.json, results.csv,
// traces) and loads them.
func (t *sshTarget) fetch(ctx context.Context, br boardRun, dir string) (*results.Run, error) {
	cmd := t.ssh.Command(ctx, fmt.Sprintf("%s pack %s", remote.Shq(br.bin), remote.Shq(path.Join(br.dir, "res"))))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	uerr := remote.Unpack(out, dir)
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("fetching the results from the board: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if uerr != nil {
		return nil, uerr
	}
	return results.Load(dir)
}

func hostname() string {
	h, _ := os.Hostname()
	if h == "" {
		return "host"
	}
	return h
}

// sanitize keeps a name safe as one path component on the board.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// Board is a board reached over remote.SSH, for the commands besides run: fetch, cleanup, probe.
type Board struct{ t *sshTarget }

// NewBoard makes a Board from an ssh:// spec.
func NewBoard(spec plan.TargetSpec, opt targets.Options) (*Board, error) {
	if spec.Kind != plan.TargetSSH {
		return nil, fmt.Errorf("%s is not a board over remote.SSH (ssh://[user@]host[:port])", spec)
	}
	return &Board{newSSHTarget(spec, opt)}, nil
}

// Runs lists the runs kept on the board (interrupted or failed ones, whose results were not
// fetched), oldest first.
func (b *Board) Runs(ctx context.Context) ([]string, error) {
	out, err := b.t.ssh.Run(ctx, fmt.Sprintf("ls -1tr %s 2>/dev/null || true", remote.Shq(path.Join(b.t.remoteDir(), "runs"))), nil)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// Fetch copies the results of a run kept on the board (the newest when run is "") into dir,
// marks them as the board's and returns them.
func (b *Board) Fetch(ctx context.Context, run, dir string) (*results.Run, error) {
	runs, err := b.Runs(ctx)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("the board keeps no run in %s", path.Join(b.t.remoteDir(), "runs"))
	}
	if run == "" {
		run = runs[len(runs)-1]
	} else if !slicesContains(runs, run) {
		return nil, &plan.InputError{Err: fmt.Errorf("the board has no run %q (it has %s)", run, strings.Join(runs, ", "))}
	}
	bin, facts, err := b.t.connect(ctx)
	if err != nil {
		return nil, err
	}
	br := boardRun{dir: path.Join(b.t.remoteDir(), "runs", run), bin: bin}
	r, err := b.t.fetch(ctx, br, dir)
	if err != nil {
		return nil, err
	}
	r.Remote = &results.Remote{Target: b.t.spec.String(), Hostname: facts.Hostname, Model: facts.Model, Compatible: facts.Compatible,
		Arch: facts.Arch, KernelRelease: facts.KernelRelease, OS: facts.OS, RunDir: br.dir}
	return r, results.Save(dir, r)
}

// Cleanup undoes what killed runs left on the board (its fsbench cleanup, which needs root
// there) and, with purge, removes the runs it keeps; it returns what it did, line by line.
func (b *Board) Cleanup(ctx context.Context, purge bool) ([]string, error) {
	bin, _, err := b.t.connect(ctx)
	if err != nil {
		return nil, err
	}
	out, err := b.t.ssh.Run(ctx, remote.Shq(bin)+" cleanup", nil)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil {
		return lines, err
	}
	runs, err := b.Runs(ctx)
	if err != nil {
		return lines, err
	}
	switch {
	case len(runs) == 0:
	case purge:
		// The board's fsbench removes each run only if it carries fsbench's marks: --remote-dir
		// may name a directory that holds other things too.
		for _, r := range runs {
			dir := path.Join(b.t.remoteDir(), "runs", r)
			if _, err := b.t.ssh.Run(ctx, remote.Shq(bin)+" purge-run "+remote.Shq(dir), nil); err != nil {
				lines = append(lines, "not purged: "+err.Error()) // the board's reason is in it
				continue
			}
			lines = append(lines, "removed the kept run "+dir)
		}
	default:
		lines = append(lines, fmt.Sprintf("the board keeps %d run(s) with partial results: %s (fsbench fetch %s RUN -o DIR gets one; --purge removes them)",
			len(runs), strings.Join(runs, ", "), b.t.spec))
	}
	return lines, nil
}

// Probe runs `fsbench probe ARGS` on the board, its output into a directory there, and copies
// that directory (probe.json, probe.txt, charts) into dir; progress goes to the log.
func (b *Board) Probe(ctx context.Context, args []string, dir string) error {
	bin, _, err := b.t.connect(ctx)
	if err != nil {
		return err
	}
	rdir := path.Join(b.t.remoteDir(), "probes", fmt.Sprintf("%s-%d-%d", sanitize(hostname()), os.Getpid(), time.Now().Unix()))
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = remote.Shq(a)
	}
	cmd := b.t.ssh.Command(ctx, fmt.Sprintf("%s probe %s -o %s", remote.Shq(bin), strings.Join(quoted, " "), remote.Shq(rdir)))
	var outb bytes.Buffer
	cmd.Stdout = &outb
	cmd.Stderr = logWriter{b.t.opt.Logf}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("fsbench probe on the board: %w", err)
	}
	pc := b.t.ssh.Command(ctx, fmt.Sprintf("%s pack %s && rm -rf %s", remote.Shq(bin), remote.Shq(rdir), remote.Shq(rdir)))
	rd, err := pc.StdoutPipe()
	if err != nil {
		return err
	}
	if err := pc.Start(); err != nil {
		return err
	}
	uerr := remote.Unpack(rd, dir)
	io.Copy(io.Discard, rd)
	return errors.Join(uerr, pc.Wait())
}

// logWriter turns written lines into log calls.
type logWriter struct{ logf func(string, ...any) }

func (w logWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.logf("%s", line)
		}
	}
	return len(p), nil
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
