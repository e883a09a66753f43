package capacity

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadUndo reads arbitrary files as undo logs: a damaged log must never panic, and every
// record it returns must have passed its CRC (a torn record is never replayed).
func FuzzReadUndo(f *testing.F) {
	dir := f.TempDir()
	u, err := createUndo(dir, undoMeta{PID: 1, Nonce: 7, BlockSize: 4096, Device: DeviceID{Path: "/dev/x", Size: 1 << 30}})
	if err != nil {
		f.Fatal(err)
	}
	if err := u.save([]record{{off: 1 << 20, data: make([]byte, 4096), batch: 0}, {off: 2 << 20, data: []byte("x"), batch: 1}}); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(u.path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-3])
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "x.undo")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, recs, _ := readUndo(p)
		for _, r := range recs {
			if len(r.data) == 0 || len(r.data) > 1<<20 {
				t.Fatalf("a record of %d bytes was returned", len(r.data))
			}
		}
		_ = replayOrder(recs)
	})
}
