package confine

import (
	"slices"
	"unsafe"
)

// The ioctl requests a confined program may make (any other answers EPERM), encoded as the
// kernel's asm-generic ioctl.h does on every architecture fsbench confines on (amd64, arm, arm64):
// direction in bits 30-31, argument size in bits 16-29, type in bits 8-15, number in bits 0-7.
// Sizes follow the C structures; those holding a long, a size_t or a pointer differ between 32-
// and 64-bit machines (TestIoctlNumbers compares them with the C headers' values on amd64).
const (
	iocNone  = 0
	iocWrite = 1
	iocRead  = 2
)

func ioc(dir, typ, nr, size uintptr) uint32 {
	return uint32(dir<<30 | size<<16 | typ<<8 | nr)
}

// long is the size of a C long, size_t and pointer here.
const long = unsafe.Sizeof(uintptr(0))

// ioctlGroup is a set of requests with why a confined program may make them.
type ioctlGroup struct {
	why  string
	reqs []uint32
}

// ioctlGroups are the requests of allowedIoctls, grouped by why they are allowed.
func ioctlGroups() []ioctlGroup {
	const blk, mtd, ubi, ubiVol, nilfs = 0x12, 'M', 'o', 'O', 'n'
	return []ioctlGroup{
		{"the block device's size and geometry (every mkfs and fsck asks), on the one block device in the jail; libblkid's floppy queries (FDGETPRM, FDGETFDCSTAT) are refused, which it takes for \"not a floppy\"", []uint32{
			ioc(iocNone, blk, 96, 0),            // BLKGETSIZE
			ioc(iocRead, blk, 114, long),        // BLKGETSIZE64
			ioc(iocNone, blk, 104, 0),           // BLKSSZGET
			ioc(iocNone, blk, 123, 0),           // BLKPBSZGET
			ioc(iocRead, blk, 112, long),        // BLKBSZGET
			ioc(iocNone, blk, 120, 0),           // BLKIOMIN
			ioc(iocNone, blk, 121, 0),           // BLKIOOPT
			ioc(iocNone, blk, 122, 0),           // BLKALIGNOFF
			ioc(iocNone, blk, 94, 0),            // BLKROGET
			ioc(iocNone, blk, 99, 0),            // BLKRAGET
			ioc(iocNone, blk, 101, 0),           // BLKFRAGET
			ioc(iocNone, blk, 103, 0),           // BLKSECTGET
			ioc(iocNone, blk, 124, 0),           // BLKDISCARDZEROES
			ioc(iocNone, blk, 126, 0),           // BLKROTATIONAL
			ioc(iocRead, blk, 128, 8),           // BLKGETDISKSEQ
			ioc(iocRead, blk, 132, 4),           // BLKGETZONESZ
			ioc(iocRead, blk, 133, 4),           // BLKGETNRZONES
			ioc(iocRead|iocWrite, blk, 130, 16), // BLKREPORTZONE
			0x0301,                              // HDIO_GETGEO
			0x5331, 0x5395,                      // CDROM_GET_CAPABILITY, CDROM_LAST_WRITTEN (libblkid asks whether the device is a CD)
			0x4c03, 0x4c05, // LOOP_GET_STATUS, LOOP_GET_STATUS64
		}},
		{"what a mkfs writes to the device under test: discards, zeroes, zone resets (f2fs on a zoned device)", []uint32{
			ioc(iocNone, blk, 119, 0),   // BLKDISCARD
			ioc(iocNone, blk, 125, 0),   // BLKSECDISCARD
			ioc(iocNone, blk, 127, 0),   // BLKZEROOUT
			ioc(iocWrite, blk, 131, 16), // BLKRESETZONE
			ioc(iocWrite, blk, 134, 16), // BLKOPENZONE
			ioc(iocWrite, blk, 135, 16), // BLKCLOSEZONE
			ioc(iocWrite, blk, 136, 16), // BLKFINISHZONE
		}},
		{"the two requests mkfs.xfs and xfs_repair keep CAP_SYS_ADMIN for (Spec.SysAdmin): the device's block size and flushing its buffers", []uint32{
			ioc(iocWrite, blk, 113, long), // BLKBSZSET
			ioc(iocNone, blk, 97, 0),      // BLKFLSBUF
		}},
		{"queries on a file or a terminal (libc's isatty, progress bars, an image builder reading its source)", []uint32{
			0x5401, 0x5413, 0x540f, // TCGETS, TIOCGWINSZ, TIOCGPGRP
			0x541b, 0x5421, 0x5451, 0x5450, // FIONREAD, FIONBIO, FIOCLEX, FIONCLEX
			ioc(iocNone, 0, 2, 0),              // FIGETBSZ
			ioc(iocRead, 'f', 1, long),         // FS_IOC_GETFLAGS
			ioc(iocRead, 'X', 31, 28),          // FS_IOC_FSGETXATTR
			ioc(iocRead|iocWrite, 'f', 11, 32), // FS_IOC_FIEMAP
		}},
		{"mtd-utils on the one MTD device in the jail (flash_erase, nandwrite, ubiformat)", []uint32{
			ioc(iocRead, mtd, 1, 32),              // MEMGETINFO
			ioc(iocWrite, mtd, 2, 8),              // MEMERASE
			ioc(iocRead|iocWrite, mtd, 3, 8+long), // MEMWRITEOOB
			ioc(iocRead|iocWrite, mtd, 4, 8+long), // MEMREADOOB
			ioc(iocRead, mtd, 7, 4),               // MEMGETREGIONCOUNT
			ioc(iocRead|iocWrite, mtd, 8, 16),     // MEMGETREGIONINFO
			ioc(iocRead, mtd, 10, 200),            // MEMGETOOBSEL
			ioc(iocWrite, mtd, 11, 8),             // MEMGETBADBLOCK
			ioc(iocWrite, mtd, 12, 8),             // MEMSETBADBLOCK
			ioc(iocRead, mtd, 17, 328),            // ECCGETLAYOUT
			ioc(iocRead, mtd, 18, 16),             // ECCGETSTATS
			ioc(iocNone, mtd, 19, 0),              // MTDFILEMODE
			ioc(iocWrite, mtd, 20, 16),            // MEMERASE64
			ioc(iocRead|iocWrite, mtd, 21, 24),    // MEMWRITEOOB64
			ioc(iocRead|iocWrite, mtd, 22, 24),    // MEMREADOOB64
			ioc(iocRead, mtd, 23, 8),              // MEMISLOCKED
			ioc(iocRead|iocWrite, mtd, 24, 48),    // MEMWRITE
			ioc(iocRead|iocWrite, mtd, 26, 64),    // MEMREAD
		}},
		{"mtd-utils' UBI tools on /dev/ubi_ctrl, the UBI device and its volume (ubiattach, ubidetach, ubimkvol, ubiupdatevol, ubiblock)", []uint32{
			ioc(iocWrite, ubi, 0, 152),    // UBI_IOCMKVOL
			ioc(iocWrite, ubi, 1, 4),      // UBI_IOCRMVOL
			ioc(iocWrite, ubi, 2, 12),     // UBI_IOCRSVOL
			ioc(iocWrite, ubi, 64, 24),    // UBI_IOCATT
			ioc(iocWrite, ubi, 65, 4),     // UBI_IOCDET
			ioc(iocWrite, ubiVol, 0, 8),   // UBI_IOCVOLUP
			ioc(iocWrite, ubiVol, 6, 16),  // UBI_IOCSETVOLPROP
			ioc(iocWrite, ubiVol, 7, 128), // UBI_IOCVOLCRBLK
			ioc(iocNone, ubiVol, 8, 0),    // UBI_IOCVOLRMBLK
		}},
		{"nilfs_cleanerd and nilfs-clean on the nilfs2 under test (the only nilfs2 mount in their jail)", []uint32{
			ioc(iocWrite, nilfs, 0x80, 16),         // NILFS_IOCTL_CHANGE_CPMODE
			ioc(iocRead, nilfs, 0x82, 24),          // NILFS_IOCTL_GET_CPINFO
			ioc(iocRead, nilfs, 0x83, 24),          // NILFS_IOCTL_GET_CPSTAT
			ioc(iocRead, nilfs, 0x84, 24),          // NILFS_IOCTL_GET_SUINFO
			ioc(iocRead, nilfs, 0x85, 48),          // NILFS_IOCTL_GET_SUSTAT
			ioc(iocRead|iocWrite, nilfs, 0x86, 24), // NILFS_IOCTL_GET_VINFO
			ioc(iocRead|iocWrite, nilfs, 0x87, 24), // NILFS_IOCTL_GET_BDESCS
			ioc(iocWrite, nilfs, 0x88, 5*24),       // NILFS_IOCTL_CLEAN_SEGMENTS
			ioc(iocRead, nilfs, 0x8a, 8),           // NILFS_IOCTL_SYNC
			ioc(iocWrite, nilfs, 0x8c, 16),         // NILFS_IOCTL_SET_ALLOC_RANGE
			ioc(iocWrite, nilfs, 0x8d, 24),         // NILFS_IOCTL_SET_SUINFO
		}},
	}
}

// allowedIoctls are the requests of every group, sorted.
func allowedIoctls() []uint32 {
	var out []uint32
	for _, g := range ioctlGroups() {
		out = append(out, g.reqs...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
