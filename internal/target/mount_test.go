package target

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []mountEntry
		wantErr bool
	}{
		{
			name: "proc(5) example with optional field",
			in:   "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n",
			want: []mountEntry{{MountPoint: "/mnt2", FSType: "ext3", Source: "/dev/root"}},
		},
		{
			name: "no optional fields, several lines",
			in: "22 27 0:21 / /proc rw,relatime - proc proc rw\n" +
				"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n",
			want: []mountEntry{
				{MountPoint: "/proc", FSType: "proc", Source: "proc"},
				{MountPoint: "/", FSType: "ext4", Source: "/dev/vda"},
			},
		},
		{
			name: "two optional fields",
			in:   "40 27 7:3 / /tmp/a rw shared:5 master:2 - ext4 /dev/loop3 rw\n",
			want: []mountEntry{{MountPoint: "/tmp/a", FSType: "ext4", Source: "/dev/loop3"}},
		},
		{
			name: "escaped space tab newline backslash",
			in:   `41 27 7:4 / /tmp/my\040dir/t\011ab/n\012l/b\134s rw - ext4 /tmp/img\040file rw` + "\n",
			want: []mountEntry{{MountPoint: "/tmp/my dir/t\tab/n\nl/b\\s", FSType: "ext4", Source: "/tmp/img file"}},
		},
		{
			name: "root field escaped too, mount point plain",
			in:   `42 27 254:0 /some\040root /mnt/x rw - ext4 /dev/vda rw` + "\n",
			want: []mountEntry{{MountPoint: "/mnt/x", FSType: "ext4", Source: "/dev/vda"}},
		},
		{name: "empty", in: "", want: nil},
		{name: "blank lines ignored", in: "\n\n", want: nil},
		{name: "too few fields", in: "36 35 98:0 /mnt1\n", wantErr: true},
		{name: "no separator", in: "36 35 98:0 /mnt1 /mnt2 rw,noatime ext3 /dev/root rw\n", wantErr: true},
		{name: "nothing after separator", in: "36 35 98:0 /mnt1 /mnt2 rw - ext3\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMountinfo(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnescapeOctal(t *testing.T) {
	tests := []struct{ in, want string }{
		{`plain`, `plain`},
		{`a\040b`, "a b"},
		{`\134`, `\`},
		{`end\04`, `end\04`}, // truncated escape kept
		{`x\08y`, `x\08y`},   // 8 is not octal
		{`\400`, `\400`},     // does not fit a byte
		{`\101\102`, "AB"},   // consecutive
		{`trail\`, `trail\`}, // lone backslash
		{`\\040`, "\\ "},     // a backslash not starting an escape is kept; the next one does start one
	}
	for _, tt := range tests {
		if got := unescapeOctal(tt.in); got != tt.want {
			t.Errorf("unescapeOctal(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMountsUnderOrder(t *testing.T) {
	ms := []mountEntry{
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
		if diff := cmp.Diff(tt.want, mountsUnder(ms, tt.dir)); diff != "" {
			t.Errorf("mountsUnder(%s) (-want +got):\n%s", tt.dir, diff)
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
	old := mountinfoPath
	mountinfoPath = fake
	t.Cleanup(func() { mountinfoPath = old })

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
