package remote

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/session"
)

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
		return out, fmt.Errorf("ssh %s: %s: %w%s", c.Dest(), FirstWord(remote), err, Prefixed(": ", msg))
	}
	return out, nil
}

// Dest is the ssh destination: [user@]host.
func (c *SSH) Dest() string {
	d := c.Host
	if c.User != "" {
		d = c.User + "@" + d
	}
	if c.Port != 0 {
		d += ":" + strconv.Itoa(c.Port)
	}
	return d
}

func FirstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return s
	}
	return path.Base(f[0])
}

func Prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// Shq quotes s for the board's POSIX shell.
func Shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

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

// GoArch maps `uname -m` to the release binary's architecture.
func GoArch(machine string) (string, error) {
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
		if !d.Type().IsRegular() || name == session.MarkerName || strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp") {
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
		if h.Typeflag != tar.TypeReg || filepath.IsAbs(name) || !filepath.IsLocal(name) || filepath.Base(name) == session.MarkerName {
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
