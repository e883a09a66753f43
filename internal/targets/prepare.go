package targets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/fsbench/fsbench/internal/bytesize"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/session"
	"golang.org/x/sys/unix"
)

// AttachLoopTo binds a loop device to backing, records and registers its detaching, and fills the
// device fields of p.
func AttachLoopTo(s *session.Session, backing string, direct bool, p *Prepared) error {
	loop, err := session.AttachLoop(backing, session.LoopOptions{DirectIO: direct})
	if err != nil {
		return err
	}
	if err := s.Ledger.AddLoop(loop.Path, backing); err != nil {
		loop.Detach()
		return err
	}
	s.OnClose("loop device "+loop.Path, loop.Detach)
	if direct && !loop.DirectIO {
		p.Notes = append(p.Notes, fmt.Sprintf("warning: the kernel did not enable direct I/O on %s (the backing file's filesystem may not support O_DIRECT): reads may be answered by the host's page cache", loop.Path))
	}
	p.Device, p.DeviceName = loop.Path, loop.Name
	p.Result.SizeBytes, p.Result.Device, p.Result.LoopMethod, p.Result.DirectIO = p.Size, loop.Path, loop.Method, loop.DirectIO
	if id, err := blockdev.Identify("/sys", loop.Name); err == nil {
		p.Identity = &id
	} else {
		p.Notes = append(p.Notes, fmt.Sprintf("warning: reading the identity of %s: %v", loop.Name, err))
	}
	return nil
}

// BackingHealth says when the filesystem holding a loop device's backing file is full: the
// loop device's writes then fail with I/O errors that look like the tested filesystem's own.
func BackingHealth(dir, what string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil
	}
	if free := st.Bavail * uint64(st.Bsize); free < 4<<20 {
		return fmt.Errorf("the filesystem holding the %s is full (%s free): the device's writes failed there, not in the filesystem under test; free some space or put the image on a larger filesystem (--image)", what, bytesize.Format(free))
	}
	return nil
}

// RemoveFile removes a file the run made; already gone is fine.
func RemoveFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// CheckRoom refuses a sparse image of size bytes in dir when dir's filesystem has less free
// space than that.
func CheckRoom(dir string, size uint64, what string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // the directory does not exist yet; making it will say what is wrong
	}
	free := st.Bavail * uint64(st.Bsize)
	if free < size {
		return plan.Refusef("the filesystem holding %s (%s) has %s free, but the run writes up to %s into its sparse image: use a smaller --size (at most %s) or put the image elsewhere with %s",
			dir, what, bytesize.Format(free), bytesize.Format(size), bytesize.Format(free/(1<<20)*(1<<20)), what)
	}
	return nil
}
