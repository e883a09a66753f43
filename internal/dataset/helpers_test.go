package dataset

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
}

// mountTmpfs mounts a tmpfs of the given size under a new t.TempDir() and unmounts it in
// t.Cleanup (registered after TempDir's removal, so it runs before it).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	requireRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("fsbench-test", dir, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
