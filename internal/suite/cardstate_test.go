package suite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suite"
	"github.com/fsbench/fsbench/internal/testkit/enginetest"
)

// TestCardState makes each filesystem on a loop device over a file, as a fresh card and as a
// used one, and reads what the device kept from the file's allocation: the loop device punches
// a hole for every discard, so a fresh card's file is mostly holes after the discard and mkfs,
// and a used card's file must stay fully written (mkfs told not to discard, nothing else
// discarding either). A mkfs that discarded anyway would fail it.
func TestCardState(t *testing.T) {
	const size = 320 << 20
	for _, fsName := range []string{"ext4", "ext2", "xfs", "btrfs"} {
		for _, state := range []string{plan.CardFresh, plan.CardUsed} {
			t.Run(fsName+"/"+state, func(t *testing.T) {
				env, done := enginetest.Env(t, size, "bootlin")
				defer done()
				k, ok := fs.Lookup(fsName)
				if !ok {
					t.Fatalf("no filesystem %s", fsName)
				}
				if av := env.System.Check(k); !av.Runs {
					t.Skipf("%s: %s", fsName, av.Reason)
				}
				sel, err := suite.Select(plan.Suites{"bootlin"}, []string{catalog.Mkfs, catalog.Mount})
				if err != nil {
					t.Fatal(err)
				}
				var log strings.Builder
				env.Selection, env.CardState = sel, state
				env.Log = func(format string, args ...any) {
					log.WriteString(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n")
				}
				var failed []string
				err = suite.RunRepetition(context.Background(), env, suite.Job{Variant: plan.Variant{Name: fsName, FS: fsName}, Kind: k}, 1, false, func(m results.Measurement) error {
					if m.Status != results.OK {
						failed = append(failed, m.Test+": "+m.Error)
					}
					return nil
				})
				if err != nil || len(failed) > 0 {
					t.Fatalf("repetition: %v %v\n%s", err, failed, log.String())
				}
				img, err := os.ReadFile(filepath.Join("/sys/block", env.DeviceName, "loop", "backing_file"))
				if err != nil {
					t.Fatal(err)
				}
				var st syscall.Stat_t
				if err := syscall.Stat(strings.TrimSpace(string(img)), &st); err != nil {
					t.Fatal(err)
				}
				held := float64(st.Blocks*512) / size
				t.Logf("%s, %s card: the device's file holds %.1f %% of its size after mkfs and mount", fsName, state, 100*held)
				switch state {
				case plan.CardUsed:
					if held < 0.99 {
						t.Errorf("used card: %.1f %% of the device still written after mkfs, want all of it (something discarded)\n%s", 100*held, log.String())
					}
					if !strings.Contains(log.String(), "card state used: wrote all") {
						t.Errorf("the log does not say the device was filled:\n%s", log.String())
					}
				default:
					if held > 0.5 {
						t.Errorf("fresh card: %.1f %% of the device written after mkfs, want most of it discarded", 100*held)
					}
				}
			})
		}
	}
}
