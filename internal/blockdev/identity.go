package blockdev

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Identity is what sysfs says about a device, recorded in results.
type Identity struct {
	Name      string `json:"name"`       // kernel name, e.g. "loop3"
	Path      string `json:"path"`       // device node, e.g. "/dev/loop3"
	SizeBytes uint64 `json:"size_bytes"` // from <dev>/size (512-byte sectors)
	// Queue holds the request-queue settings that exist among rotational,
	// logical_block_size, physical_block_size, minimum_io_size, optimal_io_size,
	// discard_granularity, discard_max_bytes, scheduler, nr_requests, read_ahead_kb,
	// max_sectors_kb and write_cache. For a partition they are the whole disk's.
	Queue map[string]string `json:"queue"`
	// Device holds what the underlying hardware says about itself, those present among
	// model and vendor (SCSI/virtio/NVMe) and, for SD/eMMC cards, name, manfid, oemid, date,
	// cid, serial, preferred_erase_size, erase_size and type.
	Device map[string]string `json:"device,omitempty"`
	// Loop is set for a bound loop device (or a partition of one).
	Loop *LoopInfo `json:"loop,omitempty"`
}

// LoopInfo is the state of a bound loop device from <dev>/loop/.
type LoopInfo struct {
	BackingFile string `json:"backing_file"`
	DirectIO    bool   `json:"direct_io"` // /sys/block/loopN/loop/dio: what the kernel does, not what was asked
	Autoclear   bool   `json:"autoclear"`
}

var queueAttrs = []string{
	"rotational", "logical_block_size", "physical_block_size", "minimum_io_size",
	"optimal_io_size", "discard_granularity", "discard_max_bytes", "scheduler",
	"nr_requests", "read_ahead_kb", "max_sectors_kb", "write_cache",
}

// deviceAttrs are read from <disk>/device/. model and vendor come from SCSI, NVMe and virtio
// devices; the others are the MMC core's attributes of an SD card or eMMC (the CID register
// fields and the erase geometry the card reports), which is what identifies a flash card.
var deviceAttrs = []string{
	"model", "vendor",
	"name", "manfid", "oemid", "date", "cid", "serial", "preferred_erase_size", "erase_size", "type",
}

// devDir returns the sysfs directory of dev. <sysfs>/class/block lists disks and partitions
// alike (/sys/block only has whole disks); both are symlinks into /sys/devices.
func devDir(sysfs, dev string) (string, error) {
	name := strings.TrimPrefix(dev, "/dev/")
	if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
		return "", fmt.Errorf("block device name %q: want a kernel name such as loop3 or mmcblk0p2", dev)
	}
	for _, p := range []string{filepath.Join(sysfs, "class", "block", name), filepath.Join(sysfs, "block", name)} {
		dir, err := filepath.EvalSymlinks(p)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("find block device %s in sysfs: %w", name, err)
		}
	}
	return "", fmt.Errorf("no block device %q in %s/class/block: check the name (ls /sys/class/block)", name, sysfs)
}

// diskDir returns the whole disk's directory for dir: a partition's sysfs directory has a
// "partition" file and sits inside its disk's directory, which holds queue/, device/ and loop/.
func diskDir(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		return filepath.Dir(dir)
	}
	return dir
}

// readAttr reads one sysfs attribute without its trailing newline.
func readAttr(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(b), "\n"), nil
}

// readAttrs reads the attributes names under dir that exist; a missing one is skipped
// (which ones exist depends on kernel version and driver), any other error is returned.
func readAttrs(dir string, names []string) (map[string]string, error) {
	m := map[string]string{}
	for _, n := range names {
		v, err := readAttr(filepath.Join(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, n), err)
		}
		m[n] = strings.TrimSpace(v)
	}
	return m, nil
}

// Identify describes dev ("loop3", "mmcblk0p2") from the sysfs tree rooted at sysfs
// (normally "/sys"). For a partition, the queue settings, hardware attributes and loop state
// are the parent disk's, since partitions have none of their own.
func Identify(sysfs, dev string) (Identity, error) {
	dir, err := devDir(sysfs, dev)
	if err != nil {
		return Identity{}, err
	}
	name := filepath.Base(dir)
	id := Identity{Name: name, Path: "/dev/" + name}

	sz, err := readAttr(filepath.Join(dir, "size"))
	if err != nil {
		return Identity{}, fmt.Errorf("identify %s: %w", name, err)
	}
	sectors, err := strconv.ParseUint(strings.TrimSpace(sz), 10, 64)
	if err != nil {
		return Identity{}, fmt.Errorf("identify %s: size %q: %w", name, sz, err)
	}
	// Bytes must fit a uint64 (no device has 8 EiB): beyond that the size would wrap to a
	// wrong, smaller one.
	if sectors > math.MaxUint64/SectorSize {
		return Identity{}, fmt.Errorf("identify %s: size %q: %d sectors of %d bytes do not fit 64 bits", name, sz, sectors, SectorSize)
	}
	id.SizeBytes = sectors * SectorSize

	disk := diskDir(dir)
	if id.Queue, err = readAttrs(filepath.Join(disk, "queue"), queueAttrs); err != nil {
		return Identity{}, fmt.Errorf("identify %s: %w", name, err)
	}
	devAttrs, err := readAttrs(filepath.Join(disk, "device"), deviceAttrs)
	if err != nil {
		return Identity{}, fmt.Errorf("identify %s: %w", name, err)
	}
	if len(devAttrs) > 0 {
		id.Device = devAttrs
	}

	// <disk>/loop/ exists only while a loop device is bound to a file.
	loopDir := filepath.Join(disk, "loop")
	backing, err := readAttr(filepath.Join(loopDir, "backing_file"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return Identity{}, fmt.Errorf("identify %s: %w", name, err)
	default:
		li := &LoopInfo{BackingFile: backing}
		for attr, dst := range map[string]*bool{"dio": &li.DirectIO, "autoclear": &li.Autoclear} {
			v, err := readAttr(filepath.Join(loopDir, attr))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return Identity{}, fmt.Errorf("identify %s: %w", name, err)
			}
			*dst = strings.TrimSpace(v) == "1"
		}
		id.Loop = li
	}
	return id, nil
}
