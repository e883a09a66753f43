package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBoardCommandUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"board", "up", "--arch", "riscv64"}, ExitUsage, "no emulated board for \"riscv64\""},
		{[]string{"board", "up", "--card-size", "lots"}, ExitUsage, "--card-size"},
		{[]string{"board", "status", "--state-dir", "/nonexistent/fsbench-test"}, ExitOK, "no emulated board"},
		{[]string{"board", "down", "--state-dir", "/nonexistent/fsbench-test"}, ExitError, "no board recorded"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), c.args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		if code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
			t.Errorf("fsbench %s: exit %d (want %d), output %q, want %q", strings.Join(c.args, " "), code, c.code, out.String()+errb.String(), c.want)
		}
	}
}

// TestDownBoards: fsbench cleanup removes the record of a board whose QEMU has ended without
// signalling anyone (the pid is this test's, with a start time that is not its own).
func TestDownBoards(t *testing.T) {
	dir := t.TempDir()
	card := filepath.Join(dir, "card.img")
	os.WriteFile(card, nil, 0o644)
	rec, _ := json.Marshal(map[string]any{"arch": "arm64", "pid": os.Getpid(), "start_time": 1, "port": 4022, "card": card, "card_made": true})
	if err := os.WriteFile(filepath.Join(dir, "arm64.json"), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	lines, err := downBoards(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "removed the record of the emulated arm64 board") {
		t.Errorf("downBoards = %q", lines)
	}
	for _, p := range []string{card, filepath.Join(dir, "arm64.json")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if lines, err := downBoards(filepath.Join(dir, "none")); err != nil || len(lines) != 0 {
		t.Errorf("no boards: %q, %v", lines, err)
	}
}
