// Package target is where a run's filesystems are made, and what a run owns on the machine.
//
// One file per kind of --target, each implementing Target (target.go): image.go (a sparse image
// file on a loop device, the default), simcard.go (the flash model served as a file, by a child
// process, on a loop device), device.go (a real block device, with the checks that refuse one in
// use), nandsim.go (a simulated raw NAND chip) and vm.go (a QEMU guest that runs the same fsbench:
// a Remote target). Adding a target means one file implementing the interface, plus its tests.
//
// The rest is what every target stands on: session.go (the results directory, marked and locked;
// the work directory; the cleanups), ledger.go and cleanup.go (the record of everything a run
// creates, and the undoing of a killed run's record), loop.go (loop devices), scheduler.go (the
// I/O scheduler, borrowed for a run) and mount.go (the mount table, through package mountinfo).
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
// Only this package and internal/fs mount, unmount, attach or detach anything; both unmount
// through internal/mountinfo.
package target
