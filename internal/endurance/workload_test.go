package endurance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsbench/fsbench/internal/results"
)

// plainEnv is a workload environment over dir whose Timed just runs fn.
func plainEnv(dir string) Env {
	return Env{Dir: dir, Seed: 3, Timed: func(test string, logical uint64, fn func() error) (results.Measurement, error) {
		err := fn()
		return results.Measurement{Test: test, WallSeconds: 0.5}, err
	}}
}

// TestWorkloadsKeepTheirPromises: three days of each workload on a plain directory keep every
// promise (the verification finds every file whole); a file made wrong, cut short or removed
// behind the workload's back is found, each by its kind.
func TestWorkloadsKeepTheirPromises(t *testing.T) {
	for _, name := range []string{WorkloadLogging, WorkloadUpdate} {
		t.Run(name, func(t *testing.T) {
			w, err := NewWorkload(name, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			env, m := plainEnv(dir), NewManifest()
			var logical uint64
			for n := 1; n <= 3; n++ {
				d, err := w.Day(context.Background(), env, n, m)
				if err != nil {
					t.Fatalf("day %d: %v", n, err)
				}
				logical += d.Logical
			}
			if c := m.Verify(dir); c.Bad() != 0 || c.Files == 0 {
				t.Fatalf("after three days: %+v", c)
			}
			if logical < 3<<20 {
				t.Errorf("three days wrote %d bytes, want at least the 3 MiB asked", logical)
			}
			var paths []string
			for p := range m.Files {
				paths = append(paths, p)
			}
			if len(paths) < 3 {
				t.Fatalf("only %d promised files", len(paths))
			}
			// Wrong content of the same size, a file cut short, a file gone.
			wrong := filepath.Join(dir, paths[0])
			b, _ := os.ReadFile(wrong)
			b[0] ^= 0xff
			os.WriteFile(wrong, b, 0o644)
			os.Truncate(filepath.Join(dir, paths[1]), 1)
			os.Remove(filepath.Join(dir, paths[2]))
			c := m.Verify(dir)
			if c.Wrong != 2 || c.Missing != 1 || c.Unreadable != 0 || len(c.Problems) != 3 {
				t.Errorf("verification after the damage: %+v; want 2 wrong (content, size), 1 missing", c)
			}
		})
	}
}

// TestLoggingResume: what a killed logging day appended after its last sync was never
// promised: Resume cuts it off, and the logs verify whole again.
func TestLoggingResume(t *testing.T) {
	w, _ := NewWorkload(WorkloadLogging, 256<<10)
	dir := t.TempDir()
	env, m := plainEnv(dir), NewManifest()
	for n := 1; n <= 2; n++ {
		if _, err := w.Day(context.Background(), env, n, m); err != nil {
			t.Fatal(err)
		}
	}
	// The third day: a line appended and synced (promised), then one more before the kill.
	synced := []byte("a line the day appended and synced\n")
	if err := os.WriteFile(filepath.Join(dir, logDir, logNames[0]), synced, 0o644); err != nil {
		t.Fatal(err)
	}
	m.Append(filepath.Join(logDir, logNames[0]), synced)
	f, err := os.OpenFile(filepath.Join(dir, logDir, logNames[0]), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("a line the day appended before it was killed\n"))
	f.Close()
	// And a log it began without syncing anything: never promised.
	os.WriteFile(filepath.Join(dir, logDir, logNames[1]), []byte("unsynced\n"), 0o644)
	// What was appended after the last sync was never promised: the log still verifies (its
	// promised part is whole); Resume cuts it off, so that the next day appends after it.
	if c := m.Verify(dir); c.Bad() != 0 {
		t.Fatalf("before Resume: %+v", c)
	}
	if err := w.Resume(context.Background(), env, m); err != nil {
		t.Fatal(err)
	}
	if c := m.Verify(dir); c.Bad() != 0 {
		t.Errorf("after Resume: %+v", c)
	}
	if st, err := os.Stat(filepath.Join(dir, logDir, logNames[0])); err != nil || st.Size() != int64(len(synced)) {
		t.Errorf("after Resume the log holds %v bytes (%v), want the %d promised", st, err, len(synced))
	}
	if _, err := os.Stat(filepath.Join(dir, logDir, logNames[1])); err == nil {
		t.Error("Resume left a log nobody was promised")
	}
}

// TestUpdateResume: a killed update day leaves .dpkg-new files and a package half replaced;
// Resume removes the one and installs the promised version of the other again.
func TestUpdateResume(t *testing.T) {
	w, _ := NewWorkload(WorkloadUpdate, 4<<20)
	u := w.(update)
	dir := t.TempDir()
	env, m := plainEnv(dir), NewManifest()
	for n := 1; n <= 2; n++ {
		if _, err := w.Day(context.Background(), env, n, m); err != nil {
			t.Fatal(err)
		}
	}
	rel, _ := u.pkgFile(env.Seed, 1, 3, 1)
	_, next := u.pkgFile(env.Seed, 1, 3, 9)
	os.WriteFile(filepath.Join(dir, rel), next, 0o644)
	os.WriteFile(filepath.Join(dir, rel)+".dpkg-new", next, 0o644)
	if c := m.Verify(dir); c.Wrong != 1 {
		t.Fatalf("before Resume: %+v, want the half-replaced file wrong", c)
	}
	if err := w.Resume(context.Background(), env, m); err != nil {
		t.Fatal(err)
	}
	if c := m.Verify(dir); c.Bad() != 0 {
		t.Errorf("after Resume: %+v", c)
	}
	if _, err := os.Stat(filepath.Join(dir, rel) + ".dpkg-new"); err == nil {
		t.Error("Resume left a .dpkg-new file")
	}
}

// TestManifestAppend: an appended file's hash, kept running over appends, is the hash of its
// whole content.
func TestManifestAppend(t *testing.T) {
	m := NewManifest()
	var all []byte
	for _, s := range []string{"first line\n", "", "second\n", string(bytes.Repeat([]byte("x"), 70000))} {
		if err := m.Append("log", []byte(s)); err != nil {
			t.Fatal(err)
		}
		all = append(all, s...)
	}
	sum := sha256.Sum256(all)
	if e := m.Files["log"]; e.Hash != hex.EncodeToString(sum[:]) || e.Size != int64(len(all)) {
		t.Errorf("appended %d bytes: %+v, want size %d and the whole content's hash", len(all), e, len(all))
	}
	m.Rename("log", "log.1")
	m.RemoveUnder("nothing")
	if _, ok := m.Files["log.1"]; !ok || len(m.Files) != 1 {
		t.Errorf("after a rename: %v", m.Files)
	}
}
