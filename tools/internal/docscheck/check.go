package docscheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Documents lists the documents checked, relative to the repository: README.md,
// ARCHITECTURE.md and docs/*.md.
func Documents(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	out := []string{"README.md", "ARCHITECTURE.md"}
	for _, d := range docs {
		out = append(out, filepath.Join("docs", filepath.Base(d)))
	}
	return out, nil
}

// Steps extracts and plans every command of the documents, in document order.
func Steps(root string) ([]Step, []string, error) {
	docs, err := Documents(root)
	if err != nil {
		return nil, nil, err
	}
	var (
		steps    []Step
		problems []string
	)
	for _, d := range docs {
		md, err := os.ReadFile(filepath.Join(root, d))
		if err != nil {
			return nil, nil, err
		}
		cmds, probs := Extract(d, md)
		problems = append(problems, probs...)
		vars := map[string]string{}
		for _, c := range cmds {
			s, err := Plan(c, vars)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			steps = append(steps, s...)
		}
	}
	return steps, problems, nil
}

// Checker runs the checks.
type Checker struct {
	Root    string // the repository
	Scratch string // an empty directory the commands run in
	Bin     string // the fsbench binary under test
	// Full runs the Run and Reduced commands for real and go test -list; otherwise they are
	// checked as Flags (subcommand and flags), which takes seconds.
	Full    bool
	Timeout time.Duration // per command
	Log     func(format string, args ...any)

	loop string // the loop device standing for the documents' cards (LoopDevice)
}

// Result is a step's check.
type Result struct {
	Step
	How    string // what was done
	Err    error
	Output string // the tail of the output, when it failed
	Took   time.Duration
}

// Fixtures makes what the documents' placeholders stand for in the scratch directory: two
// small runs (r1, r2, and the directories the documents merge), a probe of an image file and
// a configuration file. They are real runs too.
func (c *Checker) Fixtures(ctx context.Context) []Result {
	if err := os.MkdirAll(filepath.Join(c.Scratch, "tmp"), 0o755); err != nil {
		return []Result{{How: "mkdir tmp", Err: err}}
	}
	// ./fsbench, as the documents run it from the repository (go tool pprof reads it too).
	if err := os.Symlink(c.Bin, filepath.Join(c.Scratch, "fsbench")); err != nil && !os.IsExist(err) {
		return []Result{{How: "link fsbench", Err: err}}
	}
	mk := func(argv ...string) Result {
		s := Step{Cmd: Command{File: "(fixture)"}, Kind: Run, Argv: argv}
		return c.exec(ctx, s, argv, nil, "fixture")
	}
	var out []Result
	add := func(r Result) bool { out = append(out, r); return r.Err == nil }
	small := []string{"run", "-n", "1", "--variants", "ext4", "--tests", "mkfs,mount", "--size", "512M", "-o"}
	for _, dir := range []string{"r1", "r2"} {
		if !add(mk(append(append([]string{"fsbench"}, small...), dir)...)) {
			return out
		}
	}
	// The directories the documents merge that no command of theirs run here makes (those runs
	// need a card or the guest): copies of the two runs.
	for i, dir := range []string{"cards/1", "cards/2", "cards/3", "guest"} {
		src := []string{"r1", "r2"}[i%2]
		add(mk("cp", "-a", src, dir))
	}
	if err := os.MkdirAll(filepath.Join(c.Scratch, "cards"), 0o755); err == nil {
		// cp -a into cards/N needs cards/ first: redo the copies that failed for that.
		for i, r := range out {
			if r.Err != nil && len(r.Argv) == 4 && strings.HasPrefix(r.Argv[3], "cards/") {
				out[i] = mk(r.Argv...)
			}
		}
	}
	add(mk("truncate", "-s", "64M", "card.img"))
	// The card the documents' device runs name: a loop device over a scratch image.
	if add(mk("truncate", "-s", "512M", "device.img")) {
		r := mk("losetup", "--find", "--show", "device.img")
		if r.Err == nil {
			c.loop = strings.TrimSpace(r.Output)
		}
		r.Output = ""
		add(r)
	}
	add(mk("fsbench", "probe", "card.img", "-o", "probe"))
	r := mk("fsbench", "list", "--preset", "ext4-tuning")
	if r.Err == nil {
		r.Err = os.WriteFile(filepath.Join(c.Scratch, "matrix.toml"), []byte(r.Output), 0o644)
	}
	r.Output = ""
	add(r)
	return out
}

// Close detaches the loop device Fixtures attached.
func (c *Checker) Close() error {
	if c.loop == "" {
		return nil
	}
	out, err := exec.Command("losetup", "--detach", c.loop).CombinedOutput()
	if err != nil {
		return fmt.Errorf("losetup --detach %s: %w: %s", c.loop, err, out)
	}
	c.loop = ""
	return nil
}

// Check runs one step's check.
func (c *Checker) Check(ctx context.Context, s Step) Result {
	switch s.Kind {
	case Assign:
		return Result{Step: s, How: "set for the next commands"}
	case Run, Reduced:
		switch {
		case c.Full:
			return c.exec(ctx, s, s.Argv, s.Env, s.Kind.String())
		case s.Argv[0] != "fsbench":
			return Result{Step: s, How: "not run (the real run is make docs-check's)"}
		}
		return c.flags(ctx, s, "flags (the real run is make docs-check's)")
	case Flags:
		return c.flags(ctx, s, "flags")
	case MakeDry:
		argv := append([]string{"make", "-n", "-C", c.Root}, s.Argv[1:]...)
		return c.exec(ctx, s, argv, nil, "make -n")
	case TestExists:
		if !c.Full {
			return Result{Step: s, How: "listed (go test -list is make docs-check's)"}
		}
		return c.testExists(ctx, s)
	case Script:
		path := filepath.Join(c.Root, s.Argv[0])
		return c.exec(ctx, s, []string{"bash", "-n", path}, nil, "bash -n")
	}
	return Result{Step: s, Err: fmt.Errorf("unknown kind %d", s.Kind)}
}

// exec runs argv in the scratch directory, fsbench being the binary under test.
func (c *Checker) exec(ctx context.Context, s Step, argv, env []string, how string) Result {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	start := time.Now()
	argv = slices.Clone(argv)
	for i, a := range argv {
		if strings.Contains(a, LoopDevice) {
			if c.loop == "" {
				return Result{Step: s, How: how, Err: fmt.Errorf("no loop device attached for %s (Fixtures failed?)", a)}
			}
			argv[i] = strings.ReplaceAll(a, LoopDevice, c.loop)
		}
	}
	prog := argv[0]
	if prog == "fsbench" {
		prog = c.Bin
	}
	cmd := exec.CommandContext(ctx, prog, argv[1:]...)
	cmd.Dir = c.Scratch
	if prog == "go" && len(argv) > 1 && (argv[1] == "doc" || argv[1] == "list") {
		cmd.Dir = c.Root // they name the repository's packages
	}
	cmd.Env = append(append(os.Environ(), "TMPDIR="+filepath.Join(c.Scratch, "tmp")), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var err error
	if s.Serves != "" {
		err = c.serve(ctx, cmd, s.Serves)
	} else {
		err = cmd.Run()
	}
	r := Result{Step: s, How: how + ": " + strings.Join(argv, " "), Took: time.Since(start), Output: out.String()}
	if err != nil {
		r.Err = fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		r.Output = tail(out.String(), 15)
	} else if how != "fixture" {
		r.Output = ""
	}
	r.Step.Argv = argv
	return r
}

// serve starts a server, waits for the file it serves to appear, and stops it with SIGTERM: it
// must exit 0, having cleaned up.
func (c *Checker) serve(ctx context.Context, cmd *exec.Cmd, file string) error {
	if err := os.MkdirAll(filepath.Join(c.Scratch, filepath.Dir(file)), 0o755); err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return fmt.Errorf("exited before %s appeared: %v", file, err)
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("%s did not appear: %w", file, ctx.Err())
		case <-tick.C:
		}
		if _, err := os.Stat(filepath.Join(c.Scratch, file)); err == nil {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	return <-done
}

func (c *Checker) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return 5 * time.Minute
}

// flags checks that the subcommand exists and knows every flag the command gives.
func (c *Checker) flags(ctx context.Context, s Step, how string) Result {
	args := s.Argv[1:]
	path := []string{}
	for _, a := range args {
		if strings.HasPrefix(a, "-") || len(path) == 2 {
			break
		}
		path = append(path, a)
	}
	// The deepest prefix that is a command: "board up" is, "probe card.img" is not.
	var help string
	for len(path) > 0 {
		out, err := exec.CommandContext(ctx, c.Bin, append(slices.Clone(path), "--help")...).CombinedOutput()
		if err == nil && strings.Contains(string(out), "fsbench "+strings.Join(path, " ")) {
			help = string(out)
			break
		}
		path = path[:len(path)-1]
	}
	r := Result{Step: s, How: how + ": fsbench " + strings.Join(path, " ") + " --help"}
	if help == "" {
		r.Err = fmt.Errorf("fsbench has no subcommand %q", strings.Join(args[:min(1, len(args))], " "))
		return r
	}
	var missing []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" {
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		name, _, _ = strings.Cut(name, "[")
		if strings.HasPrefix(name, "--") && !regexp.MustCompile(`(^|\s)`+regexp.QuoteMeta(name)+`(\s|$|=)`).MatchString(help) ||
			!strings.HasPrefix(name, "--") && !strings.Contains(help, name+", ") && !strings.Contains(help, " "+name+" ") {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		r.Err = fmt.Errorf("fsbench %s has no flag %s", strings.Join(path, " "), strings.Join(missing, ", "))
	}
	return r
}

// testExists checks that go test -list finds the test a documented go test command names.
func (c *Checker) testExists(ctx context.Context, s Step) Result {
	run := ""
	var pkgs []string
	for i := 2; i < len(s.Argv); i++ {
		a := s.Argv[i]
		switch {
		case a == "-run" && i+1 < len(s.Argv):
			run = s.Argv[i+1]
			i++
		case strings.HasPrefix(a, "-run="):
			run = strings.TrimPrefix(a, "-run=")
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, a)
		}
	}
	if run == "" {
		run = "."
	}
	top, _, _ := strings.Cut(run, "/") // -list matches top-level tests only
	top = strings.TrimSuffix(top, "$")
	argv := append([]string{"go", "test", "-list", top}, pkgs...)
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", argv[1:]...)
	cmd.Dir = c.Root
	out, err := cmd.CombinedOutput()
	r := Result{Step: s, How: "test exists: " + strings.Join(argv, " ")}
	if err != nil {
		r.Err, r.Output = err, tail(string(out), 10)
		return r
	}
	if !regexp.MustCompile(`(?m)^Test`).Match(out) {
		r.Err = fmt.Errorf("go test -list %s %s lists no test", top, strings.Join(pkgs, " "))
	}
	return r
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Summary counts the results by how they were checked.
func Summary(rs []Result) string {
	count := map[string]int{}
	failed := 0
	for _, r := range rs {
		if r.Err != nil {
			failed++
		}
		count[r.Kind.String()]++
	}
	var keys []string
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", count[k], k))
	}
	return fmt.Sprintf("%d commands: %s; %d failed", len(rs), strings.Join(parts, ", "), failed)
}
