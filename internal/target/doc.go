// Package target provides the block device a benchmark runs on. For now that is an image
// file with a loop device over it.
//
// fsbench runs as root and can destroy data, so this package holds to three rules:
//   - it touches only what this process created (an image made with O_EXCL, a loop device it
//     attached, a mount point it recorded) or what the user named;
//   - everything it creates is recorded in a Ledger before or as it is made, so that a run
//     killed with SIGKILL leaves enough behind for the next run's CleanupStale to undo it;
//   - cleanup verifies identity before acting: a loop number or a pid may have been reused by
//     someone else since the ledger was written.
//
// Only this package and internal/fs mount, unmount, attach or detach anything.
package target
