package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   \t\n", nil},
		{"-m single", []string{"-m", "single"}},
		{"  -m   single  ", []string{"-m", "single"}},
		{"-O ^has_journal -b 4096 -E stride=4,stripe-width=1024",
			[]string{"-O", "^has_journal", "-b", "4096", "-E", "stride=4,stripe-width=1024"}},
		{"-zlz4hc", []string{"-zlz4hc"}},
		{`-L "my label"`, []string{"-L", "my label"}},
		{`-L 'my label'`, []string{"-L", "my label"}},
		{`-L my\ label`, []string{"-L", "my label"}},
		{`a"b c"'d e'f`, []string{"ab cd ef"}},
		{`"" ''`, []string{"", ""}},
		{`-L ""`, []string{"-L", ""}},
		{`'a\b' "a\b"`, []string{`a\b`, `a\b`}},                        // \ is literal in '' and before b in ""
		{`"say \"hi\" \\ \$HOME \x"`, []string{`say "hi" \ $HOME \x`}}, // escapes in ""
		{`'it'\''s'`, []string{"it's"}},
		{`$HOME ~ * $(id)`, []string{"$HOME", "~", "*", "$(id)"}}, // no expansion
		{"compress_extension=*", []string{"compress_extension=*"}},
		{"a\\\nb", []string{"ab"}}, // backslash-newline joins
		{"\"a\\\nb\"", []string{"ab"}},
		{"a\tb\nc", []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		got, err := SplitArgs(tt.in)
		if err != nil {
			t.Errorf("SplitArgs(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SplitArgs(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestSplitArgsErrors(t *testing.T) {
	tests := []struct {
		in, wantSub string
	}{
		{`-E "stride=4`, "unterminated double quote"},
		{`-L 'label`, "unterminated single quote"},
		{`"a\"`, "unterminated double quote"},
		{`'a'b'`, "unterminated single quote"},
		{`abc\`, "trailing backslash"},
	}
	for _, tt := range tests {
		got, err := SplitArgs(tt.in)
		if err == nil {
			t.Errorf("SplitArgs(%q) = %q, want an error", tt.in, got)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantSub) {
			t.Errorf("SplitArgs(%q) error %q does not contain %q", tt.in, err, tt.wantSub)
		}
	}
}
