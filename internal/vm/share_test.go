package vm

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNormalizeShare gives what QEMU's mapped-xattr made for the guest (a 0600 file marked as a
// block device, a 0700 directory) the host's plain modes and drops the marks, and leaves the
// host's own files (the card image, 0600 on purpose) alone; mapped-file's metadata goes too.
func TestNormalizeShare(t *testing.T) {
	dir := t.TempDir()
	if shareModel(dir) != "mapped-xattr" {
		t.Skipf("%s keeps no user extended attributes: mapped-file would be used", dir)
	}
	mk := func(p string, mode os.FileMode, marks map[string]string) {
		if mode.IsDir() {
			if err := os.Mkdir(p, mode.Perm()); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		for k, v := range marks {
			if err := unix.Setxattr(p, k, []byte(v), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	node := filepath.Join(dir, "node")
	mk(node, 0o600, map[string]string{"user.virtfs.mode": "\x80\x61\x00\x00", "user.virtfs.rdev": "\x00\x07\x00\x00"})
	sub := filepath.Join(dir, "sub")
	mk(sub, os.ModeDir|0o700, map[string]string{"user.virtfs.mode": "x"})
	own := filepath.Join(dir, "card.img")
	mk(own, 0o600, nil)
	meta := filepath.Join(dir, "sub", mappedMetadata)
	mk(meta, os.ModeDir|0o700, nil)
	mk(filepath.Join(dir, "sub", "f"), 0o600, nil)
	mk(filepath.Join(meta, "f"), 0o600, nil)
	if err := normalizeShare(dir); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{node: 0o644, sub: os.ModeDir | 0o755, own: 0o600, filepath.Join(dir, "sub", "f"): 0o644} {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, want)
		}
		if len(mappedMarks(p)) > 0 {
			t.Errorf("%s keeps %v", p, mappedMarks(p))
		}
	}
	if _, err := os.Stat(meta); err == nil {
		t.Errorf("%s is left", meta)
	}
}
