package session

import (
	"github.com/fsbench/fsbench/internal/mountinfo"
)

// canonical returns dir as the kernel writes it in mountinfo (mountinfo.Canonical).
func canonical(dir string) (string, error) { return mountinfo.Canonical(dir) }

// MountedAt reports whether something is mounted on dir itself (see mountinfo.MountedAt).
func MountedAt(dir string) (bool, error) { return mountinfo.MountedAt(dir) }

// MountsUnder returns the mount points at dir or below it, deepest first (see mountinfo.Under).
func MountsUnder(dir string) ([]string, error) { return mountinfo.Under(dir) }
