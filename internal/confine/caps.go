package confine

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// kept are the capabilities a confined program keeps: what root needs to read and write files
// it does not own (an image builder's source, its output), set owners and modes on what it
// writes, and raise its own limits. Everything else goes: CAP_MKNOD (a node of another device),
// CAP_SYS_ADMIN (mount devtmpfs, remount the jail writable, BLKPG), CAP_SYS_PTRACE (another
// process's root and descriptors), CAP_DAC_READ_SEARCH (open_by_handle_at, which opens a file
// of any mounted filesystem by its handle), CAP_SYS_RAWIO (I/O ports, a disk controller's
// registers), CAP_SYS_MODULE, CAP_SYS_CHROOT, CAP_SETPCAP and the rest.
var kept = []int{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID, unix.CAP_KILL,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_IPC_LOCK, unix.CAP_SYS_NICE, unix.CAP_SYS_RESOURCE,
}

// lastCap is the highest capability this kernel knows (/proc/sys/kernel/cap_last_cap); the
// bounding set must lose every one of them, including those newer than this program.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return 63 // the bounding set has 64 bits; dropping an unknown one fails with EINVAL, ignored
}

// dropPrivileges leaves the calling thread (the one that then execs the program) with the kept
// capabilities only (and CAP_SYS_ADMIN if sysAdmin), in every set, sets no_new_privs and
// installs the system call filter. Capabilities, no_new_privs and the filter are per thread: the
// caller must stay locked to its thread until exec, which keeps all three.
func dropPrivileges(last int, sysAdmin bool) error {
	keep := uint64(0)
	for _, c := range kept {
		keep |= 1 << c
	}
	if sysAdmin {
		keep |= 1 << unix.CAP_SYS_ADMIN
	}
	// The bounding set first: dropping from it needs CAP_SETPCAP, which capset removes. It is
	// what limits root across exec (root's new permitted set is the bounding set).
	for c := 0; c <= last; c++ {
		if keep&(1<<c) != 0 {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for i := range data {
		mask := uint32(keep >> (32 * i))
		data[i].Effective &= mask
		data[i].Permitted &= mask
		data[i].Inheritable = 0
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	// No set-uid program, no file capability gives anything back after exec.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return installFilter()
}
