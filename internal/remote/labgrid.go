package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/session"
)

// DefaultLabgridCoordinator is where labgrid-client looks for the coordinator when neither -x
// nor LG_COORDINATOR says.
const DefaultLabgridCoordinator = "127.0.0.1:20408"

// LabgridTimeout bounds one labgrid-client command: each is a short gRPC exchange with the
// coordinator (about 0.4 s here, most of it Python starting), but a coordinator that accepts
// and never answers must not hang a run.
const LabgridTimeout = 2 * time.Minute

// Labgrid drives a labgrid farm through labgrid's own command-line client, labgrid-client:
// fsbench speaks no gRPC of its own, so that the coordinator's protocol, its authentication
// and the user's identity (LG_USERNAME, LG_HOSTNAME) are labgrid's to keep right.
type Labgrid struct {
	// Program is labgrid-client's path; Coordinator the coordinator's HOST:PORT.
	Program, Coordinator string
}

// NewLabgrid finds labgrid-client (program, else $FSBENCH_LABGRID_CLIENT, else on PATH) for
// the coordinator at coordinator (else $LG_COORDINATOR, else labgrid's default).
func NewLabgrid(coordinator, program string) (*Labgrid, error) {
	if coordinator == "" {
		coordinator = os.Getenv("LG_COORDINATOR")
	}
	if coordinator == "" {
		coordinator = DefaultLabgridCoordinator
	}
	if program == "" {
		program = os.Getenv("FSBENCH_LABGRID_CLIENT")
	}
	if program == "" {
		program = "labgrid-client"
	}
	p, err := exec.LookPath(program)
	if err != nil {
		return nil, &plan.InputError{Err: fmt.Errorf("labgrid's client %s was not found (%v): install it with `pip install labgrid` "+
			"(for example python3 -m venv /opt/labgrid && /opt/labgrid/bin/pip install labgrid) and put its bin/ on PATH, "+
			"or name it with FSBENCH_LABGRID_CLIENT=/opt/labgrid/bin/labgrid-client", program, err)}
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs // the ledger keeps it: a cleanup from another directory must find the same one
	}
	return &Labgrid{Program: p, Coordinator: coordinator}, nil
}

// PlaceBusyError says that someone else holds a place.
type PlaceBusyError struct{ Place, Holder, Coordinator string }

func (e *PlaceBusyError) Error() string {
	return fmt.Sprintf("labgrid place %s is acquired by %s: wait until it is released (labgrid-client -x %s who lists who holds what), or ask %s to release it",
		e.Place, e.Holder, e.Coordinator, e.Holder)
}

// run runs labgrid-client -x COORDINATOR [-p place] args and returns its standard output; an
// error says in fsbench's words what went wrong and what to do.
func (l *Labgrid) run(ctx context.Context, place string, args ...string) ([]byte, error) {
	full := []string{"-x", l.Coordinator}
	if place != "" {
		full = append(full, "-p", place)
	}
	full = append(full, args...)
	ctx, cancel := context.WithTimeout(ctx, LabgridTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.Program, full...)
	// Its own process group: a Ctrl-C on the terminal is fsbench's to handle (it releases the
	// place afterwards), and must not kill a release half-way with a Python traceback.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// labgrid-client asks for confirmation in some commands when it has a terminal.
	cmd.Stdin = nil
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		return out, nil
	}
	msg := lastLine(stderr.String())
	what := "labgrid-client " + strings.Join(args, " ")
	switch {
	case ctx.Err() != nil:
		return out, fmt.Errorf("%s (place %s): no answer from the coordinator at %s within %s", what, place, l.Coordinator, LabgridTimeout)
	case strings.Contains(msg, "coordinator is unavailable") || strings.Contains(stderr.String(), "Could not connect to coordinator"):
		return out, &plan.InputError{Err: fmt.Errorf("cannot reach the labgrid coordinator at %s: start labgrid-coordinator there, "+
			"or give its address with --labgrid-coordinator HOST:PORT (or LG_COORDINATOR)", l.Coordinator)}
	case strings.Contains(msg, "matches nothing"):
		return out, &plan.InputError{Err: fmt.Errorf("the labgrid coordinator at %s has no place %q: labgrid-client -x %s places lists them "+
			"(a new one is made with labgrid-client -p NAME create, then add-match EXPORTER/GROUP/*)", l.Coordinator, place, l.Coordinator)}
	case strings.Contains(msg, "You have already acquired"):
		return out, &plan.InputError{Err: fmt.Errorf("labgrid place %s is already acquired by you (%s): another fsbench run or a session of yours holds it; "+
			"release it with labgrid-client -x %s -p %s release once nothing uses it", place, msg, l.Coordinator, place)}
	case strings.Contains(msg, "already acquired by") || strings.Contains(msg, "acquired by a different user"):
		// Refused before anything ran, like a usage error: the run leaves nothing behind.
		return out, &plan.InputError{Err: &PlaceBusyError{Place: place, Holder: holderIn(msg), Coordinator: l.Coordinator}}
	}
	if msg == "" {
		msg = err.Error()
	}
	return out, fmt.Errorf("%s (place %s, coordinator %s): %s", what, place, l.Coordinator, msg)
}

// holderIn finds "HOST/USER" in labgrid's "already acquired by HOST/USER." message.
func holderIn(msg string) string {
	for _, key := range []string{"already acquired by ", "different user ("} {
		if _, rest, ok := strings.Cut(msg, key); ok {
			if f := strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == ')' || r == ',' }); len(f) > 0 {
				return strings.TrimSuffix(f[0], ".")
			}
		}
	}
	return "another user"
}

// lastLine is the last non-empty line of s with labgrid-client's "labgrid-client: Error: "
// prefix taken off: the message, after any traceback.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			l = strings.TrimPrefix(l, "labgrid-client: ")
			return strings.TrimPrefix(l, "Error: ")
		}
	}
	return ""
}

// Acquire acquires place. It is not cut short by ctx: a cancelled acquire may still have been
// granted by the coordinator, and only a finished one tells fsbench whether it must release.
func (l *Labgrid) Acquire(ctx context.Context, place string) error {
	_, err := l.run(context.WithoutCancel(ctx), place, "acquire")
	return err
}

// Release releases place.
func (l *Labgrid) Release(ctx context.Context, place string) error {
	_, err := l.run(ctx, place, "release")
	return err
}

// Show reads place: who holds it and its resources.
func (l *Labgrid) Show(ctx context.Context, place string) (*LabgridPlace, error) {
	out, err := l.run(ctx, place, "show")
	if err != nil {
		return nil, err
	}
	return ParseLabgridShow(string(out))
}

// Power switches the place's power: "on", "off" or "cycle".
func (l *Labgrid) Power(ctx context.Context, place, action string) error {
	_, err := l.run(ctx, place, "power", action)
	return err
}

// WaitBoard waits until the board's SSH server answers with its banner ("SSH-2.0-..."): a
// board that was power-cycled is back once its SSH server speaks. An accepted connection alone
// is not enough: QEMU's user network, as a port forwarder in front of a board would, accepts
// before the board's server listens. A place whose board is reachable only through its
// exporter (labgrid's proxy_required) is waited for through the exporter, as labgrid-client
// reaches it: an ssh to the exporter host that forwards one stream to the board
// (`ssh -W ADDRESS:PORT EXPORTER`), with the user's ssh options (--ssh-config, --ssh-option).
func WaitBoard(ctx context.Context, ns LabgridSSH, sshProgram string, sshOptions []string, limit time.Duration) error {
	port := ns.Port
	if port == 0 {
		port = 22
	}
	if limit == 0 {
		limit = 5 * time.Minute
	}
	addr := net.JoinHostPort(ns.Address, fmt.Sprint(port))
	where := addr
	if ns.Proxy != "" {
		where = addr + " through " + ns.Proxy
	}
	deadline := time.Now().Add(limit)
	for {
		actx, cancel := context.WithTimeout(ctx, 40*time.Second)
		var err error
		if ns.Proxy != "" {
			err = bannerVia(actx, sshProgram, sshOptions, ns.Proxy, addr)
		} else {
			err = bannerAt(actx, addr)
		}
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no SSH server answers on %s after %s: %w", where, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// bannerAt reads the SSH banner of the server at addr.
func bannerAt(ctx context.Context, addr string) error {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		c.SetReadDeadline(d)
	}
	return readBanner(c)
}

// bannerVia reads the SSH banner of the server at addr through an ssh connection to proxy
// (ssh -W: the proxy's server opens the TCP connection to addr and relays it).
func bannerVia(ctx context.Context, program string, options []string, proxy, addr string) error {
	if program == "" {
		program = "ssh"
	}
	args := append(append([]string(nil), options...), "-o", "BatchMode=yes", "-o", "ConnectTimeout=30", "-W", addr, "--", proxy)
	cmd := exec.CommandContext(ctx, program, args...)
	// Standard input stays open: at its end, ssh -W would close the stream before the banner.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("ssh to %s: %w", proxy, err)
	}
	rerr := readBanner(out)
	stdin.Close()
	cmd.Process.Kill() // the banner was all we wanted, or nothing came
	cmd.Wait()
	if rerr != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%w (ssh -W %s %s: %s)", rerr, addr, proxy, lastLine(msg))
		}
		return fmt.Errorf("%w (ssh -W %s %s)", rerr, addr, proxy)
	}
	return nil
}

// readBanner reads r until an SSH server's identification line (RFC 4253 4.2:
// "SSH-protoversion-softwareversion"; a server may send other lines before it).
func readBanner(r io.Reader) error {
	br := bufio.NewReader(io.LimitReader(r, 4096))
	var first string
	for {
		line, err := br.ReadString('\n')
		if strings.HasPrefix(line, "SSH-") {
			return nil
		}
		if first == "" {
			first = strings.TrimSpace(line)
		}
		if err != nil {
			if first != "" {
				return fmt.Errorf("no SSH banner: the server said %q", first)
			}
			return fmt.Errorf("no SSH banner: %w", err)
		}
	}
}

func init() { session.SetPlaceReleaser(releasePlace) }

// releasePlace releases a labgrid place a dead run acquired, if it still holds it.
func releasePlace(pr session.PlaceRecord, act func(string, ...any)) error {
	lg := &Labgrid{Program: pr.Client, Coordinator: pr.Coordinator}
	if _, err := os.Stat(pr.Client); err != nil {
		found, lerr := NewLabgrid(pr.Coordinator, "")
		if lerr != nil {
			return fmt.Errorf("release labgrid place %s: %w", pr.Place, lerr)
		}
		lg = found
	}
	ctx, cancel := context.WithTimeout(context.Background(), LabgridTimeout)
	defer cancel()
	p, err := lg.Show(ctx, pr.Place)
	if err != nil {
		var ie *plan.InputError
		if errors.As(err, &ie) && strings.Contains(err.Error(), "has no place") {
			act("labgrid place %s is gone from %s: nothing to release", pr.Place, pr.Coordinator)
			return nil
		}
		return fmt.Errorf("release labgrid place %s: %w", pr.Place, err)
	}
	switch {
	case p.Acquired == "":
		act("labgrid place %s was already released", pr.Place)
		return nil
	case pr.Owner != "" && (p.Acquired != pr.Owner || p.Changed != pr.Changed):
		act("left labgrid place %s alone: it was acquired again since (by %s, %s)", pr.Place, p.Acquired, p.Changed)
		return nil
	}
	if err := lg.Release(ctx, pr.Place); err != nil {
		var busy *PlaceBusyError
		if errors.As(err, &busy) {
			act("left labgrid place %s alone: %s holds it", pr.Place, busy.Holder)
			return nil
		}
		// Released by someone else between show and release: labgrid then answers "place X is
		// not acquired". The place is free, which is what this cleanup wanted; an error here
		// would fail every later fsbench run on the machine until the ledger goes.
		if strings.Contains(err.Error(), "not acquired") {
			act("labgrid place %s was already released", pr.Place)
			return nil
		}
		return fmt.Errorf("release labgrid place %s: %w", pr.Place, err)
	}
	act("released labgrid place %s (coordinator %s)", pr.Place, pr.Coordinator)
	return nil
}
