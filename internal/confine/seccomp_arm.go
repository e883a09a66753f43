package confine

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_ARM

var archDenied = []uintptr{unix.SYS_MKNOD}
