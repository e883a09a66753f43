package boards

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/remote"
)

func TestSSHCommand(t *testing.T) {
	spec, err := plan.ParseTarget("ssh://root@board:2222/dev/mmcblk0p3")
	if err != nil {
		t.Fatal(err)
	}
	c := remote.NewSSH(spec, []string{"-F", "/etc/board.conf"})
	c.Program = "ssh"
	got := c.Command(context.Background(), "uname -m").Args
	want := []string{"ssh", "-F", "/etc/board.conf", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", "-p", "2222", "--", "root@board", "uname -m"}
	if !slices.Equal(got, want) {
		t.Errorf("ssh command %q, want %q", got, want)
	}
	if q := remote.Shq("it's /tmp/a b"); q != `'it'\''s /tmp/a b'` {
		t.Errorf("shq = %s", q)
	}
}

func TestGoArch(t *testing.T) {
	for m, want := range map[string]string{"aarch64": "arm64", "armv7l": "armv7", "x86_64": "amd64"} {
		if got, err := remote.GoArch(m); err != nil || got != want {
			t.Errorf("goArch(%s) = %s, %v", m, got, err)
		}
	}
	if _, err := remote.GoArch("mips"); err == nil || !strings.Contains(err.Error(), "make cross") {
		t.Errorf("goArch(mips): %v", err)
	}
}

func TestPackUnpack(t *testing.T) {
	src := t.TempDir()
	for name, content := range map[string]string{"results.json": "{}", "traces/a.fsbtrace": "x", ".fsbench": "marker", ".work-1/img": "no"} {
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	var b bytes.Buffer
	if err := remote.Pack(&b, src); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := remote.Unpack(bytes.NewReader(b.Bytes()), dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"results.json": true, "traces/a.fsbtrace": true, ".fsbench": false, ".work-1/img": false} {
		_, err := os.Stat(filepath.Join(dst, name))
		if (err == nil) != want {
			t.Errorf("%s copied: %v, want %v", name, err == nil, want)
		}
	}
	// A stream naming a file outside the directory is refused.
	for _, name := range []string{"../escape", "/etc/passwd", "a/../../b"} {
		var evil bytes.Buffer
		tw := tar.NewWriter(&evil)
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		tw.Write([]byte("x"))
		tw.Close()
		if err := remote.Unpack(&evil, dst); err == nil {
			t.Errorf("%s: unpacked", name)
		}
	}
}

func TestMissingOnBoard(t *testing.T) {
	facts := fs.Facts{Kinds: map[string]fs.Availability{
		"ext4": {Runs: true, Kernel: fs.KernelBuiltIn},
		"f2fs": {Kernel: fs.KernelMissing, Reason: "mkfs.f2fs not found: install the Debian package f2fs-tools; this kernel has no f2fs"},
	}}
	cfg := plan.Default()
	cfg.Variants = []plan.Variant{{Name: "ext4", FS: "ext4"}, {Name: "f2fs", FS: "f2fs"}}
	m := Missing(cfg, facts)
	if len(m) != 1 {
		t.Fatalf("missing %v", m)
	}
	for _, want := range []string{"apt install f2fs-tools", "BR2_PACKAGE_F2FS_TOOLS=y", `IMAGE_INSTALL += "f2fs-tools`, "CONFIG_F2FS_FS"} {
		if !strings.Contains(m[0], want) {
			t.Errorf("%q lacks %q", m[0], want)
		}
	}
}
