package fs

import (
	"context"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Reclaimer returns how to give back the space a filesystem of kind k on dev, mounted at mnt,
// holds for deleted data it still protects; nil when k frees space at once.
//
// nilfs2 keeps every overwritten or deleted block in its checkpoints until nilfs_cleanerd
// collects them, and the cleaner protects anything younger than its protection period (an
// hour by default). An aging that compresses a year of updates into minutes would otherwise
// fill nilfs2 with blocks a real year would long have collected; the reclaim runs one cleaning
// pass with no protection period (nilfs-clean -p 0 -m 1), as the hours between updates would have.
func Reclaimer(run Runner, k Kind, dev, mnt string) func(context.Context) error {
	if k.Name != "nilfs2" {
		return nil
	}
	return func(ctx context.Context) error {
		free := func() uint64 {
			var st unix.Statfs_t
			if unix.Statfs(mnt, &st) != nil {
				return 0
			}
			return st.Bfree * uint64(st.Bsize)
		}
		before := free()
		// -m 1: every segment with a reclaimable block, not only those with the default 10 %
		// of them: after a fill, each segment holds a few obsolete metadata blocks.
		if out, err := runNilfsClean(ctx, run, dev, mnt, "-p", "0", "-m", "1"); err != nil {
			return fmt.Errorf("nilfs-clean -p 0 -m 1 %s (package nilfs-tools): %v: %s", dev, err, strings.TrimSpace(string(out)))
		}
		// nilfs-clean only asks the cleaner for a pass, which it takes a few segments at a time,
		// sleeping its cleaning interval (5 s by default) between steps: wait until the free
		// space has not grown for 12 s, at most three minutes.
		last, still := before, 0
		deadline := time.Now().Add(3 * time.Minute)
		for still < 6 && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(2 * time.Second):
			}
			if f := free(); f > last {
				last, still = f, 0
			} else {
				still++
			}
		}
		return nil
	}
}
