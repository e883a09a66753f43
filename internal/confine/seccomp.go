package confine

import (
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system call filter is an allowlist: a confined program may make the calls an ordinary
// program makes on its own files, memory, threads and signals, and nothing else. Every call the
// filter does not name answers EPERM, whatever it is: one a newer kernel added (open_tree_attr,
// Linux 6.15, clones a mount with read-only and nodev cleared), one this list left out. The
// jail must hold against whatever code runs in it, not only against the tools' own: mksquashfs's
// pseudo files run shell commands, and a word check may miss the option that adds one.
//
// The list was drawn from what the tools fsbench runs do (strace -f of every mkfs, fsck, image
// builder and free-space tool on a loop device, and of the MTD, UBI and nilfs2 tools in the QEMU
// guest), widened to the whole family of each call they make (pread64 brings preadv2; stat brings
// statx), and narrowed by what the namespaces and the dropped capabilities must not be undone by.
// Left out on purpose, so EPERM:
//   - the mount API and namespaces: mount, umount2, mount_setattr, move_mount, open_tree,
//     open_tree_attr, fsopen, fsconfig, fsmount, fspick, pivot_root, chroot, setns, unshare
//     (clone with a namespace flag is refused below; clone3, whose flags sit in memory the
//     filter cannot read, answers ENOSYS so that libc falls back to clone);
//   - mknod and mknodat (a node of another device), open_by_handle_at (a file of any mounted
//     filesystem without a path), name_to_handle_at;
//   - socket, connect, bind, listen, accept: a unix socket on a read-only mount still connects,
//     and a root program that reaches a root tmux or systemd's socket can run anything outside
//     (libc's nscd and libuuid's uuidd lookups fall back when socket fails); socketpair stays,
//     it reaches nothing;
//   - io_uring (its operations bypass this filter), ptrace, process_vm_*, pidfd_getfd,
//     process_madvise, kcmp: another process's memory or descriptors;
//   - bpf, perf_event_open, kexec, modules, swapon, reboot, quotactl, fanotify, syslog, keys,
//     acct, sethostname, settimeofday and the clock setters, userfaultfd, seccomp, the NUMA
//     policy calls, listmount and statmount: the kernel's state beyond the jail.
//
// ioctl is allowed only with the requests in allowedIoctls (below): the block device's own
// queries and the writes a mkfs makes to it (discard, zero-out, zones), the MTD and UBI requests
// of mtd-utils and the nilfs2 cleaner's, terminal and file queries. Everything else is refused,
// in particular every passthrough (SG_IO, NVMe admin and I/O commands, MMC_IOC_CMD: a raw
// command reaches the whole disk or controller, not the partition under test), partition table
// changes (BLKPG, BLKRRPART), loop device changes, and whole-filesystem requests on any file of
// another filesystem (FIFREEZE, FITRIM, a filesystem's shutdown ioctl, btrfs's device ioctls).

// x32Bit is set in the number of an x32 call, which comes with the amd64 architecture; none is
// on the list.
const x32Bit = 0x40000000

// allowed is every call the filter lets through as it is, sorted.
func allowed() []uint32 {
	var out []uint32
	for _, nr := range append(slices.Clone(allowedSyscalls), archAllowed...) {
		if nr == unix.SYS_CLONE || nr == unix.SYS_IOCTL {
			continue // checked by their arguments
		}
		out = append(out, uint32(nr))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// HighestKnown is the highest system call number the filter names: a call above it is one this
// filter was written without, and answers EPERM (a test makes sure, with a call the running
// kernel has).
func HighestKnown() uint32 {
	h := uint32(unix.SYS_CLONE3)
	for _, nr := range allowed() {
		if nr < armPrivateBase {
			h = max(h, nr)
		}
	}
	return h
}

// nsFlags are clone(2)'s flags that make a namespace.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24 // the low 32 bits on a little-endian machine, which every target of fsbench is
)

// filter is the BPF program: the wrong architecture (an i386 call on amd64) kills, an allowed call
// runs, clone runs without a namespace flag, ioctl runs with an allowed request, clone3 answers
// ENOSYS, and everything else EPERM. An allowed call's answer depends on its number alone, so
// kernels since 5.11 cache it and skip the filter for it.
//
// The ioctl request is compared in its low 32 bits: the kernel's ioctl takes an unsigned int and
// ignores the rest, so a request with high bits set is the same request.
func filter() []unix.SockFilter {
	stmt := func(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }
	jump := func(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	var p []unix.SockFilter
	p = append(p,
		stmt(ld, offArch),
		jump(jeq, auditArch, 1, 0),
		stmt(ret, unix.SECCOMP_RET_KILL_PROCESS),
		stmt(ld, offNr),
		jump(jge, x32Bit, 0, 1),
		stmt(ret, eperm),
	)
	// Each test jumps over its own return: no jump reaches further than the next instruction,
	// whatever the length of the list (a BPF jump offset has 8 bits).
	for _, nr := range allowed() {
		p = append(p, jump(jeq, nr, 0, 1), stmt(ret, allow))
	}
	p = append(p,
		jump(jeq, unix.SYS_CLONE3, 0, 1), stmt(ret, enosys),
		// clone: its flags are the first argument on every target architecture.
		jump(jeq, unix.SYS_CLONE, 0, 4),
		stmt(ld, offArg0),
		jump(jset, nsFlags, 0, 1),
		stmt(ret, eperm),
		stmt(ret, allow),
		jump(jeq, unix.SYS_IOCTL, 1, 0),
		stmt(ret, eperm),
		stmt(ld, offArg1),
	)
	for _, req := range allowedIoctls() {
		p = append(p, jump(jeq, req, 0, 1), stmt(ret, allow))
	}
	return append(p, stmt(ret, eperm))
}

// installFilter sets the filter on the calling thread (no_new_privs must be set); exec keeps it.
func installFilter() error {
	p := filter()
	if len(p) > 4096 {
		return fmt.Errorf("the system call filter has %d instructions, more than the kernel's 4096", len(p))
	}
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("install the system call filter: %w", err)
	}
	return nil
}
