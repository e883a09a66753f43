package confine

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_ARM

// armPrivateBase is where 32-bit ARM's private calls begin (__ARM_NR_BASE): glibc sets its thread
// pointer with set_tls at start-up, and code that writes code flushes the caches with cacheflush.
const armPrivateBase = 0x0f0000

const (
	armCacheflush = armPrivateBase + 2
	armSetTLS     = armPrivateBase + 5
)

// archAllowed are 32-bit ARM's own names for calls of allowedSyscalls' kind: the 64-bit file
// offsets and sizes, 32-bit ids, the calls older than the *at family, and the 64-bit time calls
// a libc built for the year 2038 makes.
var archAllowed = []uintptr{
	unix.SYS_MMAP2, unix.SYS_FSTATAT64, unix.SYS_STAT64, unix.SYS_LSTAT64, unix.SYS_FSTAT64,
	unix.SYS_FSTATFS64, unix.SYS_STATFS64, unix.SYS_FCNTL64, unix.SYS__LLSEEK, unix.SYS_TRUNCATE64,
	unix.SYS_FTRUNCATE64, unix.SYS_SENDFILE64, unix.SYS_ARM_FADVISE64_64, unix.SYS_ARM_SYNC_FILE_RANGE,
	unix.SYS_UGETRLIMIT, unix.SYS_GETUID32, unix.SYS_GETEUID32, unix.SYS_GETGID32, unix.SYS_GETEGID32,
	unix.SYS_GETRESUID32, unix.SYS_GETRESGID32, unix.SYS_GETGROUPS32, unix.SYS_SETUID32, unix.SYS_SETGID32,
	unix.SYS_SETREUID32, unix.SYS_SETREGID32, unix.SYS_SETRESUID32, unix.SYS_SETRESGID32, unix.SYS_SETGROUPS32,
	unix.SYS_SETFSUID32, unix.SYS_SETFSGID32, unix.SYS_FCHOWN32, unix.SYS_CHOWN32, unix.SYS_LCHOWN32,
	unix.SYS_SIGRETURN, unix.SYS__NEWSELECT, unix.SYS_POLL, unix.SYS_OPEN, unix.SYS_CREAT, unix.SYS_ACCESS,
	unix.SYS_READLINK, unix.SYS_GETDENTS, unix.SYS_MKDIR, unix.SYS_RMDIR, unix.SYS_UNLINK, unix.SYS_RENAME,
	unix.SYS_LINK, unix.SYS_SYMLINK, unix.SYS_CHMOD, unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_UTIMES,
	unix.SYS_FUTIMESAT, unix.SYS_DUP2, unix.SYS_PIPE, unix.SYS_EVENTFD, unix.SYS_EPOLL_CREATE,
	unix.SYS_EPOLL_WAIT, unix.SYS_INOTIFY_INIT, unix.SYS_SIGNALFD, unix.SYS_FORK, unix.SYS_VFORK,
	unix.SYS_PAUSE, unix.SYS_GETPGRP, unix.SYS_SEND, unix.SYS_RECV,
	unix.SYS_CLOCK_GETTIME64, unix.SYS_CLOCK_GETRES_TIME64, unix.SYS_CLOCK_NANOSLEEP_TIME64,
	unix.SYS_TIMER_SETTIME64, unix.SYS_TIMER_GETTIME64, unix.SYS_TIMERFD_SETTIME64, unix.SYS_TIMERFD_GETTIME64,
	unix.SYS_UTIMENSAT_TIME64, unix.SYS_PSELECT6_TIME64, unix.SYS_PPOLL_TIME64, unix.SYS_RECVMMSG_TIME64,
	unix.SYS_MQ_TIMEDSEND_TIME64, unix.SYS_MQ_TIMEDRECEIVE_TIME64, unix.SYS_SEMTIMEDOP_TIME64,
	unix.SYS_RT_SIGTIMEDWAIT_TIME64, unix.SYS_FUTEX_TIME64, unix.SYS_SCHED_RR_GET_INTERVAL_TIME64,
	unix.SYS_IO_PGETEVENTS_TIME64,
	armCacheflush, armSetTLS,
}
