package vm

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/cpio"
	"github.com/fsbench/fsbench/internal/testkit/golden"
)

func TestArchiveGolden(t *testing.T) {
	a := cpio.New()
	a.Data("/etc/passwd", []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	a.Symlink("/bin/sh", "busybox")
	a.Dir("/proc", 0o755)
	a.Data("/etc/passwd", []byte("second add is ignored"), 0o644)
	var buf bytes.Buffer
	if err := a.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d is not a multiple of 4", buf.Len())
	}
	// Parents (/bin, /etc) are added, and come before their children.
	s := buf.String()
	if i, j := strings.Index(s, "etc\x00"), strings.Index(s, "etc/passwd\x00"); i < 0 || j < i {
		t.Errorf("/etc missing or after /etc/passwd")
	}
	golden.Check(t, "archive.cpio", buf.Bytes())
}

func TestShQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"run", "run"},
		{"--size=128M", "--size=128M"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'"'"'s'`},
		{"$HOME", "'$HOME'"},
	} {
		if got := shQuote(tc.in); got != tc.want {
			t.Errorf("shQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestCheckCardSize(t *testing.T) {
	for _, tc := range []struct {
		size uint64
		ok   bool
	}{{128 << 20, true}, {1 << 30, true}, {0, false}, {100 << 20, false}, {128<<20 + 512<<10, false}} {
		if err := CheckCardSize(tc.size); (err == nil) != tc.ok {
			t.Errorf("CheckCardSize(%d) = %v, want ok=%v", tc.size, err, tc.ok)
		}
	}
}

func TestKernelRelease(t *testing.T) {
	dir := t.TempDir()
	img := make([]byte, 0x400)
	copy(img[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(img[0x20e:], 0x100) // version string at 0x300
	copy(img[0x300:], "6.1.0-56-amd64 (debian-kernel@lists.debian.org) #1 SMP\x00")
	good := filepath.Join(dir, "vmlinuz")
	bad := filepath.Join(dir, "notkernel")
	os.WriteFile(good, img, 0o644)
	os.WriteFile(bad, make([]byte, 0x400), 0o644)
	if rel, err := KernelRelease(good); err != nil || rel != "6.1.0-56-amd64" {
		t.Errorf("KernelRelease = %q, %v; want 6.1.0-56-amd64", rel, err)
	}
	if _, err := KernelRelease(bad); err == nil || !strings.Contains(err.Error(), "bzImage") {
		t.Errorf("KernelRelease(not a kernel) = %v, want a bzImage error", err)
	}
}

func TestInitScriptGolden(t *testing.T) {
	s := initScript("/srv/out dir", []string{"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"}, "/usr/sbin/modprobe",
		[]string{guestFsbench, "run", "--target", "device:/dev/mmcblk0", "-o", "/srv/out dir/r"})
	golden.Check(t, "init.sh", []byte(s))
}

// TestAddExecutableDeps resolves a real dynamic program of this machine: its interpreter and
// libc must be added, and their directory exported.
func TestAddExecutableDeps(t *testing.T) {
	const prog = "/bin/ls"
	if _, err := os.Stat(prog); err != nil {
		t.Skip("no /bin/ls")
	}
	a := cpio.New()
	r := &libResolver{}
	if err := r.addExecutable(a, "/bin/ls", prog); err != nil {
		t.Fatal(err)
	}
	var libc, interp bool
	for _, p := range a.Paths() {
		libc = libc || strings.HasSuffix(p, "/libc.so.6")
		interp = interp || strings.Contains(p, "/ld-linux")
	}
	if !libc || !interp || len(r.used) == 0 {
		t.Errorf("ls: libc %v, interpreter %v, library dirs %v; want all", libc, interp, r.used)
	}
}
