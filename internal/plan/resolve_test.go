package plan

import (
	"strings"
	"testing"
)

func TestParseVariantList(t *testing.T) {
	known := []Variant{{Name: "ext4/relatime"}, {Name: "ext4/noatime"}, {Name: "ext4/noatime,dirsync"}, {Name: "xfs"}}
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"xfs,ext4/noatime", []string{"xfs", "ext4/noatime"}, ""},
		{"ext4/noatime,dirsync", []string{"ext4/noatime,dirsync"}, ""}, // exactly one known name
		{`ext4/noatime\,dirsync,xfs`, []string{"ext4/noatime,dirsync", "xfs"}, ""},
		{`"ext4/noatime,dirsync", xfs`, []string{"ext4/noatime,dirsync", "xfs"}, ""},
		{"ext4/noatime,dirsync,xfs", nil, `no variant "dirsync"`},
		{"ext5", nil, `no variant "ext5"`},
		{`"xfs`, nil, "unterminated"},
	}
	for _, tc := range tests {
		got, err := ParseVariantList(tc.in, known)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	// A name the user cut at its comma gets told how to write it.
	_, err := ParseVariantList("ext4/noatime,dirsync,xfs", known)
	if err == nil || !strings.Contains(err.Error(), "escaped") {
		t.Errorf("no hint about commas: %v", err)
	}
}
