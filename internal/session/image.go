package session

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
)

// CreateImage creates a sparse file of size bytes at path: no data blocks are allocated until
// something writes them. It refuses to overwrite an existing file (O_EXCL), so a mistyped
// path can never clobber a user's data. size must be a positive multiple of 512, the unit a
// loop device exposes (the kernel silently ignores a shorter tail).
func CreateImage(path string, size uint64) error {
	if size == 0 || size%512 != 0 {
		return fmt.Errorf("create image %s: size %d bytes: want a positive multiple of 512", path, size)
	}
	if size > math.MaxInt64 {
		return fmt.Errorf("create image %s: size %d bytes is too large", path, size)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create image %s: the file already exists; remove it or choose another path", path)
	}
	if err != nil {
		return fmt.Errorf("create image %s: %w", path, err)
	}
	// ftruncate extends the file with a hole; the file system allocates nothing for it.
	err = f.Truncate(int64(size))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// The file is ours (O_EXCL): removing a half-made one is safe.
		_ = os.Remove(path)
		return fmt.Errorf("create image %s of %d bytes: %w", path, size, err)
	}
	return nil
}
