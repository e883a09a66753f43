package aging

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMeasureLayout(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file with a hole in its middle: two extents whatever the filesystem.
	f, err := os.Create(filepath.Join(dir, "holey"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(big[:64<<10], 0)
	f.WriteAt(big[:64<<10], 1<<20)
	f.Close()
	l, err := MeasureLayout(dir)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTTY) {
		t.Skipf("the filesystem of %s has no FIEMAP (tmpfs): run with TMPDIR on ext4, xfs or btrfs: %v", dir, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Files != 3 || l.Mapped != 2 {
		t.Errorf("files %d mapped %d, want 3 and 2 (the empty file has no extent)", l.Files, l.Mapped)
	}
	if l.Extents < 3 || l.MaxExtents < 2 || l.Fragmented < 0.5 {
		t.Errorf("%+v: the holey file must be in two extents at least", l)
	}
	if l.Score <= 0 || l.Score >= 1 {
		t.Errorf("layout score %v: a hole is a break, and most blocks follow each other", l.Score)
	}
}
