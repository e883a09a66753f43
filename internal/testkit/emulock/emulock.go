// Package emulock lets one test at a time boot an emulated machine (QEMU under TCG) on this
// machine. go test runs packages in parallel, so the emulated ARM board's test and the x86
// guest's tests ran side by side: on a 2-core machine each emulator got half the speed, and a
// guest run that takes two minutes alone missed its five-minute limit. It is for tests only;
// it lives outside a _test.go file because tests of several packages share it.
package emulock

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Path is the lock file: one per machine, in the temporary directory every test process shares.
var Path = filepath.Join(os.TempDir(), "fsbench-emulated-test.lock")

// Hold blocks until no other test process holds the lock, then holds it until t ends. Limits
// on how long the emulated machine may take should start after Hold returns.
func Hold(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(Path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatalf("emulock: %v", err)
	}
	start := time.Now()
	// flock, not a lock file's existence: the kernel drops it when the holder dies, so a
	// killed test never blocks the next run.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("emulock: lock %s: %v", Path, err)
	}
	if w := time.Since(start); w > time.Second {
		t.Logf("waited %v for another test's emulated machine to finish", w.Round(time.Second))
	}
	t.Cleanup(func() { f.Close() }) // closing the descriptor releases the lock
}
