package confine

import "golang.org/x/sys/unix"

const auditArch = unix.AUDIT_ARCH_AARCH64

// archDenied: arm64 has mknodat only.
var archDenied = []uintptr{}
