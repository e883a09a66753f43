package boards

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/remote"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/targets"
)

// fakeSSH installs a fake ssh client (FSBENCH_SSH) that records its arguments, one invocation
// per line, and runs the remote command with this machine's sh, in place of a board. It
// returns the log's path.
func fakeSSH(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "ssh.log")
	prog := filepath.Join(dir, "ssh")
	script := `#!/bin/sh
printf '%s\n' "$*" >> ` + remote.Shq(log) + `
for last; do :; done
exec sh -c "$last"
`
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FSBENCH_SSH", prog)
	return log
}

// fakeBoardBinary is what the host puts on the fake board: a script answering `facts` and
// `pack DIR` (a tar of DIR's results files) as fsbench does there.
func fakeBoardBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fsbench-fake")
	script := `#!/bin/sh
case "$1" in
facts) echo '{"hostname":"fake-board","model":"Fake Board Rev 1","compatible":["fake,board"],"mem_bytes":1024,"fsbench_version":"test","arch":"arm64","kernel_release":"6.1.0-fake","kinds":{},"modules":{}}' ;;
pack) cd "$2" && tar -cf - results.json results.csv ;;
*) echo "fake board: $*" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBoardFetchFakeTransport fetches a kept run from a fake board: the binary is uploaded
// once (by content hash), the newest run is chosen, its files come back through pack and
// unpack, and the host's copy says which board it came from. The ssh command lines are
// compared with a golden file.
func TestBoardFetchFakeTransport(t *testing.T) {
	log := fakeSSH(t)
	remote := t.TempDir()
	spec, err := plan.ParseTarget("ssh://root@127.0.0.1:2222/dev/mmcblk0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBoard(spec, targets.Options{Request: plan.Request{SSHOptions: []string{"-o", "IdentityFile=/k"}, RemoteBinary: fakeBoardBinary(t), RemoteDir: remote}})
	if err != nil {
		t.Fatal(err)
	}
	// Two kept runs; the newer is fetched by default.
	for i, name := range []string{"old-run", "new-run"} {
		res := filepath.Join(remote, "runs", name, "res")
		if err := os.MkdirAll(res, 0o755); err != nil {
			t.Fatal(err)
		}
		r := &results.Run{Schema: results.Schema, Status: "interrupted", Error: name, Started: time.Unix(1700000000, 0).UTC()}
		r.Machine.Arch = "arm64"
		if err := results.Save(res, r); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(time.Duration(i-2) * time.Hour)
		os.Chtimes(filepath.Join(remote, "runs", name), mt, mt)
	}
	ctx := context.Background()
	runs, err := b.Runs(ctx)
	if err != nil || strings.Join(runs, ",") != "old-run,new-run" {
		t.Fatalf("Runs = %v, %v", runs, err)
	}
	dir := t.TempDir()
	r, err := b.Fetch(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Error != "new-run" || r.Machine.Arch != "arm64" {
		t.Errorf("fetched run %q (arch %q), want new-run (arm64)", r.Error, r.Machine.Arch)
	}
	want := results.Remote{Target: "ssh://root@127.0.0.1:2222/dev/mmcblk0", Hostname: "fake-board", Model: "Fake Board Rev 1",
		Compatible: []string{"fake,board"}, Arch: "arm64", KernelRelease: "6.1.0-fake", RunDir: filepath.Join(remote, "runs", "new-run")}
	if r.Remote == nil || r.Remote.Hostname != want.Hostname || r.Remote.Model != want.Model || r.Remote.RunDir != want.RunDir || r.Remote.Target != want.Target {
		t.Errorf("remote = %+v, want %+v", r.Remote, want)
	}
	saved, err := results.Load(dir)
	if err != nil || saved.Remote == nil || saved.Remote.Hostname != "fake-board" {
		t.Errorf("saved results: %+v, %v", saved, err)
	}
	// A second fetch does not upload the binary again.
	if _, err := b.Fetch(ctx, "old-run", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fetch(ctx, "no-such-run", t.TempDir()); err == nil || !strings.Contains(err.Error(), "old-run, new-run") {
		t.Errorf("fetching a run the board lacks: %v", err)
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(string(calls), remote, "$REMOTE")
	goldenFile(t, "ssh-fetch.golden", got)
}

// goldenFile compares got with testdata/name, writing testdata/name.got when they differ
// (FSBENCH_UPDATE_GOLDEN=1 rewrites the golden file).
func goldenFile(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if os.Getenv("FSBENCH_UPDATE_GOLDEN") != "" {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (FSBENCH_UPDATE_GOLDEN=1 go test -run %s writes it)", err, t.Name())
	}
	if got != string(want) {
		os.WriteFile(p+".got", []byte(got), 0o644)
		t.Errorf("%s differs: see %s.got", p, p)
	}
}

// TestSSHStreamFakeTransport runs the board's side of a run through the fake ssh client: the
// board's lines reach the host's log without the board's own time and name, and the board's
// exit status becomes the host's error (2: a refusal, 255: the link, >128: a signal).
func TestSSHStreamFakeTransport(t *testing.T) {
	fakeSSH(t)
	for _, c := range []struct {
		name, board string
		want        string // in the error; "" for none
		input       bool   // the error is an *plan.InputError
	}{
		{"ok", "echo '01:02:03 fsbench: ext4 rep 1 mkfs: 0.5 s'; echo 'plain line'", "", false},
		{"refused", "echo 'refusing /dev/mmcblk0: mounted' >&2; exit 2", "refused the run", true},
		{"link", "exit 255", "connection to the board was lost", false},
		{"signal", "exit 129", "interrupted (exit 129)", false},
		{"failed", "exit 1", "failed (exit 1)", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var lines []string
			var mu sync.Mutex
			spec, _ := plan.ParseTarget("ssh://root@board/dev/mmcblk0")
			tg := newSSHTarget(spec, targets.Options{Log: func(f string, a ...any) {
				mu.Lock()
				lines = append(lines, fmt.Sprintf(f, a...))
				mu.Unlock()
			}})
			s, err := session.OpenSession(session.SessionOptions{Dir: filepath.Join(t.TempDir(), "res"), LedgerDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			dir := t.TempDir()
			bin := filepath.Join(dir, "fsbench-board")
			// The fake board binary ignores its arguments (run --request ...) and plays c.board.
			os.WriteFile(bin, []byte("#!/bin/sh\n"+c.board+"\n"), 0o755)
			err = tg.stream(context.Background(), s, boardRun{dir: dir, bin: bin})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("stream: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("stream: %v, want an error with %q", err, c.want)
			}
			var ie *plan.InputError
			if errors.As(err, &ie) != c.input {
				t.Errorf("input error: %v, want %v", errors.As(err, &ie), c.input)
			}
			mu.Lock()
			defer mu.Unlock()
			if c.name == "ok" {
				want := []string{"[board] ext4 rep 1 mkfs: 0.5 s", "[board] plain line"}
				if strings.Join(lines, "\n") != strings.Join(want, "\n") {
					t.Errorf("log = %q, want %q", lines, want)
				}
			}
		})
	}
}
