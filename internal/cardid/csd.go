package cardid

import "fmt"

// CSD is a card's specific-data register, decoded: what the card announces about itself,
// above all its capacity, the figure a counterfeit card lies about.
type CSD struct {
	Kind string `json:"kind"` // KindSD or KindMMC
	// Structure is CSD_STRUCTURE: SD 0 = version 1.0 (SDSC), 1 = 2.0 (SDHC/SDXC), 2 = 3.0
	// (SDUC); eMMC 0-3 as JESD84 numbers them.
	Structure int `json:"structure"`
	// CapacityBytes is the user capacity the register announces (0 on an eMMC above 2 GB,
	// whose capacity is EXT_CSD SEC_COUNT).
	CapacityBytes uint64 `json:"capacity_bytes"`
	ReadBlockLen  uint32 `json:"read_block_len"`  // 2^READ_BL_LEN bytes
	WriteBlockLen uint32 `json:"write_block_len"` // 2^WRITE_BL_LEN bytes
	// CCC is the card command classes bit field (class 5 = erase, 10 = switch, ...).
	CCC uint16 `json:"ccc"`
	// EraseSectorBytes is SD's SECTOR_SIZE (+1, in write blocks) in bytes: the unit an erase
	// may be rounded to when ERASE_BLK_EN is 0.
	EraseSectorBytes uint32 `json:"erase_sector_bytes,omitempty"`
	PermWriteProtect bool   `json:"perm_write_protect,omitempty"`
	TmpWriteProtect  bool   `json:"tmp_write_protect,omitempty"`
	CRC              string `json:"crc,omitempty"`
}

// ParseSDCSD decodes an SD card's CSD (SD Physical Layer Simplified Specification 9.00, §5.3):
//
//	CSD_STRUCTURE [127:126]; CCC [95:84]; READ_BL_LEN [83:80]; WRITE_BL_LEN [25:22];
//	PERM_WRITE_PROTECT [13]; TMP_WRITE_PROTECT [12]; CRC7 [7:1]
//	version 1.0 (§5.3.2): C_SIZE [73:62], C_SIZE_MULT [49:47], SECTOR_SIZE [45:39];
//	  capacity = (C_SIZE+1) × 2^(C_SIZE_MULT+2) × 2^READ_BL_LEN
//	version 2.0 (§5.3.3): C_SIZE [69:48]; capacity = (C_SIZE+1) × 512 KiB
//	version 3.0 (§5.3.4): C_SIZE [75:48]; capacity = (C_SIZE+1) × 512 KiB
func ParseSDCSD(r Register) (CSD, error) {
	c := csdCommon(KindSD, r)
	switch c.Structure {
	case 0:
		cs, mult := r.Bits(73, 62), r.Bits(49, 47)
		c.CapacityBytes = (cs + 1) << (mult + 2) * uint64(c.ReadBlockLen)
		c.EraseSectorBytes = uint32(r.Bits(45, 39)+1) * c.WriteBlockLen
	case 1:
		c.CapacityBytes = (r.Bits(69, 48) + 1) * 512 << 10
	case 2:
		c.CapacityBytes = (r.Bits(75, 48) + 1) * 512 << 10
	default:
		return c, fmt.Errorf("SD CSD structure %d is reserved (register %s)", c.Structure, r)
	}
	return c, nil
}

// ParseMMCCSD decodes an eMMC's CSD (JEDEC JESD84-B51, §7.3 "CSD register", Table 79):
// the same C_SIZE [73:62], C_SIZE_MULT [49:47] and READ_BL_LEN [83:80] as an SD 1.0 card. A
// device above 2 GB sets C_SIZE to 0xFFF and gives its capacity in EXT_CSD SEC_COUNT
// (§7.3.12), which CapacityBytes then leaves at 0.
func ParseMMCCSD(r Register) CSD {
	c := csdCommon(KindMMC, r)
	if cs := r.Bits(73, 62); cs != 0xfff {
		c.CapacityBytes = (cs + 1) << (r.Bits(49, 47) + 2) * uint64(c.ReadBlockLen)
	}
	return c
}

// csdCommon decodes the fields SD and eMMC CSDs share, at the same bits.
func csdCommon(kind string, r Register) CSD {
	c := CSD{Kind: kind, Structure: int(r.Bits(127, 126))}
	c.CCC = uint16(r.Bits(95, 84))
	c.ReadBlockLen = 1 << r.Bits(83, 80)
	c.WriteBlockLen = 1 << r.Bits(25, 22)
	c.PermWriteProtect = r.Bits(13, 13) == 1
	c.TmpWriteProtect = r.Bits(12, 12) == 1
	c.CRC = crcText(r)
	return c
}
