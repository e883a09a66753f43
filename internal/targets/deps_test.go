package targets

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// kindDomains are the packages only a kind of target may import: what a card, a chip or a
// board is. The contract between the engine and the kinds names none of them; what a kind
// yields beyond a block device reaches the engine through Prepared.Extra and interfaces the
// engine declares (internal/runner/kinddata.go).
var kindDomains = map[string]string{
	"internal/nand":     "the raw NAND chip is nandsim's (targets/nandsim.Chip)",
	"internal/simcard":  "the simulated card's server and counters are simcard's (targets/simcard.Card)",
	"internal/powercut": "power cuts are the simulated card's (targets/simcard.Card.PowerCutCard)",
	"internal/vm":       "the QEMU guest is the vm kind's",
	"internal/board":    "the emulated boards are the boards' business",
	"internal/remote":   "how a board is reached is the boards kind's",
	"internal/targets/": "the contract imports none of its kinds",
}

// TestTargetsImportNoKindDomain fails when a kind's domain enters the dependencies of the
// contract package, in the manner of tailscale's tstest/deptest: go list -deps, checked
// against a list of banned packages with the reason each is banned.
func TestTargetsImportNoKindDomain(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	const module = "github.com/fsbench/fsbench/"
	out, err := exec.Command(goTool, "list", "-deps", module+"internal/targets").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
		}
		t.Skipf("the go tool is needed to list the package's dependencies: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 || deps[len(deps)-1] != module+"internal/targets" {
		t.Fatalf("go list -deps gave no dependency list for internal/targets: %q", out)
	}
	for _, dep := range deps {
		for banned, why := range kindDomains {
			if dep == module+banned || strings.HasSuffix(banned, "/") && strings.HasPrefix(dep, module+banned) {
				t.Errorf("internal/targets depends on %s: %s", dep, why)
			}
		}
	}
}
