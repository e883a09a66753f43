package procid

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Outcome is what TakeOver found.
type Outcome int

const (
	// Taken: the caller holds the record's lock and undoes it, then removes the record.
	Taken Outcome = iota
	// Gone: another fsbench undid the record and removed it (before, or while this one waited).
	Gone
	// Busy: another fsbench still held the record when the wait ended.
	Busy
)

// TakeOver takes a dead process's record (a ledger, an undo log) for undoing. Every fsbench
// run cleans up what dead ones left when it starts, and "fsbench cleanup" does too, so two of
// them can find the same record at once and undo it together: each then reports half of it, or
// fails on a device the other holds (EBUSY). TakeOver holds an exclusive flock on the record,
// waiting up to wait for another that holds it: whoever called it (a run about to use loop
// devices, a user who typed fsbench cleanup) expects the record undone when it returns. With
// Taken, release drops the lock once the record is undone and removed; otherwise release is a
// no-op.
func TakeOver(path string, wait time.Duration) (release func(), o Outcome, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, Gone, nil
	}
	if err != nil {
		return func() {}, Busy, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return func() {}, Busy, nil
			}
			return func() {}, Busy, fmt.Errorf("lock %s: %w", path, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A process that got the lock after another had undone the record and removed it holds
	// the lock of an unlinked file: nothing is left to do.
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err == nil && st.Nlink == 0 {
		f.Close()
		return func() {}, Gone, nil
	}
	return func() { f.Close() }, Taken, nil
}
