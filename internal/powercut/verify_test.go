package powercut

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mkfile(t *testing.T, dir, path string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, path)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func at(v Version, started, ack uint64) Version {
	v.Started, v.Ack = started, ack
	return v
}

// TestVerify crafts the state a filesystem might come back in after a cut and checks that each
// kind of broken promise is counted, and that what was never promised is not.
func TestVerify(t *testing.T) {
	old := content(1, 12*1024)
	newer := content(2, 12*1024)
	mixed := append(append([]byte{}, newer[:8192]...), old[8192:]...) // new first two blocks, old third
	appended := append(append([]byte{}, old...), content(3, 8192)...)
	replaced := func(data []byte, started, ack uint64) Version {
		v := at(version(data, OpReplace), started, ack)
		v.Atomic = true
		return v
	}
	// newer with an overwrite in flight over its last two blocks, of which only the first landed.
	overwritten := append(append([]byte{}, newer[:4096]...), content(4, 8192)...)
	newerMixed := append(append(append([]byte{}, newer[:4096]...), overwritten[4096:8192]...), newer[8192:]...)
	grown := append(append([]byte{}, newer...), content(5, 8192)...)
	zeroTail := append(append([]byte{}, old...), make([]byte, 8192)...)
	halfTail := append(append([]byte{}, appended[:len(old)+4096]...), make([]byte, 4096)...)
	tests := []struct {
		name  string
		file  File
		disk  []byte // nil: the file is absent
		cut   uint64
		check func(c Check) bool
		want  string
	}{
		// The cases the issue rebuilt, each once counted against the filesystem.
		{"replace, then an overwrite in flight", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), replaced(newer, 6, 8), at(version(overwritten, OpOverwrite), 9, 20)}}, newerMixed, 10,
			func(c Check) bool { return c.Violations() == 0 && c.TornRenames == 0 }, ""},
		{"replace, then an append in flight, cut short", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), replaced(newer, 6, 8), at(version(grown, OpAppend), 9, 20)}}, grown[:len(newer)+1000], 10,
			func(c Check) bool { return c.Violations() == 0 && c.TornRenames == 0 }, ""},
		{"replace, then an append in flight left as zeroes", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), replaced(newer, 6, 8), at(version(grown, OpAppend), 9, 20)}}, append(append([]byte{}, newer...), make([]byte, 8192)...), 10,
			func(c Check) bool { return c.Violations() == 0 && c.ZeroTails == 1 }, ""},
		{"a zero-tail append", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), at(version(appended, OpAppend), 6, 20)}}, zeroTail, 10,
			func(c Check) bool { return c.Violations() == 0 && c.ZeroTails == 1 && c.AckedCorrupt == 0 }, ""},
		{"an append in flight, one block landed and one zero", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), at(version(appended, OpAppend), 6, 20)}}, halfTail, 10,
			func(c Check) bool { return c.Violations() == 0 && c.ZeroTails == 1 }, ""},
		{"zeroes inside the acknowledged bytes", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), at(version(appended, OpAppend), 6, 20)}}, append(make([]byte, 4096), zeroTail[4096:]...), 10,
			func(c Check) bool { return c.AckedCorrupt == 1 && c.ZeroTails == 0 }, "neither the version acknowledged"},
		{"an unacknowledged replace torn: atomicity, not acknowledged loss", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), replaced(newer, 6, 20)}}, mixed, 10,
			func(c Check) bool { return c.TornRenames == 1 && c.AckedLoss() == 0 && c.Violations() == 1 }, "atomic replace in flight"},
		{"an acknowledged replace damaged, nothing in flight: acknowledged loss", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), replaced(newer, 6, 8)}}, mixed, 10,
			func(c Check) bool { return c.AckedCorrupt == 1 && c.TornRenames == 0 }, "neither the version acknowledged"},
		{"an acknowledged file unreadable", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5)}}, nil, 10,
			func(c Check) bool { return c.AckedUnreadable == 1 && c.AckedLost == 0 }, "unreadable"},
		{"acknowledged and there", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5)}}, old, 10,
			func(c Check) bool { return c.Violations() == 0 && c.Files == 1 }, ""},
		{"acknowledged and missing", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5)}}, nil, 10,
			func(c Check) bool { return c.AckedLost == 1 }, "missing, acknowledged by the create at request 5"},
		{"acknowledged and garbage", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5)}}, content(9, 12*1024), 10,
			func(c Check) bool { return c.AckedCorrupt == 1 }, "neither the version acknowledged"},
		{"an overwrite in flight, caught half-way", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), at(version(newer, OpOverwrite), 6, 20)}}, mixed, 10,
			func(c Check) bool { return c.Violations() == 0 }, ""},
		{"an unsynced create caught empty under a replace in flight", File{Path: "a", Versions: []Version{at(version(old, OpUnsynced), 1, 0), func() Version { v := at(version(newer, OpReplace), 6, 20); v.Atomic = true; return v }()}}, []byte{}, 10,
			func(c Check) bool { return c.UnackedLost == 1 && c.Violations() == 0 }, ""},
		{"an acknowledged create caught empty under a replace in flight", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), func() Version { v := at(version(newer, OpReplace), 6, 20); v.Atomic = true; return v }()}}, []byte{}, 10,
			func(c Check) bool { return c.TornRenames == 1 }, "atomic replace"},
		{"an atomic replace, old or new", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), func() Version { v := at(version(newer, OpReplace), 6, 20); v.Atomic = true; return v }()}}, old, 10,
			func(c Check) bool { return c.Violations() == 0 }, ""},
		{"an acknowledged deletion undone", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), at(Version{Deleted: true, Op: OpDelete}, 6, 7)}}, old, 10,
			func(c Check) bool { return c.Resurrected == 1 }, "deletion was acknowledged"},
		{"an append in flight, cut short", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), at(version(appended, OpAppend), 6, 20)}}, appended[:len(old)+1000], 10,
			func(c Check) bool { return c.Violations() == 0 }, ""},
		{"a file never synced, lost", File{Path: "a", Versions: []Version{at(version(old, OpUnsynced), 1, 0)}}, nil, 10,
			func(c Check) bool { return c.Violations() == 0 && c.UnackedLost == 1 }, ""},
		{"written after the cut: not looked at", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 12, 15)}}, nil, 10,
			func(c Check) bool { return c.Files == 0 && c.Violations() == 0 }, ""},
		{"an older version back", File{Path: "a", Versions: []Version{at(version(old, OpCreate), 1, 5), at(version(newer, OpReplace), 6, 8)}}, old, 10,
			func(c Check) bool { return c.Violations() == 1 }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.disk != nil {
				mkfile(t, dir, tc.file.Path, tc.disk)
			}
			if strings.Contains(tc.name, "unreadable") {
				// A directory in the file's place: reading it fails with an error other
				// than "does not exist", as an I/O error does.
				os.MkdirAll(filepath.Join(dir, tc.file.Path), 0o755)
			}
			f := tc.file
			m := &Manifest{Files: []*File{&f}}
			c, err := m.Verify(dir, tc.cut)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) || !strings.Contains(strings.Join(c.Problems, "\n"), tc.want) {
				t.Errorf("check %+v", c)
			}
		})
	}
}

// The workload, run on a directory of this machine, gives a manifest that its own final state
// satisfies at every cut after its end, and whose acknowledgements are in order.
func TestWorkloadManifest(t *testing.T) {
	dir := t.TempDir()
	var n uint64
	w := Workload{Spec: Spec{Seed: 7, Ops: 300, LargeBytes: 256 << 10}, Pos: func() (uint64, error) { n++; return n, nil }}
	m, err := w.Run(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, f := range m.Files {
		for _, v := range f.Versions {
			ops[v.Op]++
		}
	}
	for _, op := range []string{OpCreate, OpAppend, OpOverwrite, OpReplace, OpDelete, OpLarge, OpUnsynced} {
		if ops[op] == 0 {
			t.Errorf("no %s in 300 operations: %v", op, ops)
		}
	}
	for i := 1; i < len(m.Acks); i++ {
		if m.Acks[i].Pos < m.Acks[i-1].Pos {
			t.Fatalf("acknowledgements out of order: %v", m.Acks[i-1:i+1])
		}
	}
	c, err := m.Verify(dir, m.End+1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Violations() != 0 || c.UnackedLost != 0 {
		t.Errorf("the workload's own final state breaks its manifest: %+v", c)
	}
	// Same seed, same work.
	m2, err := Workload{Spec: w.Spec, Pos: func() (uint64, error) { return 0, nil }}.Run(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Files) != len(m.Files) || m2.Files[3].Versions[0].Hash != m.Files[3].Versions[0].Hash {
		t.Error("the workload is not reproducible from its seed")
	}
}
