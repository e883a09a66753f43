package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Interrupted is the cause of a run's cancellation by a signal (or by the loss of the stream
// its output went to). Its exit code is the shell's for that signal: 128 + the signal's number.
type Interrupted struct {
	Signal syscall.Signal
	// Reason, when set, says what happened instead of naming the signal (the link to the host
	// went silent: as a hang-up, but nobody sent one).
	Reason string
}

func (e *Interrupted) Error() string {
	if e.Reason != "" {
		return "interrupted: " + e.Reason
	}
	switch e.Signal {
	case syscall.SIGHUP:
		return "interrupted: the terminal or SSH session hung up (SIGHUP)"
	case syscall.SIGPIPE:
		return "interrupted: the output pipe was closed (SIGPIPE)"
	case syscall.SIGTERM:
		return "interrupted (SIGTERM)"
	}
	return "interrupted (" + e.Signal.String() + ")"
}

// ExitCode is 128 + the signal number: 129 SIGHUP, 130 SIGINT, 141 SIGPIPE, 143 SIGTERM.
func (e *Interrupted) ExitCode() int { return 128 + int(e.Signal) }

// cancelSignals are the signals that end a run in order (clean up, record "interrupted", exit
// 128+n). SIGHUP is what a board's shell gets when the SSH connection to it drops: the run
// must still unmount and detach, not die with its filesystem mounted.
var cancelSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// SignalContext returns a context that the first SIGINT, SIGTERM or SIGHUP cancels with an
// *Interrupted cause. Later signals stay caught, so that an impatient second Ctrl-C cannot
// skip the cleanup. SIGPIPE is caught too, so that writing to a closed pipe fails with EPIPE
// instead of killing the process: for stdout and stderr, Main turns that into the run's end
// (see watchPipe); for any other pipe (a child's stdin) it is that write's error only.
func SignalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, append(cancelSignals, syscall.SIGPIPE)...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				if sig, ok := s.(syscall.Signal); ok && sig != syscall.SIGPIPE {
					cancel(&Interrupted{Signal: sig}) // only the first one counts
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}

// brokenPipeWriter passes writes on until the reader of the stream goes away (EPIPE; EIO on a
// terminal that hung up), then ends the run through lost and swallows every later write: the
// cleanup that follows logs as it goes, and a log line that cannot be shown must not stop it.
type brokenPipeWriter struct {
	w    io.Writer
	lost func(syscall.Signal)
	mu   sync.Mutex
	dead bool
}

func (b *brokenPipeWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead {
		return len(p), nil
	}
	n, err := b.w.Write(p)
	switch {
	case errors.Is(err, syscall.EPIPE):
		b.dead = true
		b.lost(syscall.SIGPIPE)
		return len(p), nil
	case errors.Is(err, syscall.EIO):
		b.dead = true
		b.lost(syscall.SIGHUP)
		return len(p), nil
	}
	return n, err
}

// watchPipes wraps the output streams so that losing one cancels ctx like a signal would.
func watchPipes(ctx context.Context, stdio IO) (context.Context, IO, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	lost := func(sig syscall.Signal) { cancel(&Interrupted{Signal: sig}) }
	if stdio.Out != nil {
		stdio.Out = &brokenPipeWriter{w: stdio.Out, lost: lost}
	}
	if stdio.Err != nil {
		stdio.Err = &brokenPipeWriter{w: stdio.Err, lost: lost}
	}
	return ctx, stdio, func() { cancel(context.Canceled) }
}

// exitCodeOf returns the exit code of a run that ended because ctx was cancelled.
func exitCodeOf(ctx context.Context) int {
	var in *Interrupted
	if errors.As(context.Cause(ctx), &in) {
		return in.ExitCode()
	}
	return ExitInterrupted
}

// interruptedMessage is the line printed after a cancelled run cleaned up.
func interruptedMessage(ctx context.Context) string {
	return fmt.Sprintf("%v; everything was unmounted and detached, completed cells are kept", context.Cause(ctx))
}

// stopOnEOF returns a context that ends, like a hang-up, when in reaches end of file: a board's
// run started over SSH keeps its standard input open to the host, and sshd closes it when the
// connection goes away, however long the test in progress stays silent.
//
// A connection that goes silent without closing (a cable pulled, a host that froze, a NAT or
// firewall that forgot the connection) closes nothing: sshd sends no keepalive unless its
// configuration asks (ClientAliveInterval, dropbear -K), which fsbench cannot count on, and TCP
// gives up only after about 15 minutes of retransmissions, or 2 hours when nothing is being
// sent. So with silence > 0 the host feeds a watchdog: it writes a byte to the run's input
// at least every quarter of silence, and the run ends (as a hang-up, cleaning up) once nothing
// has come for silence.
func stopOnEOF(ctx context.Context, in io.Reader, silence time.Duration) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	var last atomic.Int64 // when input last came, as time since start (monotonic)
	start := time.Now()
	go func() {
		if in != nil {
			buf := make([]byte, 512)
			for {
				n, err := in.Read(buf)
				if n > 0 {
					last.Store(int64(time.Since(start)))
				}
				if err != nil {
					break
				}
			}
		}
		cancel(&Interrupted{Signal: syscall.SIGHUP})
	}()
	if silence > 0 {
		tick := time.NewTicker(silence / 10)
		go func() {
			defer tick.Stop()
			watchSilence(ctx, cancel, silence, tick.C, func() time.Duration { return time.Since(start) - time.Duration(last.Load()) })
		}()
	}
	return ctx
}

// watchSilence cancels ctx once quiet(), the time since input last came, exceeds silence at a
// tick; it returns when ctx ends.
func watchSilence(ctx context.Context, cancel context.CancelCauseFunc, silence time.Duration, tick <-chan time.Time, quiet func() time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if q := quiet(); q > silence {
				cancel(&Interrupted{Signal: syscall.SIGHUP, Reason: fmt.Sprintf("nothing came from the host for %s (the link to it went silent; --link-timeout %s)",
					q.Round(time.Second), silence)})
				return
			}
		}
	}
}
