package blockdev

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf16"

	"golang.org/x/sys/unix"
)

// FSID is the UUID and label a filesystem (or swap area) carries in its superblock: what udev
// files under /dev/disk/by-uuid and /dev/disk/by-label, and what systemd's and mount(8)'s UUID=
// and LABEL= find.
type FSID struct {
	Device string // /dev/NAME
	Type   string // ext4, xfs, btrfs, f2fs, nilfs2, vfat, erofs, swap
	UUID   string // as blkid prints it: canonical with dashes, or vfat's XXXX-XXXX
	Label  string
}

// superblock is where one kind of superblock keeps its magic, UUID and label.
type superblock struct {
	typ           string
	off           int64 // of the superblock on the device
	magicAt       int
	magic         []byte
	uuidAt, uuidN int
	labelAt       int
	labelN        int
	utf16Label    bool
}

// superblocks are the layouts fsbench reads (the kernel's and the tools' on-disk structures:
// ext4 struct ext4_super_block, xfs xfs_dsb, btrfs btrfs_super_block, f2fs f2fs_super_block,
// nilfs2 nilfs_super_block, erofs erofs_super_block, swap union swap_header), enough to tell
// which UUID and label a device carries. vfat is read apart (fatID).
var superblocks = []superblock{
	{typ: "ext4", off: 1024, magicAt: 0x38, magic: []byte{0x53, 0xef}, uuidAt: 0x68, uuidN: 16, labelAt: 0x78, labelN: 16},
	{typ: "xfs", off: 0, magicAt: 0, magic: []byte("XFSB"), uuidAt: 32, uuidN: 16, labelAt: 108, labelN: 12},
	{typ: "btrfs", off: 64 << 10, magicAt: 0x40, magic: []byte("_BHRfS_M"), uuidAt: 0x20, uuidN: 16, labelAt: 0x12b, labelN: 256},
	{typ: "f2fs", off: 1024, magicAt: 0, magic: []byte{0x10, 0x20, 0xf5, 0xf2}, uuidAt: 108, uuidN: 16, labelAt: 124, labelN: 512 * 2, utf16Label: true},
	{typ: "nilfs2", off: 1024, magicAt: 6, magic: []byte{0x34, 0x34}, uuidAt: 152, uuidN: 16, labelAt: 168, labelN: 80},
	{typ: "erofs", off: 1024, magicAt: 0, magic: []byte{0xe2, 0xe1, 0xf5, 0xe0}, uuidAt: 48, uuidN: 16, labelAt: 64, labelN: 16},
	{typ: "swap", off: 0, magicAt: 4086, magic: []byte("SWAPSPACE2"), uuidAt: 1024 + 12, uuidN: 16, labelAt: 1024 + 28, labelN: 16},
}

// ReadFSID reads the UUID and label of the filesystem on r (a device or an image), or says that
// it knows none there (ok false).
func ReadFSID(r io.ReaderAt) (id FSID, ok bool) {
	for _, sb := range superblocks {
		need := max(sb.magicAt+len(sb.magic), sb.uuidAt+sb.uuidN, sb.labelAt+sb.labelN)
		buf := make([]byte, need)
		if n, _ := r.ReadAt(buf, sb.off); n < need || !bytes.Equal(buf[sb.magicAt:sb.magicAt+len(sb.magic)], sb.magic) {
			continue
		}
		id = FSID{Type: sb.typ, UUID: canonicalUUID(buf[sb.uuidAt : sb.uuidAt+sb.uuidN])}
		label := buf[sb.labelAt : sb.labelAt+sb.labelN]
		if sb.utf16Label {
			u := make([]uint16, len(label)/2)
			for i := range u {
				u[i] = binary.LittleEndian.Uint16(label[2*i:])
			}
			id.Label = strings.TrimRight(string(utf16.Decode(u)), "\x00")
		} else {
			id.Label = string(bytes.TrimRight(label, "\x00"))
		}
		if i := strings.IndexByte(id.Label, 0); i >= 0 {
			id.Label = id.Label[:i]
		}
		return id, true
	}
	return fatID(r)
}

// fatID reads a FAT boot sector: the volume id (blkid shows it as XXXX-XXXX) and label, at 0x27
// and 0x2b on FAT12/16, at 0x43 and 0x47 on FAT32.
func fatID(r io.ReaderAt) (FSID, bool) {
	bs := make([]byte, 512)
	if n, _ := r.ReadAt(bs, 0); n < 512 || bs[510] != 0x55 || bs[511] != 0xaa {
		return FSID{}, false
	}
	idAt, labelAt := 0, 0
	switch {
	case string(bs[0x52:0x57]) == "FAT32":
		idAt, labelAt = 0x43, 0x47
	case string(bs[0x36:0x39]) == "FAT":
		idAt, labelAt = 0x27, 0x2b
	default:
		return FSID{}, false
	}
	id := FSID{Type: "vfat", UUID: fmt.Sprintf("%02X%02X-%02X%02X", bs[idAt+3], bs[idAt+2], bs[idAt+1], bs[idAt])}
	if l := strings.TrimRight(string(bs[labelAt:labelAt+11]), " \x00"); l != "NO NAME" {
		id.Label = l
	}
	return id, true
}

// canonicalUUID is b as 8-4-4-4-12 hex digits; "" when all zero (no UUID).
func canonicalUUID(b []byte) string {
	if bytes.Count(b, []byte{0}) == len(b) {
		return ""
	}
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// SameUUID compares two UUIDs as blkid's users do: case and dashes aside.
func SameUUID(a, b string) bool {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "")) }
	return a != "" && norm(a) == norm(b)
}

// MachineFSIDs reads the UUID and label of every block device of this machine (sysfs is "/sys"),
// from their superblocks, and adds what udev filed under /dev/disk/by-uuid and by-label (a
// device fsbench cannot read still shows there). Devices whose number is in skip (the device
// under test and its partitions) are left out; one that cannot be opened (no medium, an unbound
// loop device) carries nothing, and one that does not answer within wait (a loop device over a
// stalled FUSE file) is named in slow.
func MachineFSIDs(sysfs string, skip map[string]bool, wait time.Duration) (ids []FSID, slow []string, err error) {
	ents, err := os.ReadDir(filepath.Join(sysfs, "class", "block"))
	if err != nil {
		return nil, nil, fmt.Errorf("listing the block devices: %w", err)
	}
	type answer struct {
		dev string
		id  FSID
		ok  bool
	}
	answers := make(chan answer, len(ents))
	var asked []string
	for _, e := range ents {
		num, err := readAttr(filepath.Join(sysfs, "class", "block", e.Name(), "dev"))
		if err != nil || skip[strings.TrimSpace(num)] {
			continue
		}
		if sz, err := readAttr(filepath.Join(sysfs, "class", "block", e.Name(), "size")); err != nil || strings.TrimSpace(sz) == "0" {
			continue
		}
		dev := "/dev/" + e.Name()
		asked = append(asked, dev)
		go func() {
			f, err := os.OpenFile(dev, os.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
			if err != nil {
				answers <- answer{dev: dev}
				return
			}
			defer f.Close()
			id, ok := ReadFSID(f)
			id.Device = dev
			answers <- answer{dev, id, ok}
		}()
	}
	deadline := time.After(wait)
	got := map[string]bool{}
	for len(got) < len(asked) {
		select {
		case a := <-answers:
			got[a.dev] = true
			if a.ok {
				ids = append(ids, a.id)
			}
		case <-deadline:
			for _, d := range asked {
				if !got[d] {
					slow = append(slow, d)
				}
			}
			got = map[string]bool{}
			asked = nil
		}
	}
	out := ids
	for _, by := range []string{"by-uuid", "by-label"} {
		links, _ := os.ReadDir(filepath.Join("/dev/disk", by))
		for _, l := range links {
			p := filepath.Join("/dev/disk", by, l.Name())
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue
			}
			var st unix.Stat_t
			if unix.Stat(real, &st) != nil || skip[fmt.Sprintf("%d:%d", unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)))] {
				continue
			}
			id := FSID{Device: real, Type: "udev " + by}
			name := unescapeUdev(l.Name())
			if by == "by-uuid" {
				id.UUID = name
			} else {
				id.Label = name
			}
			out = append(out, id)
		}
	}
	return out, slow, nil
}

// unescapeUdev undoes udev's \x2f-style escapes in a /dev/disk/by-* name.
func unescapeUdev(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			if v, err := hex.DecodeString(s[i+2 : i+4]); err == nil {
				b.Write(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
