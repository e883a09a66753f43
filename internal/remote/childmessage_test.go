package remote

import "testing"

func TestChildMessage(t *testing.T) {
	tests := []struct{ line, want string }{
		{"12:00:01 fsbench: ext4 rep 1 mkfs: 0.03 s", "ext4 rep 1 mkfs: 0.03 s"},
		{"fsbench: interrupted", "fsbench: interrupted"},     // no time before it: kept whole
		{"the card fsbench: made", "the card fsbench: made"}, // not a child's prefix
		{"", ""},
	}
	for _, tc := range tests {
		if got := ChildMessage(tc.line); got != tc.want {
			t.Errorf("ChildMessage(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}
