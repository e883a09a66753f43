package confine

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denied are the system calls a confined program gets EPERM for. The jail must hold against
// whatever code runs in it, not only against the tools' own: mksquashfs's pseudo files run shell
// commands, and a word check may miss the option that adds one. Each call here is a way out of
// the jail or onto another device that the namespaces and the dropped capabilities do not close
// on their own, or do not close for a tool that keeps CAP_SYS_ADMIN (mkfs.xfs, see
// Spec.SysAdmin):
//   - the mount API and namespaces: mount devtmpfs, remount the jail writable, move, pivot, enter
//     or make a namespace (clone with CLONE_NEW* is filtered below, clone3 answers ENOSYS so that
//     libc falls back to clone);
//   - mknod: a node of another device (CAP_MKNOD is gone too; belt and braces);
//   - open_by_handle_at: a file of any mounted filesystem, without a path;
//   - socket: a unix socket on a read-only mount still connects, and a root program that can
//     reach a root tmux or systemd's socket can run anything outside (tools need no sockets:
//     libc's nscd and uuidd lookups fall back when they fail);
//   - io_uring: its operations (IORING_OP_SOCKET, IORING_OP_OPENAT) bypass this filter;
//   - ptrace, process_vm_*, pidfd_getfd: another process's memory or descriptors;
//   - bpf, perf_event_open, kexec, modules, swapon, reboot, quotactl, fanotify, syslog, keys,
//     sethostname: the kernel's state beyond the jail.
//
// and ioctls FIFREEZE, FITHAW, FITRIM, which a holder of CAP_SYS_ADMIN may issue on any file,
// e.g. on the machine's read-only root filesystem.
var denied = append([]uintptr{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_MOUNT_SETATTR, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_PIVOT_ROOT,
	unix.SYS_CHROOT, unix.SYS_SETNS, unix.SYS_UNSHARE, unix.SYS_MKNODAT, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_SOCKET, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_SWAPON, unix.SYS_SWAPOFF,
	unix.SYS_REBOOT, unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_FANOTIFY_INIT, unix.SYS_SYSLOG,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME,
	unix.SYS_USERFAULTFD, unix.SYS_ACCT, unix.SYS_LOOKUP_DCOOKIE,
}, archDenied...)

// Filesystem ioctls that act on a whole filesystem through any file of it (include/uapi/linux/fs.h).
const (
	ioctlFIFREEZE = 0xc0045877
	ioctlFITHAW   = 0xc0045878
	ioctlFITRIM   = 0xc0185879
)

// nsFlags are clone(2)'s flags that make a namespace.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWCGROUP

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24 // the low 32 bits on a little-endian machine, which every target of fsbench is
)

// filter is the BPF program: the wrong architecture (an i386 or x32 call on amd64) kills, a
// denied call answers EPERM, clone3 ENOSYS, clone with a namespace flag EPERM, a denied ioctl
// EPERM, anything else runs.
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
		// x32 calls carry bit 30 with the amd64 architecture.
		jump(jge, 0x40000000, 0, 1),
		stmt(ret, eperm),
	)
	for _, nr := range denied {
		p = append(p, jump(jeq, uint32(nr), 0, 1), stmt(ret, eperm))
	}
	p = append(p,
		jump(jeq, unix.SYS_CLONE3, 0, 1), stmt(ret, enosys),
		// clone: its flags are the first argument on every target architecture.
		jump(jeq, unix.SYS_CLONE, 0, 4),
		stmt(ld, offArg0),
		jump(jset, nsFlags, 0, 1),
		stmt(ret, eperm),
		stmt(ret, allow),
		jump(jeq, unix.SYS_IOCTL, 0, 5),
		stmt(ld, offArg1),
		jump(jeq, ioctlFIFREEZE, 2, 0),
		jump(jeq, ioctlFITHAW, 1, 0),
		jump(jeq, ioctlFITRIM, 0, 1),
		stmt(ret, eperm),
		stmt(ret, allow),
	)
	return p
}

// installFilter sets the filter on the calling thread (no_new_privs must be set); exec keeps it.
func installFilter() error {
	p := filter()
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("install the system call filter: %w", err)
	}
	return nil
}
