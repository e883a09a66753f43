package blockdev

import (
	"encoding/binary"
	"fmt"
	"os"
)

// mbrAlign is where partitions start and end: 1 MiB, as fdisk and sfdisk place them, a
// multiple of every card's page and of most allocation units' fraction that matters here.
const mbrAlign = 1 << 20

// WriteMBR writes an MBR (DOS) partition table with n (1 to 4) Linux partitions of equal size
// into the first sector of the image file path, each starting and ending on a MiB: what a card
// split with fdisk looks like, so that a kernel that scans partitions shows /dev/mmcblk0p1..n.
// It returns the partitions' offsets and sizes in bytes.
func WriteMBR(path string, n int) (starts, sizes []uint64, err error) {
	if n < 1 || n > 4 {
		return nil, nil, fmt.Errorf("an MBR holds 1 to 4 primary partitions, not %d", n)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("partition table: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("partition table: %w", err)
	}
	total := uint64(fi.Size())
	each := (total - mbrAlign) / uint64(n) / mbrAlign * mbrAlign
	if each == 0 {
		return nil, nil, fmt.Errorf("partition table: %s (%d bytes) is too small for %d partitions of at least 1 MiB", path, total, n)
	}
	var sector [512]byte
	binary.LittleEndian.PutUint32(sector[440:], 0x66736263) // disk signature "fsbc"
	for i := range n {
		start := mbrAlign + uint64(i)*each
		e := sector[446+16*i:]
		// CHS fields hold the "use LBA" marker: no card is addressed by cylinders any more.
		copy(e[1:4], []byte{0xfe, 0xff, 0xff})
		e[4] = 0x83 // Linux
		copy(e[5:8], []byte{0xfe, 0xff, 0xff})
		binary.LittleEndian.PutUint32(e[8:], uint32(start/512))
		binary.LittleEndian.PutUint32(e[12:], uint32(each/512))
		starts, sizes = append(starts, start), append(sizes, each)
	}
	sector[510], sector[511] = 0x55, 0xaa
	if _, err := f.WriteAt(sector[:], 0); err != nil {
		return nil, nil, fmt.Errorf("partition table: %w", err)
	}
	if err := f.Sync(); err != nil {
		return nil, nil, fmt.Errorf("partition table: %w", err)
	}
	return starts, sizes, nil
}
