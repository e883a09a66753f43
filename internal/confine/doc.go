// Package confine runs the programs fsbench points at a device (mkfs, fsck, image builders), and
// fsbench's own mount(2) calls, inside a jail that the kernel enforces, so that no word given to
// them (a configuration's mkfs or mount options, a file name, a symlink in the working
// directory) can make them open another device or write outside the run.
//
// A word check can never be complete: every mkfs, fsck and image builder has its own option
// grammar (getopt clusters, long options, sub-options, positional devices), and new versions add
// options. The jail does not depend on the words:
//
//   - a private mount namespace (nothing the jail does propagates back), in which every mount the
//     program does not need is detached (so the jail pins no other filesystem: a copied mount
//     would keep another run's device busy), /dev is a new tmpfs holding only the device under
//     test and null, zero, full, random and urandom, and every other mount is read-only, nodev
//     (a device node anywhere else cannot be opened) and nosuid;
//   - a new pid namespace with a /proc of its own, so that /proc/1/root (the machine's init, whose
//     root holds the real /dev) leads back into the jail, and a new IPC namespace;
//   - one writable directory, the program's working directory, which fsbench makes for the one
//     call and removes after it (TMPDIR points there too);
//   - the capabilities a program could use to leave: CAP_MKNOD (make a node), CAP_SYS_ADMIN
//     (mount devtmpfs, remount), CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (reach other processes'
//     roots, open files by handle), CAP_SYS_RAWIO, CAP_SYS_MODULE and the rest are dropped from the
//     bounding set and the effective, permitted, inheritable and ambient sets, and no_new_privs is
//     set, so that no set-uid program or file capability gives them back;
//   - a system call filter that is an allowlist (seccomp.go): the calls an ordinary program makes,
//     ioctl with the requests the tools make only; every other call, one newer than the filter
//     too, answers EPERM.
//
// The Go runtime cannot run code between fork and exec, so a confined program is started as this
// same binary (/proc/self/exe) in the new namespaces, with the jail's description in an
// environment variable: the package's init function sees it, builds the jail as pid 1 of its own
// pid namespace, drops the capabilities and execs the program. Any binary that links this
// package (fsbench itself, every test binary) therefore confines without a hook in main.
//
// fsbench's own mount(2) is confined differently, without a new process (a mount is timed): a
// goroutine locked to its own OS thread unshares a mount namespace for that thread alone, enters
// (chroot) a tmpfs that holds /dev/<device> and nothing else, and mounts with the new mount API
// (fsopen, fsconfig, fsmount), which gives the new mount detached; the calling thread attaches it
// at the target with move_mount(2). The kernel resolves a mount option's path (ext4
// journal_path=, xfs logdev=, btrfs device=) on that thread, where no other device node is in
// reach on any mount (journal_path= takes the number of the node it finds and opens the device
// without the nodev check). An option that names a device by number (ext4 journal_dev=) is beyond
// any namespace: the word check refuses it.
//
// Start runs a daemon (nilfs_cleanerd) in a jail whose pid 1 stays its init, and a jail may share
// another's IPC namespace (nilfs-clean reaches the cleaner by message queue).
package confine
