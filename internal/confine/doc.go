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
//     set, so that no set-uid program or file capability gives them back.
//
// The Go runtime cannot run code between fork and exec, so a confined program is started as this
// same binary (/proc/self/exe) in the new namespaces, with the jail's description in an
// environment variable: the package's init function sees it, builds the jail as pid 1 of its own
// pid namespace, drops the capabilities and execs the program. Any binary that links this
// package (fsbench itself, every test binary) therefore confines without a hook in main.
//
// fsbench's own mount(2) is confined differently, without a new process (a mount is timed): a
// goroutine locked to its own OS thread unshares a mount namespace for that thread alone, builds
// the same jail there (without /proc: the kernel needs none to mount), mounts, takes a detached
// copy of the new mount with open_tree(2) and lets the thread die with its namespace; the calling
// thread attaches the copy at the target with move_mount(2). The kernel resolves a mount option's
// path (ext4 journal_path=, xfs logdev=, btrfs device=) in the jail, where no other device exists.
// An option that names a device by number (ext4 journal_dev=) is beyond any namespace: the word
// check refuses it.
package confine
