package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

// TestCompareMergeWarnDifferentCards: compare and merge warn when the runs come from different
// cards, and say nothing when they come from the same one.
func TestCompareMergeWarnDifferentCards(t *testing.T) {
	withCard := func(fp string) string {
		dir := saveCompareRun(t, nil, 3, 100)
		r, err := results.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		r.CardCheck = &results.CardCheck{Before: &results.CardReading{Kind: "SD", SizeBytes: 32 << 30, Fingerprint: fp}}
		if err := results.Save(dir, r); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a := withCard(`SD mid 0x03 oid SD "SL32G" rev 8.0 serial 1111111111111111`)
	same := withCard(`SD mid 0x03 oid SD "SL32G" rev 8.0 serial 1111111111111111`)
	other := withCard(`SD mid 0x03 oid SD "SL32G" rev 8.0 serial 2222222222222222`)
	for _, c := range []struct {
		args []string
		warn bool
	}{
		{[]string{"compare", a, same}, false},
		{[]string{"compare", a, other}, true},
		{[]string{"merge", "-o", filepath.Join(t.TempDir(), "m"), a, other}, true},
		{[]string{"merge", "-o", filepath.Join(t.TempDir(), "m"), a, same}, false},
	} {
		var stdout, stderr bytes.Buffer
		root := NewRoot(IO{Out: &stdout, Err: &stderr})
		root.SetArgs(c.args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, stderr.String())
		}
		got := strings.Contains(stderr.String(), "were made on different cards")
		if got != c.warn || (got && !strings.Contains(stderr.String(), "2222222222222222")) {
			t.Errorf("%s: warning %v, want %v:\n%s", c.args[0], got, c.warn, stderr.String())
		}
	}
}
