package mountinfo

import (
	"strings"
	"testing"
)

func TestMountedAt(t *testing.T) {
	const table = `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
61 22 7:3 / /nonexistent/fsbench/mnt rw,noatime - xfs /dev/loop3 rw
62 22 7:4 / /nonexistent/fsbench/with\040space rw - ext4 /dev/loop4 rw
63 22 0:50 / /nonexistent/fsbench/back\134slash rw - tmpfs tmpfs rw
`
	tests := []struct {
		dir  string
		want bool
	}{
		{"/nonexistent/fsbench/mnt", true},
		{"/nonexistent/fsbench/mnt/", true},
		{"/nonexistent/fsbench/with space", true},
		{`/nonexistent/fsbench/back\slash`, true},
		{"/nonexistent/fsbench", false},
		{"/nonexistent/fsbench/mn", false},
	}
	for _, tt := range tests {
		ms, err := Parse(strings.NewReader(table))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := atPath(ms, tt.dir); err != nil || got != tt.want {
			t.Errorf("atPath(%q) = %v, %v; want %v", tt.dir, got, err, tt.want)
		}
	}
}
