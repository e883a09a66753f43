package target

import (
	"archive/tar"
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
	"strconv"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
)

// DefaultRemoteDir is where fsbench keeps its binary and its runs on a board: /var/tmp survives a
// reboot on most boards (a run's partial results can be fetched afterwards), unlike /tmp.
const DefaultRemoteDir = "/var/tmp/fsbench"

// SSH reaches a board with the user's OpenSSH client, so that ~/.ssh/config, agents, ProxyJump
// and known_hosts work as the user expects. Every remote command is one ssh invocation: no
// control master to leave behind.
type SSH struct {
	// Program is the ssh client (default "ssh", or $FSBENCH_SSH).
	Program string
	// Options are more ssh arguments (-F FILE, -o Option=value), before the destination.
	Options []string
	User    string
	Host    string
	Port    int
}

// NewSSH makes the client of an ssh:// spec.
func NewSSH(spec plan.TargetSpec, options []string) *SSH {
	prog := os.Getenv("FSBENCH_SSH")
	if prog == "" {
		prog = "ssh"
	}
	return &SSH{Program: prog, Options: options, User: spec.User, Host: spec.Host, Port: spec.Port}
}

// Command is the ssh command that runs remote (a shell command line) on the board.
func (c *SSH) Command(ctx context.Context, remote string) *exec.Cmd {
	args := append([]string(nil), c.Options...)
	// A dead link must be noticed by the client too, not only by the board.
	args = append(args, "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4")
	if c.Port != 0 {
		args = append(args, "-p", strconv.Itoa(c.Port))
	}
	dest := c.Host
	if c.User != "" {
		dest = c.User + "@" + c.Host
	}
	args = append(args, "--", dest, remote)
	if ctx == nil {
		return exec.Command(c.Program, args...)
	}
	return exec.CommandContext(ctx, c.Program, args...)
}

// Run runs remote with stdin and returns its standard output; the error carries what it said
// on standard error.
func (c *SSH) Run(ctx context.Context, remote string, stdin io.Reader) ([]byte, error) {
	cmd := c.Command(ctx, remote)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 800 {
			msg = msg[len(msg)-800:]
		}
		return out, fmt.Errorf("ssh %s: %s: %w%s", c.dest(), firstWord(remote), err, prefixed(": ", msg))
	}
	return out, nil
}

func (c *SSH) dest() string {
	d := c.Host
	if c.User != "" {
		d = c.User + "@" + d
	}
	if c.Port != 0 {
		d += ":" + strconv.Itoa(c.Port)
	}
	return d
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return s
	}
	return path.Base(f[0])
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// shq quotes s for the board's POSIX shell.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// BoardFacts is what `fsbench facts` prints on a board: the machine, and what it can run.
type BoardFacts struct {
	Hostname string `json:"hostname"`
	// Model is /proc/device-tree/model ("Raspberry Pi 4 Model B Rev 1.4"), and Compatible the
	// SoC's compatible strings, most specific first ("brcm,bcm2711"); empty without a
	// device tree.
	Model      string   `json:"model,omitempty"`
	Compatible []string `json:"compatible,omitempty"`
	MemBytes   uint64   `json:"mem_bytes"`
	OS         string   `json:"os,omitempty"`
	Version    string   `json:"fsbench_version"`
	fs.Facts
}

// LocalBoardFacts reads this machine's facts (what `fsbench facts` prints).
func LocalBoardFacts(version string) (BoardFacts, error) {
	sys, err := fs.HostSystem()
	if err != nil {
		return BoardFacts{}, err
	}
	f := BoardFacts{Facts: fs.Snapshot(sys, runtime.GOARCH), Version: version}
	f.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/device-tree/model"); err == nil {
		f.Model = strings.TrimRight(string(b), "\x00\n")
	}
	if b, err := os.ReadFile("/proc/device-tree/compatible"); err == nil {
		for _, c := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
			if c != "" {
				f.Compatible = append(f.Compatible, c)
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				f.MemBytes = kb << 10
			}
		}
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				f.OS = strings.Trim(v, `"`)
			}
		}
	}
	return f, nil
}

// goArch maps `uname -m` to the release binary's architecture.
func goArch(machine string) (string, error) {
	switch machine {
	case "aarch64", "arm64":
		return "arm64", nil
	case "armv7l", "armv8l", "armv7":
		return "armv7", nil
	case "x86_64", "amd64":
		return "amd64", nil
	}
	return "", fmt.Errorf("the board is %s: fsbench is built for arm64, armv7 and amd64 (make cross)", machine)
}

// Binaries finds the fsbench binary for a board's architecture: given with --remote-binary, next
// to this executable as fsbench-linux-<arch> (release files), in dist/ (make cross), or this
// executable itself when the board has the host's architecture.
func (o Options) binaryFor(arch string) (string, error) {
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
	opt  Options
	ssh  *SSH
}

func newSSHTarget(spec plan.TargetSpec, opt Options) *sshTarget {
	return &sshTarget{spec: spec, opt: opt, ssh: NewSSH(spec, opt.SSHOptions)}
}

func (t *sshTarget) Spec() plan.TargetSpec { return t.spec }
func (t *sshTarget) Caps() Capability      { return RemoteRunner }

// Check refuses, on the host, what cannot work on any board: the user's dataset (a path on the
// host), a device not named twice.
func (t *sshTarget) Check(cfg plan.Config) error {
	if err := checkNoPowerCut(cfg, "a board over SSH", noSwitch); err != nil {
		return err
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
func (t *sshTarget) connect(ctx context.Context) (bin string, facts BoardFacts, err error) {
	out, err := t.ssh.Run(ctx, "uname -m", nil)
	if err != nil {
		return "", facts, fmt.Errorf("reaching the board: %w", err)
	}
	arch, err := goArch(strings.TrimSpace(string(out)))
	if err != nil {
		return "", facts, &plan.InputError{Err: err}
	}
	local, err := t.opt.binaryFor(arch)
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
	script := fmt.Sprintf("test -x %[1]s || { mkdir -p %[2]s && cat > %[1]s.$$ && chmod 755 %[1]s.$$ && mv %[1]s.$$ %[1]s; }", shq(bin), shq(path.Dir(bin)))
	t.opt.logf("board %s: %s; fsbench %s from %s", t.ssh.dest(), arch, path.Base(bin), local)
	if _, err := t.ssh.Run(ctx, script, bytes.NewReader(b)); err != nil {
		return "", facts, fmt.Errorf("putting fsbench on the board: %w", err)
	}
	out, err = t.ssh.Run(ctx, shq(bin)+" facts", nil)
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
func (t *sshTarget) Run(ctx context.Context, s *Session, req plan.Request) (*results.Run, error) {
	bin, facts, err := t.connect(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range Missing(req.Config, facts.Facts) {
		t.opt.logf("the board cannot run %s", m)
	}
	if len(Missing(req.Config, facts.Facts)) == len(req.Config.Variants) {
		return nil, plan.Refusef("the board %s (%s, kernel %s) can run none of the variants: install what is named above", facts.Hostname, facts.Arch, facts.KernelRelease)
	}
	id := fmt.Sprintf("%s-%d-%d", sanitize(hostname()), os.Getpid(), time.Now().Unix())
	br := boardRun{dir: path.Join(t.remoteDir(), "runs", id), bin: bin}
	// The request the board carries out: the same configuration, on the board's own target,
	// results in the run's directory there and the work directory beside them.
	breq := plan.Request{Config: req.Config, Target: *t.spec.Inner, Destroy: t.opt.Destroy, TimeScale: req.TimeScale,
		Out: path.Join(br.dir, "res"), Work: br.dir, NoCapacityCheck: req.NoCapacityCheck}
	rb, err := json.MarshalIndent(breq, "", "  ")
	if err != nil {
		return nil, err
	}
	if _, err := t.ssh.Run(ctx, fmt.Sprintf("mkdir -p %[1]s && cat > %[1]s/request.json", shq(br.dir)), bytes.NewReader(rb)); err != nil {
		return nil, fmt.Errorf("handing the run to the board: %w", err)
	}
	t.opt.logf("board %s: running fsbench in %s", t.ssh.dest(), br.dir)
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
		if _, err := t.ssh.Run(context.WithoutCancel(ctx), "rm -rf "+shq(br.dir), nil); err != nil {
			t.opt.logf("warning: removing the run's directory on the board: %v", err)
		}
	} else {
		t.opt.logf("the board keeps its copy of this run in %s (fsbench fetch %s %s)", br.dir, t.spec, path.Base(br.dir))
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
func (t *sshTarget) stream(ctx context.Context, s *Session, br boardRun) error {
	link := t.opt.LinkTimeout
	if link <= 0 {
		link = DefaultLinkTimeout
	}
	cmd := t.ssh.Command(nil, fmt.Sprintf("cd %s && exec %s run --request request.json --stop-on-stdin-eof --stop-on-stdin-silence %s",
		shq(br.dir), shq(br.bin), link))
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
		t.opt.logf("warning: %v", err)
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
			line := sc.Text()
			// The board prints its own time and name: keep the message.
			if _, msg, ok := strings.Cut(line, "fsbench: "); ok && len(line) > 9 && line[2] == ':' {
				line = msg
			}
			t.opt.logf("[%s] %s", t.spec.Host, line)
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
	cmd := t.ssh.Command(ctx, fmt.Sprintf("%s pack %s", shq(br.bin), shq(path.Join(br.dir, "res"))))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	uerr := Unpack(out, dir)
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("fetching the results from the board: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if uerr != nil {
		return nil, uerr
	}
	return results.Load(dir)
}

// Pack writes the regular files under dir (not the marker, not work directories) to w as a tar
// stream: what `fsbench pack` prints on a board, so that results come back without scp.
func Pack(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := d.Name()
		if d.IsDir() && (strings.HasPrefix(name, ".work-") || name == ".vm") {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() || name == MarkerName || strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp") {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// Unpack writes a Pack stream into dir: regular files only, never outside dir (a name with ".."
// or an absolute one is refused), replacing files of the same name.
func Unpack(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the board's results: %w", err)
		}
		name := filepath.FromSlash(h.Name)
		if h.Typeflag != tar.TypeReg || filepath.IsAbs(name) || !filepath.IsLocal(name) || filepath.Base(name) == MarkerName {
			return fmt.Errorf("the board's results hold %q, which is not a plain file of a results directory", h.Name)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		tmp := dst + ".fetch"
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, dst)
		}
		if err != nil {
			os.Remove(tmp)
			return fmt.Errorf("writing %s: %w", dst, err)
		}
	}
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

// Board is a board reached over SSH, for the commands besides run: fetch, cleanup, probe.
type Board struct{ t *sshTarget }

// NewBoard makes a Board from an ssh:// spec.
func NewBoard(spec plan.TargetSpec, opt Options) (*Board, error) {
	if spec.Kind != plan.TargetSSH {
		return nil, fmt.Errorf("%s is not a board over SSH (ssh://[user@]host[:port])", spec)
	}
	return &Board{newSSHTarget(spec, opt)}, nil
}

// Runs lists the runs kept on the board (interrupted or failed ones, whose results were not
// fetched), oldest first.
func (b *Board) Runs(ctx context.Context) ([]string, error) {
	out, err := b.t.ssh.Run(ctx, fmt.Sprintf("ls -1tr %s 2>/dev/null || true", shq(path.Join(b.t.remoteDir(), "runs"))), nil)
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
	out, err := b.t.ssh.Run(ctx, shq(bin)+" cleanup", nil)
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
			if _, err := b.t.ssh.Run(ctx, shq(bin)+" purge-run "+shq(dir), nil); err != nil {
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
		quoted[i] = shq(a)
	}
	cmd := b.t.ssh.Command(ctx, fmt.Sprintf("%s probe %s -o %s", shq(bin), strings.Join(quoted, " "), shq(rdir)))
	var outb bytes.Buffer
	cmd.Stdout = &outb
	cmd.Stderr = logWriter{b.t.opt.logf}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("fsbench probe on the board: %w", err)
	}
	pc := b.t.ssh.Command(ctx, fmt.Sprintf("%s pack %s && rm -rf %s", shq(bin), shq(rdir), shq(rdir)))
	rd, err := pc.StdoutPipe()
	if err != nil {
		return err
	}
	if err := pc.Start(); err != nil {
		return err
	}
	uerr := Unpack(rd, dir)
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
