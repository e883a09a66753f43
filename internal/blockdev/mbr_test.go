package blockdev

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteMBR checks the table with sfdisk, the reference reader, when it is installed.
func TestWriteMBR(t *testing.T) {
	img := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64<<20); err != nil {
		t.Fatal(err)
	}
	starts, sizes, err := WriteMBR(img, 2)
	if err != nil {
		t.Fatal(err)
	}
	if starts[0] != 1<<20 || starts[1] != starts[0]+sizes[0] || sizes[0] != sizes[1] || starts[1]+sizes[1] > 64<<20 || sizes[0]%(1<<20) != 0 {
		t.Errorf("partitions at %v of %v", starts, sizes)
	}
	if _, _, err := WriteMBR(img, 5); err == nil {
		t.Error("5 primary partitions accepted")
	}
	sfdisk, err := exec.LookPath("sfdisk")
	if err != nil {
		if sfdisk, err = exec.LookPath("/usr/sbin/sfdisk"); err != nil {
			t.Skip("sfdisk not found (Debian package fdisk): the table's layout is checked, not how a reader sees it")
		}
	}
	out, err := exec.Command(sfdisk, "--dump", img).CombinedOutput()
	if err != nil {
		t.Fatalf("sfdisk --dump: %v\n%s", err, out)
	}
	for _, want := range []string{"label: dos", "start=        2048, size=       63488, type=83", "start=       65536, size=       63488, type=83"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sfdisk does not show %q:\n%s", want, out)
		}
	}
}
