package cardid

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmcIocCmd is struct mmc_ioc_cmd (include/uapi/linux/mmc/ioctl.h): 72 bytes on every
// architecture, the explicit pad putting data_ptr at offset 64.
type mmcIocCmd struct {
	WriteFlag      int32
	IsACmd         int32
	Opcode         uint32
	Arg            uint32
	Response       [4]uint32
	Flags          uint32
	BlkSz          uint32
	Blocks         uint32
	PostsleepMinUs uint32
	PostsleepMaxUs uint32
	DataTimeoutNs  uint32
	CmdTimeoutMs   uint32
	Pad            uint32
	DataPtr        uint64
}

const (
	// mmcIocCmdReq is MMC_IOC_CMD = _IOWR(MMC_BLOCK_MAJOR 179, 0, struct mmc_ioc_cmd).
	mmcIocCmdReq = 0xC048B300
	// Response and command flags (include/linux/mmc/core.h): an R1 response to an addressed
	// data-transfer command, as mmc-utils sends CMD8 and vendors' tools CMD56.
	mmcRspPresent = 1 << 0
	mmcRspCRC     = 1 << 2
	mmcRspOpcode  = 1 << 4
	mmcCmdADTC    = 1 << 5
	mmcRspSPIS1   = 1 << 7
	mmcReadFlags  = mmcRspSPIS1 | mmcRspPresent | mmcRspCRC | mmcRspOpcode | mmcCmdADTC

	mmcSendExtCSD = 8  // CMD8 on an eMMC: SEND_EXT_CSD (JESD84-B51 §6.10.4)
	mmcGenCmd     = 56 // CMD56: GEN_CMD, bit 0 of the argument 1 = read (SD 9.00 §4.3.12)
)

func init() {
	if unsafe.Sizeof(mmcIocCmd{}) != 72 || unsafe.Sizeof(nvmeAdminCmd{}) != 72 {
		panic("cardid: ioctl structures do not match the kernel's 72 bytes")
	}
}

// mmcRead sends one single-block read command (CMD8 or CMD56) to an MMC block device through
// the kernel's MMC_IOC_CMD, which the mmc block driver passes to the card as it is.
func mmcRead(dev string, opcode, arg uint32) ([]byte, error) {
	f, err := os.Open(dev)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 512)
	cmd := mmcIocCmd{Opcode: opcode, Arg: arg, Flags: mmcReadFlags, BlkSz: 512, Blocks: 1,
		DataPtr: uint64(uintptr(unsafe.Pointer(&buf[0])))}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), mmcIocCmdReq, uintptr(unsafe.Pointer(&cmd)))
	runtime.KeepAlive(buf)
	if errno != 0 {
		return nil, fmt.Errorf("MMC_IOC_CMD CMD%d arg 0x%08x on %s: %w", opcode, arg, dev, errno)
	}
	return buf, nil
}

// nvmeAdminCmd is struct nvme_admin_cmd (include/uapi/linux/nvme_ioctl.h), 72 bytes.
type nvmeAdminCmd struct {
	Opcode      uint8
	Flags       uint8
	Rsvd1       uint16
	NSID        uint32
	CDW2, CDW3  uint32
	Metadata    uint64
	Addr        uint64
	MetadataLen uint32
	DataLen     uint32
	CDW10       uint32
	CDW11       uint32
	CDW12       uint32
	CDW13       uint32
	CDW14       uint32
	CDW15       uint32
	TimeoutMs   uint32
	Result      uint32
}

const (
	// nvmeIoctlAdminCmd is NVME_IOCTL_ADMIN_CMD = _IOWR('N', 0x41, struct nvme_admin_cmd).
	nvmeIoctlAdminCmd = 0xC0484E41
	nvmeGetLogPage    = 0x02 // admin opcode (NVMe Base 2.0 §5.16)
)

// nvmeLog reads a 512-byte log page for all namespaces (NSID FFFFFFFFh): CDW10 holds the log
// identifier in bits 7:0 and the number of dwords minus one in bits 27:16.
func nvmeLog(dev string, lid uint8) ([]byte, error) {
	f, err := os.Open(dev)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, nvmeLogSize)
	cmd := nvmeAdminCmd{Opcode: nvmeGetLogPage, NSID: 0xffffffff, Addr: uint64(uintptr(unsafe.Pointer(&buf[0]))),
		DataLen: nvmeLogSize, CDW10: uint32(lid) | (nvmeLogSize/4-1)<<16}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), nvmeIoctlAdminCmd, uintptr(unsafe.Pointer(&cmd)))
	runtime.KeepAlive(buf)
	if errno != 0 {
		return nil, fmt.Errorf("NVMe Get Log Page %02xh on %s: %w", lid, dev, errno)
	}
	return buf, nil
}
