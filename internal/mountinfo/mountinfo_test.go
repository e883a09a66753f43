package mountinfo

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Entry
		wantErr bool
	}{
		{
			name: "proc(5) example with optional field",
			in:   "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n",
			want: []Entry{{MajorMinor: "98:0", Root: "/mnt1", MountPoint: "/mnt2", FSType: "ext3", Source: "/dev/root"}},
		},
		{
			name: "no optional fields, several lines",
			in: "22 27 0:21 / /proc rw,relatime - proc proc rw\n" +
				"27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n",
			want: []Entry{
				{MajorMinor: "0:21", Root: "/", MountPoint: "/proc", FSType: "proc", Source: "proc"},
				{MajorMinor: "254:0", Root: "/", MountPoint: "/", FSType: "ext4", Source: "/dev/vda"},
			},
		},
		{
			name: "two optional fields",
			in:   "40 27 7:3 / /tmp/a rw shared:5 master:2 - ext4 /dev/loop3 rw\n",
			want: []Entry{{MajorMinor: "7:3", Root: "/", MountPoint: "/tmp/a", FSType: "ext4", Source: "/dev/loop3"}},
		},
		{
			name: "escaped space tab newline backslash",
			in:   `41 27 7:4 / /tmp/my\040dir/t\011ab/n\012l/b\134s rw - ext4 /tmp/img\040file rw` + "\n",
			want: []Entry{{MajorMinor: "7:4", Root: "/", MountPoint: "/tmp/my dir/t\tab/n\nl/b\\s", FSType: "ext4", Source: "/tmp/img file"}},
		},
		{
			name: "root field escaped too, mount point plain",
			in:   `42 27 254:0 /some\040root /mnt/x rw - ext4 /dev/vda rw` + "\n",
			want: []Entry{{MajorMinor: "254:0", Root: "/some root", MountPoint: "/mnt/x", FSType: "ext4", Source: "/dev/vda"}},
		},
		{name: "empty", in: "", want: nil},
		{name: "blank lines ignored", in: "\n\n", want: nil},
		{name: "too few fields", in: "36 35 98:0 /mnt1\n", wantErr: true},
		{name: "no separator", in: "36 35 98:0 /mnt1 /mnt2 rw,noatime ext3 /dev/root rw\n", wantErr: true},
		{name: "nothing after separator", in: "36 35 98:0 /mnt1 /mnt2 rw - ext3\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnescape(t *testing.T) {
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
		if got := Unescape(tt.in); got != tt.want {
			t.Errorf("Unescape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestReadThisProcess(t *testing.T) {
	ms, err := Read("")
	if err != nil {
		t.Fatal(err)
	}
	var root bool
	for _, m := range ms {
		root = root || m.MountPoint == "/"
	}
	if !root {
		t.Errorf("no / in this process's mount table: %+v", ms)
	}
}
