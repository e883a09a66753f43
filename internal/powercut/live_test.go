package powercut

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestLivePromisesKeepWhatTheHostHeard runs the workload in a directory with its promises
// streamed to a host-side Promises through pipes, as a board does over SSH, and freezes the
// promises part of the way: the directory (whose workload stopped at the host's missing go)
// keeps every promise the host heard of, and an operation never answered never started.
func TestLivePromisesKeepWhatTheHostHeard(t *testing.T) {
	for _, tc := range []struct {
		name   string
		freeze int // freeze at the intent of this operation (-1: never)
	}{{"whole workload", -1}, {"frozen at op 37", 37}, {"frozen at op 1", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			boardR, hostW := io.Pipe()
			hostR, boardW := io.Pipe()
			p := NewPromises(7)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				obs := &StreamObserver{W: boardW, R: bufio.NewReader(boardR)}
				_, err := Workload{Spec: Spec{Seed: 7, Ops: 80, LargeBytes: 64 << 10}, Observer: obs}.Run(ctx, dir)
				if err == nil {
					err = obs.Send(Event{E: EventEnd})
				}
				boardW.CloseWithError(io.EOF)
				done <- err
			}()
			follow := make(chan error, 1)
			go func() {
				follow <- Follow(hostR, hostW, p, func(e Event) {
					if e.E == EventIntent && e.N == tc.freeze {
						p.Freeze()
						// The board now waits for a go that never comes: end it there, as
						// the power would.
						boardR.CloseWithError(io.ErrClosedPipe)
					}
				}, nil)
			}()
			werr := <-done
			if tc.freeze < 0 && werr != nil {
				t.Fatalf("workload: %v", werr)
			}
			if tc.freeze >= 0 && werr == nil {
				t.Fatal("the workload went on without the host's go")
			}
			hostR.Close()
			<-follow
			pos := p.Freeze()
			if tc.freeze < 0 && !p.Ended() {
				t.Error("the host did not hear the end of the workload")
			}
			m := p.Manifest()
			chk, err := m.Verify(dir, pos)
			if err != nil {
				t.Fatal(err)
			}
			if chk.Violations() != 0 || chk.ZeroTails != 0 {
				t.Errorf("cut at %d: %d broken promises: %v", pos, chk.Violations(), chk.Problems)
			}
			if p.Acks() == 0 && tc.freeze != 1 {
				t.Errorf("no acknowledgement reached the host")
			}
			if p.InFlight() != 0 {
				t.Errorf("in flight: %d, want 0 (the frozen intent was never answered, so it never started)", p.InFlight())
			}
			if tc.freeze < 0 {
				// The control: a file the host heard acknowledged, removed behind its back,
				// is a broken promise.
				for _, f := range m.Files {
					if v := f.Versions[len(f.Versions)-1]; v.Ack != 0 && !v.Deleted {
						if err := os.Remove(filepath.Join(dir, f.Path)); err != nil {
							t.Fatal(err)
						}
						break
					}
				}
				if chk, _ := m.Verify(dir, pos); chk.AckedLost != 1 {
					t.Errorf("an acknowledged file removed: %d lost, want 1", chk.AckedLost)
				}
			}
			t.Logf("%d operations heard, %d acknowledgements, cut at position %d, %d files checked", p.Ops(), p.Acks(), pos, chk.Files)
		})
	}
}
