package session

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/procid"
	"github.com/google/go-cmp/cmp"
)

func readLedgerT(t *testing.T, path string) ledgerRecord {
	t.Helper()
	rec, err := readLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestLedger(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "fsbench") // created by OpenLedger
	l, err := OpenLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	want := filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")
	if l.Path() != want {
		t.Errorf("Path = %s, want %s", l.Path(), want)
	}
	self, err := procid.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	rec := readLedgerT(t, l.Path())
	if rec.PID != os.Getpid() || rec.StartTime != self.StartTime || rec.StartTime == 0 {
		t.Errorf("ledger pid %d start %d, want %d %d", rec.PID, rec.StartTime, os.Getpid(), self.StartTime)
	}
	if alive, why := processAlive(rec); !alive {
		t.Errorf("processAlive(own ledger) = false (%s)", why)
	}
	if _, err := OpenLedger(dir); err == nil {
		t.Error("a second OpenLedger for the same pid succeeded")
	}

	files := t.TempDir()
	img := filepath.Join(files, "a.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(files, "mnt")
	steps := []struct {
		name string
		do   func() error
	}{
		{"AddFile", func() error { return l.AddFile(img) }},
		{"AddFile again (deduplicated)", func() error { return l.AddFile(img) }},
		{"AddFile other", func() error {
			if err := os.WriteFile(filepath.Join(files, "b"), nil, 0o600); err != nil {
				return err
			}
			return l.AddFile(filepath.Join(files, "b"))
		}},
		{"AddMountpoint", func() error { return l.AddMountpoint(mnt) }},
		{"AddLoop", func() error { return l.AddLoop("/dev/loop7", img) }},
		{"RemoveFile", func() error { return l.RemoveFile(filepath.Join(files, "b")) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	rec = readLedgerT(t, l.Path())
	if len(rec.Files) != 1 || rec.Files[0].Path != img || rec.Files[0].Ino == 0 {
		t.Errorf("Files = %+v, want %s with its inode", rec.Files, img)
	}
	if diff := cmp.Diff([]string(nil), rec.LegacyFiles); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{mnt}, rec.Mountpoints); diff != "" {
		t.Errorf("Mountpoints (-want +got):\n%s", diff)
	}
	if len(rec.Loops) != 1 || rec.Loops[0].Dev != "loop7" || rec.Loops[0].Backing != img || rec.Loops[0].BackingIno == 0 {
		t.Errorf("Loops = %+v, want loop7 over %s with its inode", rec.Loops, img)
	}

	for _, bad := range []func() error{
		func() error { return l.AddLoop("/dev/sda", img) },
		func() error { return l.AddLoop("loop1", filepath.Join(files, "missing")) },
		func() error { return l.AddMountpoint("/") },
	} {
		if err := bad(); err == nil {
			t.Error("a bad record was accepted")
		}
	}
	if got := readLedgerT(t, l.Path()); !cmp.Equal(got, rec) {
		t.Errorf("a refused record changed the ledger:\n%s", cmp.Diff(rec, got))
	}
	// No temp file is left beside the ledger.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("ledger dir holds %d entries, want 1", len(ents))
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.Path()); !os.IsNotExist(err) {
		t.Errorf("ledger still exists after Close (%v)", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := l.AddFile(img); err == nil {
		t.Error("AddFile after Close succeeded")
	}
}

// deadPID returns the pid of a process that has exited and been reaped, with the start
// time it had.
func deadPID(t *testing.T) (int, uint64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=sleep")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	st, err := procid.Read(pid)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill()
	stdout.Close()
	cmd.Wait()
	return pid, st.StartTime
}

// writeLedger writes a ledger as another process would have.
func writeLedger(t *testing.T, dir string, rec ledgerRecord) string {
	t.Helper()
	rec.Version = ledgerVersion
	if rec.BootID == "" {
		rec.BootID = procid.Boot()
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, strconv.Itoa(rec.PID)+".json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProcessAlive(t *testing.T) {
	self, err := procid.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dead, deadStart := deadPID(t)
	tests := []struct {
		name string
		rec  ledgerRecord
		want bool
	}{
		{"this process", ledgerRecord{PID: os.Getpid(), StartTime: self.StartTime, BootID: procid.Boot()}, true},
		{"pid reused", ledgerRecord{PID: os.Getpid(), StartTime: self.StartTime - 1, BootID: procid.Boot()}, false},
		{"earlier boot", ledgerRecord{PID: os.Getpid(), StartTime: self.StartTime, BootID: "00000000-0000-0000-0000-000000000000"}, false},
		{"exited", ledgerRecord{PID: dead, StartTime: deadStart}, false},
	}
	for _, tt := range tests {
		if got, why := processAlive(tt.rec); got != tt.want {
			t.Errorf("%s: processAlive = %v (%s), want %v", tt.name, got, why, tt.want)
		}
	}
}

// TestCleanupStaleFiles needs no root: a dead process's ledger naming only files.
func TestCleanupStaleFiles(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "ledgers")
	work := filepath.Join(base, "work")
	sub := filepath.Join(work, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(p string) string {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, notOurs := mk(filepath.Join(work, "a.img")), mk(filepath.Join(sub, "b")), mk(filepath.Join(work, "user-file"))

	dead, deadStart := deadPID(t)
	id := func(p string) fileRecord {
		r, err := identify(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// swapped was made by the dead run, then removed and made again by someone else: same
	// path, another inode. legacy was recorded by path only, by an older fsbench.
	swapped := mk(filepath.Join(work, "swapped"))
	swappedRec := id(swapped)
	os.Remove(swapped)
	mk(filepath.Join(work, "placeholder")) // keeps the old inode number from being reused at once
	mk(swapped)
	legacy := mk(filepath.Join(work, "legacy"))
	stale := writeLedger(t, dir, ledgerRecord{
		PID: dead, StartTime: deadStart,
		// sub is recorded before its content b: b must go first.
		Files:       []fileRecord{id(a), id(sub), id(b), {Path: filepath.Join(work, "never-created"), Dev: 1, Ino: 1}, swappedRec},
		LegacyFiles: []string{legacy},
	})
	if err := os.WriteFile(filepath.Join(dir, "."+strconv.Itoa(dead)+".json.tmp"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	dead2, _ := deadPID(t)
	corrupt := filepath.Join(dir, strconv.Itoa(dead2)+".json")
	if err := os.WriteFile(corrupt, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A live process's ledger in a format from another fsbench version: not this run's to
	// judge, and no reason to refuse to start (pid 1 is always alive).
	newer := filepath.Join(dir, "1.json")
	if err := os.WriteFile(newer, []byte(`{"version": 99, "pid": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	live, err := OpenLedger(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close() })
	keep := mk(filepath.Join(work, "live-run-file"))
	if err := live.AddFile(keep); err != nil {
		t.Fatal(err)
	}

	var logged []string
	actions, err := CleanupStale(dir, func(f string, args ...any) { logged = append(logged, f) })
	if err == nil || !strings.Contains(err.Error(), corrupt) || strings.Contains(err.Error(), newer) {
		t.Errorf("err = %v, want one naming the unreadable ledger %s and not the live one %s", err, corrupt, newer)
	}
	wantActions := []string{
		"removed half-written ledger " + filepath.Join(dir, "."+strconv.Itoa(dead)+".json.tmp"),
		"removed " + b, "removed " + sub, "removed " + a,
		"left " + swapped + " alone: it is not the file the run made (device and inode differ), another took its name",
		"left " + legacy + ": an older fsbench recorded it by its path only, which may name another file by now; remove it by hand if it is that run's",
		"removed ledger " + stale,
	}
	slices.Sort(wantActions)
	slices.Sort(actions)
	if diff := cmp.Diff(wantActions, actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if len(logged) <= len(actions) {
		t.Errorf("logf called %d times, want the actions plus the reason", len(logged))
	}
	for _, p := range []string{a, b, sub, stale} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists (%v)", p, err)
		}
	}
	for _, p := range []string{notOurs, keep, live.Path(), corrupt, newer, work, swapped, legacy} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was touched: %v", p, err)
		}
	}

	// Missing ledger directory: nothing to do.
	if acts, err := CleanupStale(filepath.Join(base, "none"), nil); err != nil || len(acts) != 0 {
		t.Errorf("CleanupStale(missing dir) = %v, %v", acts, err)
	}
}

// Only a ledger that records a labgrid place is written as version 3, so that an older
// fsbench on the same machine still reads (and cleans up after) every other run.
func TestLedgerVersionWithPlaces(t *testing.T) {
	l, err := OpenLedger(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := PlaceRecord{Client: "/usr/bin/labgrid-client", Coordinator: "127.0.0.1:20408", Place: "a"}
	owned := p
	owned.Owner, owned.Changed = "host/user", "2026-01-01 00:00:00.000001"
	steps := []struct {
		name   string
		do     func() error
		want   int
		places int
	}{
		{"fresh", func() error { return nil }, 2, 0},
		{"place added", func() error { return l.AddPlace(p) }, 3, 1},
		{"owner known", func() error { return l.UpdatePlace(p, owned) }, 3, 1},
		{"released", func() error { return l.RemovePlace(owned) }, 2, 0},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		rec, err := readLedger(l.Path())
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if rec.Version != s.want || len(rec.Places) != s.places {
			t.Errorf("%s: version %d with %d places, want %d with %d", s.name, rec.Version, len(rec.Places), s.want, s.places)
		}
	}
}
