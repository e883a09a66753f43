package aging

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReclaimWhenFull ages a small tmpfs that a ballast file fills, standing for the deleted
// data nilfs2 holds until its cleaner runs: without a reclaim the churn ends early, full, or
// packages are removed afterwards to leave the tests their room; with one that removes the
// ballast (as a cleaner pass gives the space back) the churn and the tree are whole.
func TestReclaimWhenFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a small tmpfs to fill")
	}
	const capacity = 16 << 20
	for _, withReclaim := range []bool{false, true} {
		name := "no reclaim"
		if withReclaim {
			name = "reclaim"
		}
		t.Run(name, func(t *testing.T) {
			mnt := t.TempDir()
			if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=16m"); err != nil {
				t.Fatalf("mount tmpfs: %v", err)
			}
			t.Cleanup(func() {
				if err := unix.Unmount(mnt, 0); err != nil {
					t.Errorf("unmount %s: %v", mnt, err)
				}
			})
			ballast := filepath.Join(mnt, "held")
			if err := os.WriteFile(ballast, make([]byte, 9<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			opt := Options{Seed: 1, Capacity: capacity}
			calls := 0
			if withReclaim {
				opt.Reclaim = func(context.Context) error {
					calls++
					if err := os.Remove(ballast); err != nil && !os.IsNotExist(err) {
						return err
					}
					return nil
				}
			}
			sp, err := Parse("updates:40%:1x")
			if err != nil {
				t.Fatal(err)
			}
			res, err := Age(context.Background(), filepath.Join(mnt, Dir), sp, opt)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case withReclaim && (res.EndedEarly != "" || res.Trimmed != "" || res.Reclaims == 0 || calls != res.Reclaims):
				t.Errorf("with a reclaim: ended early %q, trimmed %q, %d reclaims (%d calls); want the whole churn and tree after at least one", res.EndedEarly, res.Trimmed, res.Reclaims, calls)
			case !withReclaim && !strings.Contains(res.EndedEarly, "full") && res.Trimmed == "":
				t.Errorf("without a reclaim: neither full (%q) nor trimmed: the ballast did not fill the filesystem", res.EndedEarly)
			}
			t.Logf("%s: fill %d, churn %d bytes, %d reclaims, ended early %q, trimmed %q", name, res.FillBytes, res.ChurnBytes, res.Reclaims, res.EndedEarly, res.Trimmed)
		})
	}
}
