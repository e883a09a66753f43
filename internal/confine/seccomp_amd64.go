package confine

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_X86_64

// armPrivateBase: amd64 has no private calls above the table (see seccomp_arm.go).
const armPrivateBase = ^uint32(0)

// archAllowed are amd64's own names for calls of allowedSyscalls' kind: the calls older than
// the *at family, which its libc and busybox still make.
var archAllowed = []uintptr{
	unix.SYS_NEWFSTATAT, unix.SYS_SYNC_FILE_RANGE, unix.SYS_FADVISE64, unix.SYS_MMAP, unix.SYS_GETRLIMIT,
	unix.SYS_OPEN, unix.SYS_CREAT, unix.SYS_STAT, unix.SYS_LSTAT, unix.SYS_ACCESS, unix.SYS_READLINK,
	unix.SYS_GETDENTS, unix.SYS_MKDIR, unix.SYS_RMDIR, unix.SYS_UNLINK, unix.SYS_RENAME, unix.SYS_LINK,
	unix.SYS_SYMLINK, unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_UTIME, unix.SYS_UTIMES,
	unix.SYS_FUTIMESAT, unix.SYS_DUP2, unix.SYS_PIPE, unix.SYS_EVENTFD, unix.SYS_EPOLL_CREATE,
	unix.SYS_EPOLL_WAIT, unix.SYS_POLL, unix.SYS_SELECT, unix.SYS_INOTIFY_INIT, unix.SYS_SIGNALFD,
	unix.SYS_FORK, unix.SYS_VFORK, unix.SYS_PAUSE, unix.SYS_ALARM, unix.SYS_TIME, unix.SYS_GETPGRP,
	unix.SYS_ARCH_PRCTL, unix.SYS_MAP_SHADOW_STACK,
}
