package cardid

import "encoding/binary"

// The encoders build registers from fields, for the simulated card (internal/simcard serves
// them as a real card's driver would show them) and for tests. They write what the parsers
// read; the parsers' fixtures are built by hand from the specifications, not with these.

// SDCIDFields are the fields of an SD CID.
type SDCIDFields struct {
	MID         uint8
	OID         string // 2 characters
	PNM         string // 5 characters
	PRVMajor    uint8
	PRVMinor    uint8
	PSN         uint32
	Year, Month int // 2000-2255, 1-12
}

// EncodeSDCID builds an SD CID with its CRC7 (layout: ParseSDCID).
func EncodeSDCID(f SDCIDFields) Register {
	var r Register
	r[0] = f.MID
	copy(r[1:3], pad(f.OID, 2))
	copy(r[3:8], pad(f.PNM, 5))
	r[8] = f.PRVMajor<<4 | f.PRVMinor&0xf
	binary.BigEndian.PutUint32(r[9:13], f.PSN)
	r.setBits(19, 12, uint64(f.Year-2000))
	r.setBits(11, 8, uint64(f.Month))
	return r.withCRC()
}

// EncodeSDCSD builds a version 2.0 (SDHC/SDXC) CSD announcing capacity bytes, rounded down
// to 512 KiB (layout: ParseSDCSD), with the values a common SDHC card reports elsewhere.
func EncodeSDCSD(capacity uint64) Register {
	var r Register
	r.setBits(127, 126, 1)                  // CSD_STRUCTURE 2.0
	r.setBits(119, 112, 0x0e)               // TAAC: 1 ms
	r.setBits(103, 96, 0x32)                // TRAN_SPEED: 25 MHz
	r.setBits(95, 84, 0x5b5)                // CCC: classes 0, 2, 4, 5, 7, 8, 10
	r.setBits(83, 80, 9)                    // READ_BL_LEN: 512
	r.setBits(69, 48, capacity/(512<<10)-1) // C_SIZE
	r.setBits(46, 46, 1)                    // ERASE_BLK_EN
	r.setBits(45, 39, 0x7f)                 // SECTOR_SIZE: 64 KiB
	r.setBits(28, 26, 2)                    // R2W_FACTOR
	r.setBits(25, 22, 9)                    // WRITE_BL_LEN: 512
	return r.withCRC()
}

// MMCCIDFields are the fields of an eMMC CID.
type MMCCIDFields struct {
	MID      uint8
	CBX      uint8 // 1: BGA (discrete embedded)
	OID      uint8
	PNM      string // 6 characters
	PRVMajor uint8
	PRVMinor uint8
	PSN      uint32
	Month    int
	YearCode int // 0-15: 2013 + code on an EXT_CSD_REV > 4 device
}

// EncodeMMCCID builds an eMMC CID with its CRC7 (layout: ParseMMCCID).
func EncodeMMCCID(f MMCCIDFields) Register {
	var r Register
	r[0] = f.MID
	r.setBits(113, 112, uint64(f.CBX))
	r[2] = f.OID
	copy(r[3:9], pad(f.PNM, 6))
	r[9] = f.PRVMajor<<4 | f.PRVMinor&0xf
	binary.BigEndian.PutUint32(r[10:14], f.PSN)
	r.setBits(15, 12, uint64(f.Month))
	r.setBits(11, 8, uint64(f.YearCode))
	return r.withCRC()
}

// EncodeMMCCSD builds the CSD of an eMMC above 2 GB: C_SIZE 0xFFF, the capacity being EXT_CSD
// SEC_COUNT (layout: ParseMMCCSD).
func EncodeMMCCSD() Register {
	var r Register
	r.setBits(127, 126, 3) // CSD_STRUCTURE: version coded in EXT_CSD
	r.setBits(125, 122, 4) // SPEC_VERS 4.1 and above
	r.setBits(95, 84, 0x8f5)
	r.setBits(83, 80, 9)
	r.setBits(73, 62, 0xfff)
	r.setBits(49, 47, 7)
	r.setBits(25, 22, 9)
	return r.withCRC()
}

// ExtCSDFields are the EXT_CSD fields the simulated eMMC reports.
type ExtCSDFields struct {
	Rev                       int
	Sectors                   uint32
	CacheKiB                  uint32
	LifeTimeA, LifeTimeB, EOL int
}

// EncodeExtCSD builds a 512-byte EXT_CSD (layout: ParseExtCSD).
func EncodeExtCSD(f ExtCSDFields) []byte {
	b := make([]byte, ExtCSDSize)
	b[extCSDRev] = byte(f.Rev)
	binary.LittleEndian.PutUint32(b[extCSDSecCount:], f.Sectors)
	binary.LittleEndian.PutUint32(b[extCSDCacheSize:], f.CacheKiB)
	b[extCSDPreEOL] = byte(f.EOL)
	b[extCSDLifeTimeA] = byte(f.LifeTimeA)
	b[extCSDLifeTimeB] = byte(f.LifeTimeB)
	return b
}

// EncodeTranscendSMART builds a SMART block in Transcend's layout (ParseTranscendSMART).
func EncodeTranscendSMART(s TranscendSMART) []byte {
	b := make([]byte, smartSize)
	copy(b[tsMarker:], "Transcend")
	put := func(off, n int, v uint64) {
		for i := n - 1; i >= 0; i-- {
			b[off+i] = byte(v)
			v >>= 8
		}
	}
	put(tsBadBlocks, 1, s.BadBlocks)
	put(tsSpareBlocks, 2, s.SpareBlocks)
	put(tsMinErase, 4, s.MinErase)
	put(tsMaxErase, 4, s.MaxErase)
	put(tsTotalErase, 4, s.TotalErase)
	put(tsAvgErase, 4, s.AvgErase)
	put(tsPECycles, 2, s.RatedPECycles/100)
	put(tsCardLife, 1, s.CardLife)
	put(tsPowerCycles, 4, s.PowerCycles)
	copy(b[tsController:tsController+8], s.Controller)
	copy(b[tsFirmware:tsFirmware+6], s.Firmware)
	put(tsAbnormalPower, 4, s.AbnormalPower)
	return b
}

// pad fits s to n bytes: cut, or filled with spaces.
func pad(s string, n int) []byte {
	b := []byte(s)
	for len(b) < n {
		b = append(b, ' ')
	}
	return b[:n]
}
