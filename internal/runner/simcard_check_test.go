package runner

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fsbench/fsbench/internal/simcard"
)

// simcardAvailable reports whether this build and machine can serve a simulated card.
func simcardAvailable() bool {
	_, err := os.Stat("/dev/fuse")
	return err == nil && simcard.FUSEAvailable
}

var (
	fsbenchOnce sync.Once
	fsbenchBin  string
	fsbenchErr  error
)

// fsbenchBinary builds fsbench once: the card server runs as `fsbench simcard serve`, and the
// test binary has no such command.
func fsbenchBinary(t *testing.T) string {
	t.Helper()
	fsbenchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fsbench-runner-test")
		if err != nil {
			fsbenchErr = err
			return
		}
		fsbenchBin = filepath.Join(dir, "fsbench")
		cmd := exec.Command("go", "build", "-o", fsbenchBin, "github.com/fsbench/fsbench/cmd/fsbench")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fsbenchErr = err
			fsbenchBin = string(out)
		}
	})
	if fsbenchErr != nil {
		t.Fatalf("building fsbench: %v\n%s", fsbenchErr, fsbenchBin)
	}
	return fsbenchBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fsbenchBin != "" && fsbenchErr == nil {
		os.RemoveAll(filepath.Dir(fsbenchBin))
	}
	os.Exit(code)
}
