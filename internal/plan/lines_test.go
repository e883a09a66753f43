package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScanKeyLines(t *testing.T) {
	text := `# comment with key = 1 and [[variant]]
size = "1G"   # [not a table]
tests = [
  "mkfs",
  "write", # a = 2
]
description = """
suite = "inside a multi-line string"
[[variant]]
"""
literal = '''
seed = 7 ''' 
"quoted key" = 1
'single' = 2
dotted.part = 3
  indented = 4
s = "a # b [c" ; x = 1

[[variant]]
fs = ["ext4",
      "xfs"]
mount = "noatime"

[other]
mount = "ignored: not in a variant"

[[ variant ]]  # spaces inside the brackets
name = "x"
mkfs.y = 1
[variant.sub]
z = 1
[[variant]]
`
	kl := scanKeyLines(text)
	wantTop := map[string]int{
		"size": 2, "tests": 3, "description": 7, "literal": 11, "quoted key": 13, "single": 14,
		"dotted": 15, "indented": 16, "s": 17, "other": 24,
	}
	if diff := cmp.Diff(wantTop, kl.top); diff != "" {
		t.Errorf("top-level keys (-want +got):\n%s", diff)
	}
	wantVariants := []tableLines{
		{header: 19, keys: map[string]int{"fs": 20, "mount": 22}},
		{header: 27, keys: map[string]int{"name": 28, "mkfs": 29, "sub": 30}},
		{header: 32, keys: map[string]int{}},
	}
	if diff := cmp.Diff(wantVariants, kl.variants, cmp.AllowUnexported(tableLines{})); diff != "" {
		t.Errorf("variants (-want +got):\n%s", diff)
	}

	// Lookups fall back to the table header, then to the "variant" key.
	for _, tt := range []struct {
		i    int
		key  string
		want int
	}{
		{0, "fs", 20},
		{0, "name", 19},
		{1, "mkfs", 29},
		{2, "fs", 32},
		{3, "fs", 0}, // no such table and no "variant" key
	} {
		if got := kl.variantKey(tt.i, tt.key); got != tt.want {
			t.Errorf("variantKey(%d, %q) = %d, want %d", tt.i, tt.key, got, tt.want)
		}
	}
}

func TestScanKeyLinesInlineVariants(t *testing.T) {
	kl := scanKeyLines("size = 1\r\nvariant = [\r\n  {fs = \"ext4\"},\r\n]\r\n")
	if got := kl.topKey("size"); got != 1 {
		t.Errorf(`topKey("size") = %d, want 1 (CRLF line ends)`, got)
	}
	if got := kl.variantKey(1, "fs"); got != 2 {
		t.Errorf(`variantKey(1, "fs") = %d, want 2, the line of "variant ="`, got)
	}
	if got := kl.variantLine(0); got != 2 {
		t.Errorf("variantLine(0) = %d, want 2", got)
	}
}
