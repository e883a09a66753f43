package capacity

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/simcard"
)

// TestProbeCapacityCommand runs `fsbench probe --capacity` as a user or a script does, on
// simulated cards behind loop devices: the exit code a script tests (4 counterfeit, 0 genuine,
// 1 the check could not be made, 2 bad flags), the explanation on stdout, capacity.json in -o
// agreeing with both, and the card's data as it was.
func TestProbeCapacityCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: serves cards, attaches loop devices, builds fsbench")
	}
	if os.Geteuid() != 0 || !simcard.FUSEAvailable {
		t.Skip("needs root and FUSE: serves simulated cards through loop devices, writes the undo log")
	}
	bin := buildFsbench(t)
	for _, c := range []struct {
		profile string
		size    uint64
		exit    int
		says    []string
	}{
		{"fake-limbo", 1 << 30, ExitCounterfeit, []string{"COUNTERFEIT (limbo)", "announces 1 GiB", "what was written where, and what came back:", "cost:"}},
		{"sd-typical", 256 << 20, ExitGenuine, []string{"GENUINE", "what was written where, and what came back:"}},
	} {
		t.Run(c.profile, func(t *testing.T) {
			dir, dev, backing, before := randomCard(t, c.profile, c.size)
			out := filepath.Join(dir, "out")
			row, stdout := runFsbench(t, bin, []string{"probe", "--capacity", "-q", "--undo-dir", filepath.Join(dir, "undo"), "-o", out, dev}, filepath.Join(out, "capacity.json"))
			if row.exit != c.exit {
				t.Errorf("exit %d, want %d (%s):\n%s", row.exit, c.exit, row.verdict, stdout)
			}
			for _, s := range c.says {
				if !strings.Contains(stdout, s) {
					t.Errorf("the explanation does not say %q:\n%s", s, stdout)
				}
			}
			if p, _ := flash.Lookup(c.profile); p.Fake != nil {
				if d := int64(row.usable) - int64(p.Fake.Usable()); d <= -int64(p.AUSize) || d >= int64(p.AUSize) {
					t.Errorf("capacity.json: usable %d, the card holds %d", row.usable, p.Fake.Usable())
				}
			}
			if after := sumFile(t, backing); after != before {
				t.Errorf("the card changed: sha256 %s before, %s after", before, after)
			}
			if logs, _ := filepath.Glob(filepath.Join(dir, "undo", "*")); len(logs) != 0 {
				t.Errorf("undo logs left: %v", logs)
			}
			t.Logf("exit %d:\n%s", row.exit, stdout)
		})
	}

	// Not a card (exit 1) or a bad flag (exit 2): nothing is written, and the message says why.
	for _, c := range []struct {
		args []string
		exit int
		says string
	}{
		{[]string{"probe", "--capacity", "/dev/null"}, 1, "not a block device"},
		{[]string{"probe", "--capacity", "--max-cache", "lots", "/dev/null"}, 2, "--max-cache"},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.exit || !strings.Contains(string(out), c.says) {
			t.Errorf("fsbench %v: %v, want exit %d saying %q:\n%s", c.args, err, c.exit, c.says, out)
		}
	}
}
