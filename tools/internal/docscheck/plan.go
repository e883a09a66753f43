package docscheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Kind is how a command is checked.
type Kind int

// The kinds, from the most to the least real.
const (
	// Run: run for real, as written (placeholders filled with the scratch fixtures).
	Run Kind = iota + 1
	// Reduced: run for real in a reduced form (one repetition, one variant, an image file
	// instead of a card); Argv says exactly what ran.
	Reduced
	// Flags: not run here (Why says why and which test runs its kind); its subcommand and
	// every flag are checked against the binary's --help.
	Flags
	// MakeDry: a make target not run here (Why); make -n checks it exists and expands.
	MakeDry
	// TestExists: a go test command not run here (Why); go test -list checks that the test it
	// names exists.
	TestExists
	// Script: a setup script not run here (it installs packages); bash -n checks it.
	Script
	// Assign: a shell variable the next commands of the document use.
	Assign
)

func (k Kind) String() string {
	return [...]string{"?", "run", "reduced", "flags", "make -n", "test exists", "bash -n", "variable"}[k]
}

// Step is one simple command of a document and its check.
type Step struct {
	Cmd  Command
	Kind Kind
	Env  []string // VAR=value set for Run and Reduced
	Argv []string // what runs or is checked; Argv[0] is "fsbench" for the binary under test
	Why  string   // why it is not run as written: the reduction, or the test that runs it
	// Serves: the command is a server that runs until stopped: it passes when this file
	// (relative to the scratch directory) appears, then stops cleanly at SIGTERM.
	Serves string
}

// Reduction flags appended to a documented fsbench run: one repetition of one variant on a
// 512 MiB image. Later flags win in the command line, so these override the document's.
// --force: a fixture may already hold the results directory the document names.
var reduceRun = []string{"-n", "1", "--variants", "ext4", "--size", "512M", "--force"}

// LoopDevice stands in a planned command for the loop device the checker attaches over a
// scratch image, where the document names a card (/dev/sdb1).
const LoopDevice = "LOOPDEV"

// fixtures replace the documents' placeholders with what the scratch directory holds (made by
// Fixtures before the checks).
var fixtures = map[string]string{
	"RESULTS_DIR": "r1", "A": "r1", "B": "r2", "probe.json": "probe/probe.json", "DEVICE": "card.img",
	"PROFILE": "sd-typical", "matrix.toml": "matrix.toml", "./internal/NAME": "./internal/plan",
	"/mnt/sim": "sim",
}

// afterSub fills the operand placeholder of a subcommand.
var afterSub = map[string]string{"serve": "sim"}

// afterFlag fills a placeholder from the flag before it.
var afterFlag = map[string]string{"--preset": "ext4-tuning", "--show": "sd-typical"}

// placeholder matches what a synopsis shows instead of a value: NAME, [flags], A|B, <dir>, ...
var placeholder = regexp.MustCompile(`^[A-Z][A-Z_]+$|\.\.\.|\[|\||<|[A-Z]{3,}`)

// Plan splits a command into simple commands and decides how each is checked. vars holds the
// shell variables set by earlier commands of the same document.
func Plan(c Command, vars map[string]string) ([]Step, error) {
	var steps []Step
	for _, part := range splitShell(c.Text) {
		s, err := planSimple(c, part, vars)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", c.Where(), c.Text, err)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// splitShell splits on && and ; and keeps the first command of a pipeline (the documents pipe
// fsbench into head or less).
func splitShell(s string) []string {
	var out []string
	for _, a := range strings.Split(s, "&&") {
		for _, b := range strings.Split(a, ";") {
			b, _, _ = strings.Cut(b, "|")
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	}
	return out
}

func planSimple(c Command, text string, vars map[string]string) (Step, error) {
	st := Step{Cmd: c}
	var w []string
	st.Env, w = leading(Words(text))
	if len(w) == 1 && isAssign(w[0]) {
		name, val, _ := strings.Cut(w[0], "=")
		vars[name] = val
		st.Kind, st.Argv = Assign, w
		return st, nil
	}
	for i, x := range w {
		for name, val := range vars {
			x = strings.ReplaceAll(x, "$"+name, val)
		}
		w[i] = x
	}
	// Redirections are the documents' own (2>&1 before a pipe).
	w = slices.DeleteFunc(w, func(x string) bool { return x == "2>&1" || strings.HasPrefix(x, ">") })
	if len(w) == 0 {
		return st, fmt.Errorf("no command")
	}
	return planProgram(st, w)
}

// leading takes off what comes before the program: sudo, environment assignments (returned,
// their /tmp/ paths moved to the scratch directory's tmp/ as the arguments' are) and
// /usr/bin/time -v.
func leading(w []string) (env, rest []string) {
	for len(w) > 0 {
		switch {
		case w[0] == "sudo":
			w = w[1:]
		case w[0] == "/usr/bin/time":
			w = w[1:]
			if len(w) > 0 && w[0] == "-v" {
				w = w[1:]
			}
		case isAssign(w[0]) && len(w) > 1:
			env = append(env, strings.ReplaceAll(w[0], "=/tmp/", "=tmp/"))
			w = w[1:]
		default:
			return env, w
		}
	}
	return env, w
}

// planProgram decides by the program how a simple command is checked.
func planProgram(st Step, w []string) (Step, error) {
	prog := strings.TrimPrefix(w[0], "./")
	switch {
	case prog == "fsbench":
		return planFsbench(st, w[1:])
	case prog == "make":
		st.Kind, st.Argv = MakeDry, w
		st.Why = makeWhy(w[1:])
		return st, nil
	case prog == "go" && len(w) > 1 && w[1] == "test":
		st.Kind, st.Argv = TestExists, w
		st.Why = "a test of the repository: go test runs it in make test"
		return st, nil
	case prog == "go" && len(w) > 1 && (w[1] == "doc" || w[1] == "list" || w[1] == "tool"):
		st.Kind, st.Argv = Run, fill(w)
		return st, nil
	case strings.HasPrefix(prog, "scripts/") && strings.HasSuffix(prog, ".sh"):
		st.Kind, st.Argv = Script, append([]string{prog}, w[1:]...)
		st.Why = "installs Debian packages (CI's .ci/run runs it on a fresh machine)"
		return st, nil
	case prog == "cat":
		st.Kind, st.Argv = Run, fill(w)
		return st, nil
	}
	return st, fmt.Errorf("no rule for %q: add one to tools/internal/docscheck", w[0])
}

func isAssign(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	return ok && name != "" && strings.ToUpper(name) == name && !strings.HasPrefix(name, "-")
}

// fill replaces the placeholders the scratch directory has fixtures for, and /tmp/ paths by
// the scratch directory's own tmp/.
func fill(w []string) []string {
	out := slices.Clone(w)
	for i, x := range out {
		if v, ok := fixtures[x]; ok {
			out[i] = v
		}
		if i > 0 {
			if v, ok := afterFlag[out[i-1]]; ok && placeholder.MatchString(x) {
				out[i] = v
			}
		}
		if strings.Contains(out[i], "/tmp/") {
			out[i] = strings.ReplaceAll(out[i], "/tmp/", "tmp/")
		}
	}
	return out
}

// remoteWhy says which test runs a command that needs what this check cannot have.
func remoteWhy(args []string) (string, bool) {
	has := func(sub string) bool {
		return slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, sub) })
	}
	switch {
	case len(args) > 0 && args[0] == "board":
		return "boots the emulated ARM board (minutes under TCG): internal/board's TestBoardRemote runs board up, a run over SSH and board down", true
	case len(args) > 0 && args[0] == "fetch":
		return "copies from a board: cmd/fsbench's TestBoardFetchAndCleanup runs it", true
	case len(args) > 0 && args[0] == "cleanup":
		return "ends every emulated board fsbench board up started on this machine, live ones too, and undoes what killed runs recorded: cmd/fsbench's TestKilledRunIsCleanedUpByTheNext runs it", true
	case has("labgrid"):
		return "needs a labgrid farm: cmd/fsbench's TestLabgridFarmTwoPlaces and TestLabgridEmulatedFarm run it on a real coordinator", true
	case has("ssh://"):
		return "needs a board over SSH: cmd/fsbench's TestSSHTargetFakeTransport and internal/board's TestBoardRemote run it", true
	case has("vm") && (slices.Contains(args, "vm") || has("--target=vm") || has("vm:")):
		return "boots the QEMU guest (tens of minutes under TCG): cmd/fsbench's TestVMSDCard, TestVMFreeElectrons and TestVMPowerCut run it", true
	}
	return "", false
}

func planFsbench(st Step, args []string) (Step, error) {
	if len(args) == 0 {
		return st, fmt.Errorf("fsbench without a subcommand")
	}
	st.Argv = append([]string{"fsbench"}, args...)
	if why, ok := remoteWhy(args); ok {
		st.Kind, st.Why = Flags, why
		return st, nil
	}
	filled := fill(st.Argv)
	if len(args) > 1 && args[0] == "simcard" && args[1] == "serve" {
		// DIR, the mount point, is the operand at the end.
		if last := filled[len(filled)-1]; placeholder.MatchString(last) {
			filled[len(filled)-1] = afterSub["serve"]
		}
		st.Kind, st.Argv, st.Serves = Reduced, filled, filled[len(filled)-1]+"/card"
		st.Why = "served until its card appears, then stopped with SIGTERM (it serves until stopped)"
		return st, nil
	}
	if a, ok := synopsis(filled[1:]); ok {
		st.Kind, st.Why = Flags, "a synopsis with placeholders ("+a+"): the same command with values is run elsewhere in the documents or by its package's tests"
		return st, nil
	}
	if st.Cmd.Inline && mention(args) {
		st.Kind, st.Why = Flags, "a mention in running text, not a whole command: the commands it names are run elsewhere in the documents"
		return st, nil
	}
	devices := slices.ContainsFunc(filled, func(a string) bool { return strings.Contains(a, "/dev/") })
	switch args[0] {
	case "probe":
		// An image file is a device to probe: probe reads it (and --write, --capacity write
		// only to it).
		st.Kind, st.Argv = Run, filled
		if devices {
			st.Kind, st.Why = Reduced, "on a 64 MiB image file instead of the card"
			for i, a := range st.Argv {
				if strings.HasPrefix(a, "/dev/") {
					st.Argv[i] = "card.img"
				}
			}
		}
		if slices.Contains(args, "--class") && flagValue(args, "--class-area") == "" {
			// The class test's area is 256 MiB, more than the image: a smaller one, and 1 s
			// random tests instead of 10 (the same code; TestBenchClass runs it whole).
			st.Kind, st.Argv = Reduced, append(st.Argv, "--class-area", "32M", "--class-runtime", "1s")
			st.Why = strings.TrimPrefix(st.Why+"; ", "; ") + "a 32 MiB class area, 1 s random tests"
		}
		return st, nil
	case "run":
		return planRun(st, args, filled, devices), nil
	case "merge":
		// Every document's commands share one scratch directory: an earlier merge's output
		// (README's "all") is there already, and merge refuses to replace a run without it.
		st.Kind, st.Argv = Run, filled
		if flagValue(args, "-o") != "" && !slices.Contains(args, "--force") {
			st.Kind, st.Argv, st.Why = Reduced, append(filled, "--force"), "with --force: the documents' commands share one scratch directory, where an earlier one merged into the same -o"
		}
		return st, nil
	case "list", "report", "compare", "export", "advise", "simcard", "help":
		st.Kind, st.Argv = Run, filled
		return st, nil
	}
	return st, fmt.Errorf("no rule for fsbench %s: add one to tools/internal/docscheck", args[0])
}

// synopsis returns the first placeholder of a command line that the fixtures did not fill.
func synopsis(args []string) (string, bool) {
	for _, a := range args {
		if placeholder.MatchString(a) && !strings.HasPrefix(a, "-") || strings.ContainsAny(a, "[|<") || strings.Contains(a, "...") {
			return a, true
		}
	}
	return "", false
}

// planRun reduces a documented run: one repetition of ext4 (or of the preset's or
// configuration file's own variants) on a 512 MiB image, or on a loop device over one where the
// document names a card.
func planRun(st Step, args, filled []string, devices bool) Step {
	// A preset or a configuration file names its own variants.
	own := flagValue(args, "--preset") != "" || flagValue(args, "-c") != ""
	reduce := reduceRun
	if own {
		reduce = slices.DeleteFunc(slices.Clone(reduceRun), func(a string) bool { return a == "--variants" || a == "ext4" })
	}
	st.Kind, st.Argv = Reduced, append(filled, reduce...)
	st.Why = "one repetition of ext4 on a 512 MiB image"
	if devices {
		// The card the document names becomes a loop device over a scratch image.
		for i, a := range st.Argv {
			if j := strings.Index(a, "/dev/"); j >= 0 {
				st.Argv[i] = a[:j] + LoopDevice
			}
		}
		st.Why = "on a loop device over a 512 MiB scratch image instead of the card, one repetition of ext4"
	}
	switch suite := flagValue(args, "--suite"); {
	case own:
		st.Argv = append(st.Argv, "--tests", "mkfs,mount")
		st.Why = "one repetition on a 512 MiB image, mkfs and mount only"
	case suite == "" || suite == "bootlin":
		st.Argv = append(st.Argv, "--tests", "mkfs,mount")
		st.Why += ", mkfs and mount only"
	case suite == "powercut":
		st.Argv = append(st.Argv, "--cuts", "2")
		st.Why += ", 2 power cuts"
	case suite == "endurance":
		// A card whose blocks last under 3 erases: its end in a few rounds. The suite refuses
		// an image file (it never wears out): a command that names no target gets the
		// simulated card.
		if flagValue(args, "--target") == "" {
			st.Argv = append(st.Argv, "--target", "simcard:sd-typical")
			st.Why += ", on the simulated card"
		}
		st.Argv = append(st.Argv, "--endurance-scale", "0.0005", "--time-scale", "0.01")
		st.Why += ", a card whose blocks last about 3 erases"
	}
	return st
}

// needsOperand are the subcommands that take a file or directory.
var needsOperand = []string{"merge", "compare", "report", "advise", "export", "probe", "fetch"}

// mention reports whether an inline command is a fragment that names a subcommand or a flag
// (`fsbench merge -o`, `fsbench compare`) rather than a command one could type.
func mention(args []string) bool {
	last := args[len(args)-1]
	if strings.HasPrefix(last, "-") && len(args) > 1 {
		return true
	}
	if !slices.Contains(needsOperand, args[0]) {
		return false
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			return false
		}
	}
	return true
}

// flagValue is the value of a flag in args ("--suite x" or "--suite=x"), "" when absent.
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// makeWhy says why a make target is not run by the check.
func makeWhy(args []string) string {
	target := "build"
	for _, a := range args {
		if !strings.Contains(a, "=") && !strings.HasPrefix(a, "-") {
			target = a
			break
		}
	}
	switch {
	case target == "test" || target == "unit" || target == "fuzz" || target == "lint" || target == "test-faults" || target == "test-lava":
		return "the test suite itself: CI runs make test"
	case strings.HasPrefix(target, "bench"):
		return "a benchmark (minutes to hours, meant for a quiet machine)"
	case target == "build" || target == "cross":
		return "builds the binary: make test builds it (cross is a prerequisite of test)"
	case target == "docs-check":
		return "this check"
	}
	return "a make target"
}
