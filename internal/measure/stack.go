package measure

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ownLink says that the I/O of device From reaches the whole disk Disk: From's bytes there are
// the run's own, not another program's.
type ownLink struct {
	Disk string // a whole physical disk ("vda", "mmcblk0")
	From string // the run's device whose requests reach Disk ("mmcblk0p2", "loop3")
	// Direct: every request of From is one of Disk's, byte for byte (a partition of Disk, a
	// loop device over Disk's device node, a device-mapper device with Disk as its one slave).
	// Otherwise From's data reaches Disk through a file of a filesystem on it (a loop device's
	// image, the simulated card's data file), which adds metadata, may serve reads from its
	// cache and writes data back later.
	Direct bool
}

func (l ownLink) String() string {
	how := "through a file on it"
	if l.Direct {
		how = "request for request"
	}
	return fmt.Sprintf("%s on %s (%s)", l.From, l.Disk, how)
}

// stackDepth bounds the walk down a stack of devices (a loop device over a file on a partition
// of a loop device...): real stacks are 3 deep at most; the bound stops a cycle.
const stackDepth = 8

// resolveStack finds, from sysfs, every whole disk that the I/O of device (a /sys/class/block
// name) reaches, and through which device: a partition's parent disk (/proc/diskstats counts a
// partition's I/O on its disk too), a loop device's backing file (loop/backing_file, stat'ed:
// a device node is the device itself, a file lives on the disk of its filesystem), the slaves
// of a device-mapper or md device, recursively. backing, when set, is a file holding the
// device's data that the stack does not show (the simulated card's data file, written by the
// card server behind FUSE); it is linked to device through its filesystem.
func resolveStack(sys, device, backing string) []ownLink {
	r := &stackWalker{sys: sys, top: device}
	if device != "" {
		r.walk(device, device, true, 0)
	}
	if backing != "" && device != "" {
		if name, blk := r.fileDevice(backing); name != "" {
			r.walk(name, device, blk, 0)
		}
	}
	return r.links
}

type stackWalker struct {
	sys   string
	top   string
	links []ownLink
}

// walk visits name, reached by the run's device from (the device just above it when direct,
// else the device whose data went into a file).
func (r *stackWalker) walk(name, from string, direct bool, depth int) {
	if depth > stackDepth || name == "" {
		return
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(r.sys, "class", "block", name))
	if err != nil {
		return
	}
	// next visits the device below name; exact says that it gets name's requests as they are.
	next := func(lower string, exact bool) {
		f := from
		if direct {
			f = name // the layer just above lower is name, whose bytes are all the run's
		}
		r.walk(lower, f, direct && exact, depth+1)
	}
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		next(filepath.Base(filepath.Dir(dir)), true)
		return
	}
	if b, err := os.ReadFile(filepath.Join(dir, "loop", "backing_file")); err == nil {
		file := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if lower, blk := r.fileDevice(file); lower != "" {
			next(lower, blk)
		}
		return
	}
	if slaves, _ := os.ReadDir(filepath.Join(dir, "slaves")); len(slaves) > 0 {
		for _, s := range slaves {
			// One slave (dm-linear, dm-crypt) gets the requests of its holder; several
			// (striping, mirrors) share them in ways sysfs does not say: not request for request.
			next(s.Name(), len(slaves) == 1)
		}
		return
	}
	if name == r.top || virtualDisk(name) {
		return // the device under test itself (counted as the run's), or no physical disk
	}
	l := ownLink{Disk: name, From: from, Direct: direct}
	if !slices.Contains(r.links, l) {
		r.links = append(r.links, l)
	}
}

// fileDevice returns the block device holding file: the device itself for a device node
// (blk true), else the device of the filesystem the file is on; "" when that is no block
// device (tmpfs, FUSE, an overlay) or cannot be told.
func (r *stackWalker) fileDevice(file string) (name string, blk bool) {
	var st unix.Stat_t
	if err := unix.Stat(file, &st); err != nil {
		return "", false
	}
	dev := uint64(st.Dev)
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		dev, blk = uint64(st.Rdev), true
	}
	link, err := filepath.EvalSymlinks(filepath.Join(r.sys, "dev", "block", fmt.Sprintf("%d:%d", unix.Major(dev), unix.Minor(dev))))
	if err != nil {
		return "", false
	}
	return filepath.Base(link), blk
}

// virtualDisk reports whether name is a disk whose I/O reaches no physical device of its own
// (RAM disks, zram) or reaches one that is counted where it lands (loop, dm, md, nbd).
func virtualDisk(name string) bool {
	for _, p := range []string{"loop", "ram", "zram", "dm-", "md", "nbd"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
