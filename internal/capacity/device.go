package capacity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/cardid"
)

// Device is what the probe reads and writes: a block device or image file opened for direct
// I/O (buffers and offsets aligned to the block size).
type Device interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Sync makes every write so far durable: fsync, which the kernel turns into a cache
	// flush for the card.
	Sync() error
}

// DeviceID is what identifies the device an undo log was taken from, so that the log is
// replayed on that device and no other, even after a reboot renamed it.
type DeviceID struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"` // kernel name when the log was written
	Size uint64 `json:"size"`
	// ByID are the device's stable names (/dev/disk/by-id/...), tried when Path is gone or is
	// another device now.
	ByID []string `json:"by_id,omitempty"`
	// Fingerprint is the card's identity (cardid.Reading.Fingerprint): its CID with the
	// serial hashed; "" when nothing identifies the card.
	Fingerprint string `json:"fingerprint,omitempty"`
	// FileDev and FileIno identify an image file.
	FileDev uint64 `json:"file_dev,omitempty"`
	FileIno uint64 `json:"file_ino,omitempty"`
}

// Target is a device opened for the probe, with what the probe needs to know about it.
type Target struct {
	// Dev is what the probe reads and writes: File, unless a test gives another.
	Dev       Device
	File      *os.File
	Path      string
	Size      uint64
	BlockSize uint64 // the device's logical block size
	// EraseSize is the card's erase unit (sysfs preferred_erase_size: the AU of an SD card),
	// 0 when unknown.
	EraseSize uint64
	// Reset power-cycles the card, emptying any RAM cache; nil when this host cannot. ResetHow
	// says how, or why not.
	Reset    func() error
	ResetHow string
	ID       DeviceID
	Reading  *cardid.Reading
	Direct   bool // O_DIRECT took
}

// Close closes the device.
func (t *Target) Close() error {
	if t.File == nil {
		return nil
	}
	return t.File.Close()
}

// OpenTarget opens path for the probe: a block device exclusively (O_EXCL: the kernel refuses
// it while it is mounted or claimed) and with O_DIRECT, so that every read reaches the card
// instead of the host's page cache; an image file with O_DIRECT where its filesystem allows.
func OpenTarget(ctx context.Context, path string) (*Target, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("capacity check of %s: %w", path, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("capacity check of %s: %w", path, err)
	}
	t := &Target{Path: path, Direct: true}
	flags := os.O_RDWR | unix.O_CLOEXEC | unix.O_DIRECT
	if !st.Mode().IsRegular() {
		if st.Mode()&os.ModeDevice == 0 || st.Mode()&os.ModeCharDevice != 0 {
			return nil, fmt.Errorf("capacity check of %s: not a block device or an image file", path)
		}
		flags |= unix.O_EXCL
	}
	f, err := os.OpenFile(real, flags, 0)
	if err != nil && st.Mode().IsRegular() && errors.Is(err, unix.EINVAL) {
		// tmpfs and some FUSE filesystems refuse O_DIRECT: an image there is read through
		// the page cache, which is the file itself anyway.
		t.Direct = false
		f, err = os.OpenFile(real, flags&^unix.O_DIRECT, 0)
	}
	if errors.Is(err, unix.EBUSY) {
		return nil, fmt.Errorf("capacity check of %s: it is in use (mounted, or claimed by another program): unmount it first: %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("capacity check of %s: %w", path, err)
	}
	t.File, t.Dev = f, f
	if t.Size, err = blockdev.SizeBytes(f); err != nil {
		f.Close()
		return nil, err
	}
	t.ID = DeviceID{Path: path, Size: t.Size}
	t.BlockSize = 512
	t.ResetHow = "this host cannot reset the card (a reader's or slot's power is not fsbench's to cycle): a write cache is defeated by writing past it instead"
	if st.Mode().IsRegular() {
		var s unix.Stat_t
		if unix.Stat(real, &s) == nil {
			t.ID.FileDev, t.ID.FileIno = uint64(s.Dev), s.Ino
		}
		t.ResetHow = "an image file: nothing to reset"
		return t, nil
	}
	name := filepath.Base(real)
	t.ID.Name = name
	t.ID.ByID = byIDLinks(real)
	if id, err := blockdev.Identify("/sys", name); err == nil {
		if v, err := strconv.ParseUint(id.Queue["logical_block_size"], 10, 64); err == nil && v >= 512 {
			t.BlockSize = v
		}
		if v, err := strconv.ParseUint(id.Device["preferred_erase_size"], 10, 64); err == nil {
			t.EraseSize = v
		}
	}
	if r, err := cardid.Read(ctx, real, cardid.Options{}); err == nil {
		t.Reading = r
		t.ID.Fingerprint = r.Fingerprint()
		if r.Simulated {
			// The simulated card's own device directory holds its erase size, and its reset
			// file power-cycles it (a counterfeit loses its RAM cache as a real one would).
			if v, err := strconv.ParseUint(readTrim(filepath.Join(r.Source, "preferred_erase_size")), 10, 64); err == nil {
				t.EraseSize = v
			}
			reset := filepath.Join(filepath.Dir(r.Source), "reset")
			if _, err := os.Stat(reset); err == nil {
				t.Reset = func() error { return os.WriteFile(reset, []byte("1\n"), 0) }
				t.ResetHow = "the simulated card's reset file (" + reset + "): its power is cycled"
			}
		}
	}
	return t, nil
}

func readTrim(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

// byIDLinks lists the /dev/disk/by-id names that point at dev.
func byIDLinks(dev string) []string {
	ents, _ := os.ReadDir("/dev/disk/by-id")
	var out []string
	for _, e := range ents {
		p := filepath.Join("/dev/disk/by-id", e.Name())
		if r, err := filepath.EvalSymlinks(p); err == nil && r == dev {
			out = append(out, p)
		}
	}
	return out
}

// alignedBuf returns n bytes aligned to 4096 in memory, as O_DIRECT needs.
func alignedBuf(n int) []byte {
	b := make([]byte, n+4096)
	off := 4096 - int(uintptrOf(b)&4095)
	if off == 4096 {
		off = 0
	}
	return b[off : off+n : off+n]
}
