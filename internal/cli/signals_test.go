package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// errWriter fails every write with err once broken is set.
type errWriter struct {
	buf    bytes.Buffer
	err    error
	broken bool
	calls  int
}

func (w *errWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.broken {
		return 0, w.err
	}
	return w.buf.Write(p)
}

func TestLostOutputEndsTheRun(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
	}{
		{"closed pipe", syscall.EPIPE, 141},
		{"hung-up terminal", syscall.EIO, 129},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := &errWriter{err: tc.err}
			ctx, stdio, stop := watchPipes(context.Background(), IO{Out: out, Err: &bytes.Buffer{}})
			defer stop()
			if _, err := stdio.Out.Write([]byte("fine\n")); err != nil || ctx.Err() != nil {
				t.Fatalf("a working stream: err %v, ctx %v", err, ctx.Err())
			}
			out.broken = true
			// The writer that lost its reader reports success: the cleanup logging through
			// it must go on.
			if n, err := stdio.Out.Write([]byte("lost\n")); err != nil || n != 5 {
				t.Errorf("write to a lost stream = %d, %v; want 5, nil", n, err)
			}
			if ctx.Err() == nil {
				t.Fatal("losing stdout did not end the run")
			}
			if got := exitCodeOf(ctx); got != tc.wantCode {
				t.Errorf("exit code %d, want %d", got, tc.wantCode)
			}
			calls := out.calls
			stdio.Out.Write([]byte("more\n"))
			if out.calls != calls {
				t.Error("writes go on reaching a stream that is gone")
			}
		})
	}
}

func TestInterruptedExitCodes(t *testing.T) {
	for sig, want := range map[syscall.Signal]int{syscall.SIGHUP: 129, syscall.SIGINT: 130, syscall.SIGPIPE: 141, syscall.SIGTERM: 143} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(&Interrupted{Signal: sig})
		if got := exitCodeOf(ctx); got != want {
			t.Errorf("%v: exit %d, want %d", sig, got, want)
		}
	}
	// Cancelled without a signal (a test's own context): 130 as before.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := exitCodeOf(ctx); got != ExitInterrupted {
		t.Errorf("plain cancel: %d", got)
	}
	var in *Interrupted
	if !errors.As(error(&Interrupted{Signal: syscall.SIGHUP}), &in) {
		t.Fatal("Interrupted is not an error")
	}
}

// SignalContext turns the first of SIGINT, SIGTERM and SIGHUP into the cause of its context.
func TestSignalContextHUP(t *testing.T) {
	ctx, stop := SignalContext(context.Background())
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if got := exitCodeOf(ctx); got != 129 {
		t.Errorf("after SIGHUP: exit %d (cause %v), want 129", got, context.Cause(ctx))
	}
	// SIGPIPE is caught without ending anything: a write to a child's closed stdin is that
	// write's error only.
	ctx2, stop2 := SignalContext(context.Background())
	defer stop2()
	syscall.Kill(syscall.Getpid(), syscall.SIGPIPE)
	time.Sleep(200 * time.Millisecond) // signal delivery is asynchronous
	select {
	case <-ctx2.Done():
		t.Errorf("SIGPIPE cancelled the context: %v", context.Cause(ctx2))
	default:
	}
}

// The board's watchdog: a run whose input went quiet for longer than the link timeout ends as
// a hang-up that says why; input that keeps coming keeps it going. The clock is the test's: at
// each tick the watchdog reads how long the input has been quiet.
func TestWatchSilence(t *testing.T) {
	tests := []struct {
		name    string
		quiet   []time.Duration // at each tick
		stopped int             // the tick that ends the run; -1: none does
	}{
		{"fed", []time.Duration{time.Second, 14 * time.Second, 0, 59 * time.Second}, -1},
		{"silent", []time.Duration{time.Second, 30 * time.Second, 61 * time.Second, 70 * time.Second}, 2},
		{"exactly the timeout is not over it", []time.Duration{60 * time.Second}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			tick, vals := make(chan time.Time), make(chan time.Duration)
			read := 0 // how many values the watchdog read: its goroutine's alone until done
			done := make(chan struct{})
			go func() {
				watchSilence(ctx, cancel, time.Minute, tick, func() time.Duration { read++; return <-vals })
				close(done)
			}()
			stopped := -1
			for i, q := range tc.quiet {
				select {
				case tick <- time.Time{}:
					vals <- q
					continue
				case <-done: // it stopped at the value before
					stopped = i - 1
				}
				break
			}
			if stopped < 0 {
				// One tick more: taken once the last value was judged. The watchdog has
				// either stopped on it or waits for the next one.
				select {
				case tick <- time.Time{}:
					vals <- 0
					cancel(errors.New("test over"))
				case <-done:
					stopped = len(tc.quiet) - 1
				}
			}
			<-done
			if read != len(tc.quiet)+1 && stopped < 0 || stopped >= 0 && read != stopped+1 {
				t.Errorf("the watchdog read %d values", read)
			}
			if stopped != tc.stopped {
				t.Fatalf("stopped at tick %d, want %d", stopped, tc.stopped)
			}
			if tc.stopped < 0 {
				return
			}
			var in *Interrupted
			if !errors.As(context.Cause(ctx), &in) || in.ExitCode() != 129 || !strings.Contains(in.Error(), "went silent") {
				t.Errorf("cause %v: want a hang-up (129) that says the link went silent", context.Cause(ctx))
			}
		})
	}
}
