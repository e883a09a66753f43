package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
)

// restoreFailDev refuses every write once fail is set: a card that stops taking writes in the
// middle of the restore.
type restoreFailDev struct {
	Device
	fail *atomic.Bool
}

func (d restoreFailDev) WriteAt(p []byte, off int64) (int, error) {
	if d.fail.Load() {
		return 0, fmt.Errorf("input/output error")
	}
	return d.Device.WriteAt(p, off)
}

// TestRestoreFailsExit6 forces a restore to fail (the card refuses writes from the middle of
// the restore on) and checks what a user sees: the error carries exit code 6 (ExitNotRestored:
// the card holds the probe's blocks) through the same interface the command line maps to exit
// codes (cli.Main: an error with an ExitCode method), not 1; the result says so; the undo log
// is kept for fsbench cleanup.
func TestRestoreFailsExit6(t *testing.T) {
	for _, noReset := range []bool{false, true} {
		t.Run(fmt.Sprintf("noreset=%v", noReset), func(t *testing.T) {
			tg, _, _ := simTarget(t, "sd-typical", 256<<20)
			var fail atomic.Bool
			tg.Dev = restoreFailDev{Device: tg.Dev, fail: &fail}
			old := hook
			hook = func(point string) {
				if point == "restoring" {
					fail.Store(true)
				}
			}
			defer func() { hook = old }()
			r, err := Probe(context.Background(), tg, Options{UndoDir: t.TempDir(), NoReset: noReset, MaxCache: 8 << 20})
			var ec interface{ ExitCode() int }
			if err == nil || !errors.As(err, &ec) || ec.ExitCode() != ExitNotRestored {
				t.Fatalf("error %v: want one carrying exit code %d", err, ExitNotRestored)
			}
			if r == nil || r.Restored || r.RestoreError == "" || r.UndoLog == "" || r.ExitCode() != ExitNotRestored {
				t.Fatalf("result %+v: want not restored, with the error and the kept undo log", r)
			}
			if !strings.Contains(err.Error(), "fsbench cleanup") || !strings.Contains(err.Error(), r.UndoLog) {
				t.Errorf("the error does not say what to do: %v", err)
			}
			t.Logf("exit %d: %v", ec.ExitCode(), err)
		})
	}
}

// TestEstimate: what the check says before it writes is what it then does on a genuine card
// (bytes written within 1 %, bytes read within 5 %), with and without a reset and an undo log;
// and it says so in words.
func TestEstimate(t *testing.T) {
	for _, c := range []struct {
		noReset, noUndo bool
	}{{false, false}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("noreset=%v/noundo=%v", c.noReset, c.noUndo), func(t *testing.T) {
			tg, _, _ := simTarget(t, "sd-typical", 512<<20)
			var said string
			r, err := Probe(context.Background(), tg, Options{UndoDir: t.TempDir(), NoReset: c.noReset, NoUndo: c.noUndo,
				Announce: func(s string) { said = s }})
			if err != nil {
				t.Fatal(err)
			}
			e := r.Estimate
			t.Logf("said: %s\nwrote %s (copied %s), read %s", said, size(r.BytesWritten), size(r.BytesCopied), size(r.BytesRead))
			if said == "" || !strings.Contains(said, size(e.Written)) {
				t.Errorf("announced %q, want the bytes it writes (%s)", said, size(e.Written))
			}
			if c.noUndo != strings.Contains(said, "no undo log") {
				t.Errorf("announced %q: no undo log is %v", said, c.noUndo)
			}
			if math.Abs(float64(r.BytesWritten)/float64(e.Written)-1) > 0.01 {
				t.Errorf("wrote %d bytes, estimated %d", r.BytesWritten, e.Written)
			}
			if math.Abs(float64(r.BytesRead)/float64(e.Read)-1) > 0.05 {
				t.Errorf("read %d bytes, estimated %d", r.BytesRead, e.Read)
			}
			if c.noReset && !c.noUndo && math.Abs(float64(r.BytesCopied)/float64(e.Copied)-1) > 0.01 {
				t.Errorf("copied %d bytes, estimated %d", r.BytesCopied, e.Copied)
			}
		})
	}
}
