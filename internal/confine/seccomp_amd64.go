package confine

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_X86_64

// archDenied: mknod, and the I/O port calls (a disk controller's registers; CAP_SYS_RAWIO is
// dropped too).
var archDenied = []uintptr{unix.SYS_MKNOD, unix.SYS_IOPL, unix.SYS_IOPERM}
