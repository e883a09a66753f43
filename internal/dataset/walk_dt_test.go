package dataset

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestModeToDT checks the shift against every file type the kernel names.
func TestModeToDT(t *testing.T) {
	for _, tc := range []struct {
		mode uint32
		dt   uint8
	}{
		{unix.S_IFREG | 0o644, unix.DT_REG}, {unix.S_IFDIR | 0o755, unix.DT_DIR}, {unix.S_IFLNK | 0o777, unix.DT_LNK},
		{unix.S_IFCHR, unix.DT_CHR}, {unix.S_IFBLK, unix.DT_BLK}, {unix.S_IFIFO, unix.DT_FIFO}, {unix.S_IFSOCK, unix.DT_SOCK},
		{0o644, unix.DT_UNKNOWN},
	} {
		if got := modeToDT(tc.mode); got != tc.dt {
			t.Errorf("modeToDT(%#o) = %d, want %d", tc.mode, got, tc.dt)
		}
	}
}
