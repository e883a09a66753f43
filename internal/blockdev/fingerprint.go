package blockdev

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A Fingerprint is what tells one medium from another behind the same device path: a run lasts
// an hour, and in that time a card in a USB reader can be swapped, or the kernel can renumber
// devices after a reset, and the next mkfs would format whatever now answers at the path. It is
// taken when the run starts and compared before fsbench writes to the device again.
//
// The strongest of its parts is the disk sequence number (sysfs diskseq, Linux 5.15): the kernel
// gives a disk a new one each time a medium appears behind it (a card inserted in a reader, a
// loop device attached to a file), and never reuses one until reboot. Kernels without it still
// compare the device number, size, partition start, the card's or drive's own identity (CID,
// serial, WWID) and, for a loop device, the file it is attached to (by device and inode).
type Fingerprint struct {
	Path    string `json:"path"`              // as named
	Number  string `json:"number"`            // major:minor of the node
	Size    uint64 `json:"size_bytes"`        // bytes
	Start   string `json:"start,omitempty"`   // a partition's first sector
	DiskSeq string `json:"diskseq,omitempty"` // the disk's sequence number
	// Serial are the medium's own identity attributes that exist among cid and serial (SD
	// and eMMC: the card's CID register), wwid and serial (SCSI, NVMe), by name.
	Serial map[string]string `json:"serial,omitempty"`
	// Loop is the backing file of a loop device, with the device and inode it had.
	Loop string `json:"loop,omitempty"`
}

// ReadFingerprint reads the fingerprint of the block device at path from the sysfs tree at sysfs
// ("/sys").
func ReadFingerprint(sysfs, path string) (Fingerprint, error) {
	fp := Fingerprint{Path: path}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fp, fmt.Errorf("%s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return fp, fmt.Errorf("%s is not a block device", path)
	}
	fp.Number = fmt.Sprintf("%d:%d", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))
	dir, err := filepath.EvalSymlinks(filepath.Join(sysfs, "dev", "block", fp.Number))
	if err != nil {
		return fp, fmt.Errorf("%s (%s) is not in %s/dev/block: %w", path, fp.Number, sysfs, err)
	}
	sz, err := readAttr(filepath.Join(dir, "size"))
	if err != nil {
		return fp, fmt.Errorf("%s: %w", path, err)
	}
	sectors, err := strconv.ParseUint(strings.TrimSpace(sz), 10, 64)
	if err != nil {
		return fp, fmt.Errorf("%s: size %q: %w", path, sz, err)
	}
	fp.Size = sectors * SectorSize
	if start, err := readAttr(filepath.Join(dir, "start")); err == nil {
		fp.Start = strings.TrimSpace(start)
	}
	disk := diskDir(dir)
	if seq, err := readAttr(filepath.Join(disk, "diskseq")); err == nil {
		fp.DiskSeq = strings.TrimSpace(seq)
	}
	for _, a := range []struct{ file, name string }{
		{"device/cid", "cid"}, {"device/serial", "serial"}, {"device/wwid", "wwid"}, {"wwid", "wwid"},
	} {
		v, err := readAttr(filepath.Join(disk, a.file))
		if v = strings.TrimSpace(v); err != nil || v == "" {
			continue
		}
		if fp.Serial == nil {
			fp.Serial = map[string]string{}
		}
		if _, ok := fp.Serial[a.name]; !ok {
			fp.Serial[a.name] = v
		}
	}
	backing, err := readAttr(filepath.Join(disk, "loop", "backing_file"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fp, fmt.Errorf("%s: %w", path, err)
	default:
		fp.Loop = strings.TrimSpace(backing)
		if info, err := loopStatus(path); err == nil {
			fp.Loop += fmt.Sprintf(" (device %d:%d, inode %d)", unix.Major(info.Device), unix.Minor(info.Device), info.Inode)
		}
	}
	return fp, nil
}

// loopStatus asks a loop device which file it is attached to.
func loopStatus(path string) (*unix.LoopInfo64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unix.IoctlLoopGetStatus64(int(f.Fd()))
}

// Changes says, for a person, what differs between the fingerprint taken when the run started
// (f) and one taken now: nothing when they are the same medium.
func (f Fingerprint) Changes(now Fingerprint) []string {
	var out []string
	diff := func(what, was, is string) {
		if was != is {
			if was == "" {
				was = "none"
			}
			if is == "" {
				is = "none"
			}
			out = append(out, fmt.Sprintf("%s %s, was %s", what, is, was))
		}
	}
	diff("device number", f.Number, now.Number)
	if f.Size != now.Size {
		out = append(out, fmt.Sprintf("size %d bytes, was %d", now.Size, f.Size))
	}
	diff("partition start (sector)", f.Start, now.Start)
	if f.DiskSeq != "" && now.DiskSeq != "" && f.DiskSeq != now.DiskSeq {
		out = append(out, fmt.Sprintf("disk sequence number %s, was %s (the kernel numbers each medium that appears behind a disk: another one was inserted or attached since)", now.DiskSeq, f.DiskSeq))
	}
	for _, k := range []string{"cid", "serial", "wwid"} {
		diff(k, f.Serial[k], now.Serial[k])
	}
	diff("loop device's file", f.Loop, now.Loop)
	return out
}

// ChangedError says that the device under test is no longer the medium the run started on.
type ChangedError struct {
	Path    string
	Changes []string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("the device under test changed since the run started: %s now has %s; "+
		"fsbench stopped before writing to it: check which medium is at %s (a card swapped in a reader, a device renumbered after a reset) and start the run again",
		e.Path, strings.Join(e.Changes, "; "), e.Path)
}

// Verify compares the device at f.Path now with f: a *ChangedError when it is another medium (or
// none: a pulled card).
func (f Fingerprint) Verify(sysfs string) error {
	now, err := ReadFingerprint(sysfs, f.Path)
	if err != nil {
		return &ChangedError{Path: f.Path, Changes: []string{"no medium that can be read: " + err.Error()}}
	}
	if c := f.Changes(now); len(c) > 0 {
		return &ChangedError{Path: f.Path, Changes: c}
	}
	return nil
}
