package cardid

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Card kinds (CID.Kind), as the kernel's type attribute names them.
const (
	KindSD  = "SD"
	KindMMC = "MMC"
)

// CID is a card's identification register, decoded. The serial number is never kept: only
// SerialHash, so that results can say "the same card" without publishing which card.
type CID struct {
	Kind string `json:"kind"` // KindSD or KindMMC
	// ManufacturerID is MID, assigned by the SD Card Association or JEDEC. 0x00 is not
	// assigned: counterfeit cards often carry it.
	ManufacturerID uint8  `json:"manfid"`
	OEMID          string `json:"oemid"` // SD: two ASCII characters; eMMC: one byte, in hex
	ProductName    string `json:"name"`
	Revision       string `json:"revision"` // PRV as "major.minor"
	// SerialHash stands for the serial number (PSN): the first 16 hex digits of a SHA-256
	// over MID, OID, PNM and PSN. It tells cards apart; it does not hide a serial number from
	// someone who already knows the other fields and tries all 2^32 serials.
	SerialHash string `json:"serial_hash"`
	Year       int    `json:"year,omitempty"`
	Month      int    `json:"month,omitempty"`
	// CRC says whether the register's CRC7 matched: "ok", "bad" or "" when the host
	// controller did not pass it on (most strip it).
	CRC string `json:"crc,omitempty"`
}

// ParseSDCID decodes an SD card's CID (SD Physical Layer Simplified Specification 9.00,
// §5.2 "CID register", Table 5-2):
//
//	MID [127:120]  OID [119:104]  PNM [103:64]  PRV [63:56]  PSN [55:24]
//	reserved [23:20]  MDT [19:8] (year [19:12] + 2000, month [11:8])  CRC7 [7:1]
func ParseSDCID(r Register) CID {
	c := CID{Kind: KindSD, ManufacturerID: uint8(r.Bits(127, 120))}
	c.OEMID = printable(r[1:3])
	c.ProductName = printable(r[3:8])
	c.Revision = fmt.Sprintf("%d.%d", r.Bits(63, 60), r.Bits(59, 56))
	c.SerialHash = serialHash(r[0:8], uint32(r.Bits(55, 24)))
	c.Year = 2000 + int(r.Bits(19, 12))
	c.Month = int(r.Bits(11, 8))
	c.CRC = crcText(r)
	return c
}

// ParseMMCCID decodes an eMMC's CID (JEDEC JESD84-B51, §7.2 "CID register", Table 75):
//
//	MID [127:120]  reserved [119:114]  CBX [113:112]  OID [111:104]  PNM [103:56]
//	PRV [55:48]  PSN [47:16]  MDT [15:8] (month [15:12], year [11:8])  CRC7 [7:1]
//
// The year counts from 1997, or from 2013 when the device's EXT_CSD_REV is above 4 and the
// year field is 12 or less (§7.2.8, Table 78): extCSDRev < 0 means unknown (1997 is used).
func ParseMMCCID(r Register, extCSDRev int) CID {
	c := CID{Kind: KindMMC, ManufacturerID: uint8(r.Bits(127, 120))}
	c.OEMID = fmt.Sprintf("0x%02x", r.Bits(111, 104))
	c.ProductName = printable(r[3:9])
	c.Revision = fmt.Sprintf("%d.%d", r.Bits(55, 52), r.Bits(51, 48))
	c.SerialHash = serialHash(r[0:9], uint32(r.Bits(47, 16)))
	c.Month = int(r.Bits(15, 12))
	y := int(r.Bits(11, 8))
	c.Year = 1997 + y
	if extCSDRev > 4 && y <= 12 {
		c.Year = 2013 + y
	}
	c.CRC = crcText(r)
	return c
}

func crcText(r Register) string {
	ok, present := r.crcOK()
	switch {
	case !present:
		return ""
	case ok:
		return "ok"
	}
	return "bad"
}

// serialHash hashes the identity bytes before the serial (MID, OID, PNM) with the serial.
func serialHash(head []byte, psn uint32) string {
	h := sha256.New()
	h.Write([]byte("fsbench card serial\x00"))
	h.Write(head)
	h.Write([]byte{byte(psn >> 24), byte(psn >> 16), byte(psn >> 8), byte(psn)})
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// HashSerial hashes a serial number the kernel prints on its own (the sysfs serial attribute
// of a card, a USB device or an NVMe controller), with what identifies its maker, the same
// way: results keep the hash, never the serial.
func HashSerial(maker, serial string) string {
	h := sha256.New()
	h.Write([]byte("fsbench serial\x00" + maker + "\x00" + serial))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Fingerprint is what tells this card from another: maker, product and hashed serial.
func (c CID) Fingerprint() string {
	return fmt.Sprintf("%s mid 0x%02x oid %s %q rev %s serial %s", c.Kind, c.ManufacturerID, c.OEMID, c.ProductName, c.Revision, c.SerialHash)
}
