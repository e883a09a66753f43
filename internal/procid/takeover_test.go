package procid

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestTakeOver: one fsbench takes a dead process's record; another that finds it meanwhile
// waits, and learns that it is gone once the first removed it, or that it is busy when its
// wait ends first; a record already removed is gone.
func TestTakeOver(t *testing.T) {
	p := filepath.Join(t.TempDir(), "123-abc.ledger")
	if err := os.WriteFile(p, []byte("record"), 0o600); err != nil {
		t.Fatal(err)
	}
	release, o, err := TakeOver(p, time.Second)
	if err != nil || o != Taken {
		t.Fatalf("first: %v, %v: want taken", o, err)
	}
	if rel, o, err := TakeOver(p, 200*time.Millisecond); err != nil || o != Busy {
		t.Errorf("second while the first holds it: %v, %v: want busy", o, err)
	} else {
		rel()
	}
	done := make(chan Outcome)
	go func() {
		rel, o, err := TakeOver(p, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		rel()
		done <- o
	}()
	time.Sleep(300 * time.Millisecond) // the second is waiting on the lock
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	release()
	if o := <-done; o != Gone {
		t.Errorf("the one that waited: %v, want gone (the first removed the record)", o)
	}
	if _, o, err := TakeOver(p, time.Second); err != nil || o != Gone {
		t.Errorf("a removed record: %v, %v: want gone", o, err)
	}
}
