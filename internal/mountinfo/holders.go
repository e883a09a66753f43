package mountinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Holder is a mount of a block device, in some process's mount namespace.
type Holder struct {
	PID        int
	Comm       string // the process's name, from /proc/PID/comm
	MountPoint string
	// Elsewhere is true when the mount is in another mount namespace than this process's.
	Elsewhere bool
}

func (h Holder) String() string {
	where := "in this mount namespace"
	if h.Elsewhere {
		where = "in the mount namespace of"
	}
	return fmt.Sprintf("mounted at %s %s pid %d (%s)", h.MountPoint, where, h.PID, h.Comm)
}

// ProcRoot is the /proc that Holders reads; tests point it at a fake tree.
var ProcRoot = "/proc"

// Holders finds the mounts of the block device dev in every mount namespace of the machine,
// one process per namespace. Why: a process that copies the machine's mounts while a
// filesystem is mounted (unshare -m, ip netns exec, a container starting) keeps that
// filesystem, and so its device, alive after fsbench unmounted it in its own namespace. The
// device then refuses exclusive opens (EBUSY) until that process exits, and nothing in
// /proc/self/mountinfo says why.
func Holders(dev string) ([]Holder, error) {
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return nil, fmt.Errorf("holders of %s: %w", dev, err)
	}
	want := fmt.Sprintf("%d:%d", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))
	self, _ := os.Readlink(filepath.Join(ProcRoot, "self", "ns", "mnt"))
	entries, err := os.ReadDir(ProcRoot)
	if err != nil {
		return nil, fmt.Errorf("holders of %s: %w", dev, err)
	}
	seen := map[string]bool{}
	var out []Holder
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join(ProcRoot, e.Name())
		ns, err := os.Readlink(filepath.Join(dir, "ns", "mnt"))
		if err != nil || seen[ns] {
			continue // gone, or a namespace already read through another process
		}
		seen[ns] = true
		ms, err := Read(filepath.Join(dir, "mountinfo"))
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
		for _, m := range ms {
			if m.MajorMinor == want {
				out = append(out, Holder{PID: pid, Comm: strings.TrimSpace(string(comm)), MountPoint: m.MountPoint, Elsewhere: ns != self})
			}
		}
	}
	slices.SortFunc(out, func(a, b Holder) int { return a.PID - b.PID })
	return out, nil
}
