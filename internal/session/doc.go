// Package session is what a run owns on the machine, whatever it runs on: session.go (the
// results directory, marked and locked; the work directory; the cleanups), ledger.go and
// cleanup.go (the record of everything a run creates, and the undoing of a killed run's record),
// loop.go (loop devices), image.go (sparse image files), scheduler.go (the I/O scheduler,
// borrowed for a run), cgroup.go (the run's own cgroup), purge.go (a board's leftover run
// directories) and mount.go (the mount table, through package mountinfo). It knows no kind of
// target: the kinds (internal/targets/...) build on it.
//
// fsbench runs as root and can destroy data, so this package holds to three rules:
//   - it touches only what this process created (an image made with O_EXCL, a loop device it
//     attached, a directory it made, a mount point it recorded) or what the user named;
//   - everything it creates is recorded in a Ledger before it is made (a child process as soon
//     as it runs), so that a run killed with SIGKILL leaves enough behind for the next run's
//     CleanupStale, or `fsbench cleanup`, to undo it;
//   - cleanup verifies identity before acting: a loop number or a pid may have been reused by
//     someone else since the ledger was written.
//
// Every mount is internal/fs's (its package comment lists the exceptions), every unmount goes
// through internal/mountinfo; this package and the target kinds attach and detach loop devices.
package session
