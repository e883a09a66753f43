package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsbench/fsbench/internal/mountinfo"
)

func TestMountsUnderOrder(t *testing.T) {
	ms := []mountinfo.Entry{
		{MountPoint: "/"},
		{MountPoint: "/run/x"},
		{MountPoint: "/run/x/a"},
		{MountPoint: "/run/xy"}, // sibling with a common prefix: not under /run/x
		{MountPoint: "/run/x/a/b"},
		{MountPoint: "/run/x"}, // stacked on /run/x, more recent
		{MountPoint: "/run/x/c"},
	}
	tests := []struct {
		dir  string
		want []string
	}{
		{"/run/x", []string{"/run/x/a/b", "/run/x/c", "/run/x/a", "/run/x", "/run/x"}},
		{"/run/x/a", []string{"/run/x/a/b", "/run/x/a"}},
		{"/run/none", nil},
		{"/", []string{"/run/x/a/b", "/run/x/c", "/run/x/a", "/run/x", "/run/xy", "/run/x", "/"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, mountinfo.UnderIn(ms, tt.dir)); diff != "" {
			t.Errorf("UnderIn(%s) (-want +got):\n%s", tt.dir, diff)
		}
	}
}

// TestMountedAtFake points the mount table at a file, so that a mount point with a space
// and a symlinked path are resolved the way the kernel writes them.
func TestMountedAtFake(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "my dir")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realResolved, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	esc := strings.ReplaceAll(realResolved, " ", `\040`)
	fake := filepath.Join(dir, "mountinfo")
	content := "27 1 254:0 / / rw - ext4 /dev/vda rw\n" +
		"50 27 7:3 / " + esc + " rw - ext4 /dev/loop3 rw\n" +
		"51 50 0:40 / " + esc + "/sub rw - tmpfs tmpfs rw\n"
	if err := os.WriteFile(fake, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old := mountinfo.TablePath
	mountinfo.TablePath = fake
	t.Cleanup(func() { mountinfo.TablePath = old })

	for _, tt := range []struct {
		dir  string
		want bool
	}{{real, true}, {link, true}, {dir, false}, {filepath.Join(real, "sub"), true}, {filepath.Join(real, "other"), false}} {
		got, err := MountedAt(tt.dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("MountedAt(%s) = %v, want %v", tt.dir, got, tt.want)
		}
	}
	got, err := MountsUnder(link)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{realResolved + "/sub", realResolved}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MountsUnder (-want +got):\n%s", diff)
	}
}

func TestMountedAtReal(t *testing.T) {
	if got, err := MountedAt("/"); err != nil || !got {
		t.Errorf("MountedAt(/) = %v, %v; want true", got, err)
	}
	if got, err := MountedAt(t.TempDir()); err != nil || got {
		t.Errorf("MountedAt(fresh temp dir) = %v, %v; want false", got, err)
	}
}
