package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProbeSustainedRefuses: probe --sustained destroys the device, so it is refused (exit 2,
// nothing written) without --destroy naming it, with a card state it does not know, a bad
// --bytes, or beside --write; the image is left as it was.
func TestProbeSustainedRefuses(t *testing.T) {
	img := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(img, bytes.Repeat([]byte{7}, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"probe", "--sustained", img}, "--destroy " + img},
		{[]string{"probe", "--sustained", "--destroy", img, "--card-state", "old", img}, "--card-state"},
		{[]string{"probe", "--sustained", "--destroy", img, "--bytes", "lots", img}, "--bytes"},
		{[]string{"probe", "--sustained", "--write", "--destroy", img, img}, "without --write"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), c.args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != ExitUsage || !strings.Contains(errb.String(), c.says) {
			t.Errorf("fsbench %s: exit %d, want %d saying %q:\n%s", strings.Join(c.args, " "), code, ExitUsage, c.says, errb.String())
		}
	}
	if b, _ := os.ReadFile(img); !bytes.Equal(b, bytes.Repeat([]byte{7}, 1<<20)) {
		t.Error("the image changed")
	}
}
