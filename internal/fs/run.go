package fs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Runner runs an external program and returns its combined output (stdout and stderr through
// one pipe, in the order the program wrote them). The default uses os/exec with the context
// (killed at the deadline). Tests inject a fake to check argument lists.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// DefaultRunner runs programs for real. A nil Runner passed to this package means DefaultRunner.
var DefaultRunner Runner = execRunner

// waitDelay bounds how long a finished command's output pipe may stay open.
const waitDelay = 2 * time.Second

func execRunner(ctx context.Context, name string, args ...string) ([]byte, error) {
	path := name
	if !strings.Contains(name, "/") {
		// The mkfs tools live in /usr/sbin, which an ordinary user's PATH lacks; listing
		// tool versions needs no root.
		if p, err := hostLookPath(name); err == nil {
			path = p
		}
	}
	cmd := exec.CommandContext(ctx, path, args...)
	// Messages are parsed (version lines, "unknown filesystem type") and stored with results:
	// a localized tool would break the first and make the second unreadable to others.
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	// mount.nilfs2 starts nilfs_cleanerd, a daemon that may inherit the output pipe; without a
	// WaitDelay, CombinedOutput would wait for the daemon to exit, i.e. until unmount.
	cmd.WaitDelay = waitDelay
	out, err := cmd.CombinedOutput()
	if errors.Is(err, exec.ErrWaitDelay) {
		// The program itself exited successfully; only a descendant kept the pipe open.
		err = nil
	}
	return out, err
}

func runner(run Runner) Runner {
	if run == nil {
		return DefaultRunner
	}
	return run
}

// maxOutput is how much of a failed tool's output goes into an error: the end is what matters.
const maxOutput = 4096

// cmdError wraps err from running name args with the command line and the tool's output, so that
// the user can rerun the command by hand.
func cmdError(ctx context.Context, name string, args []string, err error, out []byte) error {
	line := commandLine(name, args)
	if ctx.Err() != nil {
		// exec reports only "signal: killed"; say why it was killed.
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	text := trimUsage(strings.TrimSpace(string(out)))
	if len(text) > maxOutput {
		text = "..." + text[len(text)-maxOutput:]
	}
	if text == "" {
		return fmt.Errorf("%s: %w (no output)", line, err)
	}
	return fmt.Errorf("%s: %w: %s", line, err, text)
}

// trimUsage drops a usage text from a tool's output: mkfs.xfs prints its whole 28-line usage
// after the one line that says what was wrong ("Filesystem must be larger than 300MB."), and that
// line is all a person (or a results cell) needs.
func trimUsage(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(l)), "usage:") {
			if before := strings.TrimSpace(strings.Join(lines[:i], "\n")); before != "" {
				return before + " (usage text left out)"
			}
			return strings.TrimSpace(l) + " (rest of the usage text left out)"
		}
	}
	return text
}

// commandLine renders a command as a shell would take it, quoting only where needed.
func commandLine(name string, args []string) string {
	parts := make([]string, 0, 1+len(args))
	parts = append(parts, shellQuote(name))
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	if strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("-_=+,.:/@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
