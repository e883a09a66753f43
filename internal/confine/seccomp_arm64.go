package confine

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_AARCH64

// armPrivateBase: arm64 has no private calls above the table (see seccomp_arm.go).
const armPrivateBase = ^uint32(0)

// archAllowed are arm64's own names for calls of allowedSyscalls' kind (it has no calls older
// than the *at family).
var archAllowed = []uintptr{
	unix.SYS_NEWFSTATAT, unix.SYS_SYNC_FILE_RANGE, unix.SYS_FADVISE64, unix.SYS_MMAP, unix.SYS_GETRLIMIT,
}
