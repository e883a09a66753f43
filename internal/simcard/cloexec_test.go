//go:build !(arm || 386 || mips || mipsle)

package simcard

import (
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloseFUSEOnExec: a /dev/fuse descriptor opened the way go-fuse opens it (syscall.Open,
// no O_CLOEXEC) is marked close-on-exec, so that programs the server starts cannot keep a dead
// card's connection alive.
func TestCloseFUSEOnExec(t *testing.T) {
	fd, err := syscall.Open("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("cannot open /dev/fuse (needs root and the fuse module): %v", err)
	}
	defer syscall.Close(fd)
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC != 0 {
		t.Fatal("syscall.Open set FD_CLOEXEC itself: the test no longer shows the leak it guards against")
	}
	closeFUSEOnExec()
	if flags, err = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
		t.Fatal(err)
	}
	if flags&unix.FD_CLOEXEC == 0 {
		t.Error("the /dev/fuse descriptor is still inherited by programs this process starts")
	}
}
