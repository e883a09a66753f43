package suite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fsbench/fsbench/internal/fs"
)

// TestModuleLoadLeftLoaded: a filesystem module found loaded at a repetition's module_load is
// "left loaded" (no cold boot, left out of boot time) when it was not loaded as the run
// started: an earlier repetition loaded it and the kernel kept it. One loaded before the run
// is plain "already loaded".
func TestModuleLoadLeftLoaded(t *testing.T) {
	sysModule := t.TempDir()
	if err := os.MkdirAll(filepath.Join(sysModule, "btrfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(sysModule, "btrfs", "initstate"), []byte("live\n"), 0o644)
	sys := fs.System{ProcFilesystems: "\tbtrfs\n", SysModuleDir: sysModule}
	for _, tc := range []struct {
		name     string
		atStart  map[string]bool
		wantNote string
		left     bool
	}{
		{"loaded before the run", map[string]bool{"btrfs": true}, fs.ModuleAlreadyLoaded, false},
		{"loaded by an earlier repetition", map[string]bool{"ext4": true}, fs.ModuleLeftLoaded, true},
		{"not known", nil, fs.ModuleAlreadyLoaded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &rep{env: &Env{System: sys, ModulesAtStart: tc.atStart}, k: fs.Kind{Name: "btrfs", Module: "btrfs"}}
			ms, err := r.moduleLoad(context.Background())
			if err != nil || len(ms) != 1 {
				t.Fatalf("moduleLoad = %v, %v", ms, err)
			}
			m := ms[0]
			if m.Note != tc.wantNote || (m.Extra["left_loaded"] > 0) != tc.left || m.Value != nil {
				t.Errorf("note %q, extra %v, value %v; want note %q, left_loaded %v, no value", m.Note, m.Extra, m.Value, tc.wantNote, tc.left)
			}
		})
	}
}
