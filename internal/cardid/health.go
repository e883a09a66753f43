package cardid

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
)

// Health is a card's own report of its wear, by name, as one of the formats below gives it.
// Values are the format's fields as numbers (estimates in the format's own steps, counters as
// counted), so that two readings can be compared field by field (Compare).
type Health struct {
	// Format names the layout the values were decoded from.
	Format string `json:"format"`
	// Source says how it was read (an ioctl on a device, a sysfs or simulated-card file).
	Source  string            `json:"source"`
	Values  map[string]uint64 `json:"values"`
	Summary string            `json:"summary,omitempty"`
}

// Health formats (Health.Format).
const (
	FormatExtCSD    = "JEDEC JESD84-B51 EXT_CSD"
	FormatTranscend = "Transcend SMART block (CMD56, argument 0x110005F9)"
	FormatNVMe      = "NVMe SMART / Health Information log (02h)"
)

// EXT_CSD byte offsets (JEDEC JESD84-B51, §7.4 "Extended CSD register", Table 84).
const (
	ExtCSDSize          = 512
	extCSDRev           = 192 // EXT_CSD_REV
	extCSDSecCount      = 212 // SEC_COUNT, 4 bytes, little-endian, in 512-byte sectors
	extCSDCacheSize     = 249 // CACHE_SIZE, 4 bytes, little-endian, in KiB
	extCSDFirmware      = 254 // FIRMWARE_VERSION, 8 bytes
	extCSDPreEOL        = 267 // PRE_EOL_INFO
	extCSDLifeTimeA     = 268 // DEVICE_LIFE_TIME_EST_TYP_A
	extCSDLifeTimeB     = 269 // DEVICE_LIFE_TIME_EST_TYP_B
	extCSDVendorHealth  = 270 // VENDOR_PROPRIETARY_HEALTH_REPORT [301:270]
	extCSDVendorHealthN = 32
)

// ExtCSD is what fsbench keeps of an eMMC's extended CSD.
type ExtCSD struct {
	Rev int `json:"rev"` // EXT_CSD_REV: 7 for eMMC 5.0/5.01, 8 for 5.1
	// CapacityBytes is SEC_COUNT × 512.
	CapacityBytes uint64 `json:"capacity_bytes"`
	CacheBytes    uint64 `json:"cache_bytes,omitempty"`
	Firmware      string `json:"firmware,omitempty"` // FIRMWARE_VERSION, hex
	// LifeTimeA/B: DEVICE_LIFE_TIME_EST_TYP_A/B, 0x01 = 0-10 % of the rated life used ...
	// 0x0A = 90-100 %, 0x0B = beyond; 0 = not reported. PreEOL: PRE_EOL_INFO, 1 normal,
	// 2 warning (80 % of the reserved blocks consumed), 3 urgent (90 %).
	LifeTimeA int `json:"life_time_est_a"`
	LifeTimeB int `json:"life_time_est_b"`
	PreEOL    int `json:"pre_eol_info"`
	// VendorHealth is VENDOR_PROPRIETARY_HEALTH_REPORT, in hex: its format is the vendor's.
	VendorHealth string `json:"vendor_health,omitempty"`
}

// ParseExtCSD decodes the 512-byte EXT_CSD (what CMD8 SEND_EXT_CSD returns).
func ParseExtCSD(raw []byte) (ExtCSD, error) {
	if len(raw) != ExtCSDSize {
		return ExtCSD{}, fmt.Errorf("EXT_CSD of %d bytes: want %d", len(raw), ExtCSDSize)
	}
	e := ExtCSD{Rev: int(raw[extCSDRev])}
	e.CapacityBytes = uint64(binary.LittleEndian.Uint32(raw[extCSDSecCount:])) * 512
	e.CacheBytes = uint64(binary.LittleEndian.Uint32(raw[extCSDCacheSize:])) << 10
	fw := raw[extCSDFirmware : extCSDFirmware+8]
	if !allZero(fw) {
		e.Firmware = fmt.Sprintf("%x", fw)
	}
	e.PreEOL = int(raw[extCSDPreEOL])
	e.LifeTimeA = int(raw[extCSDLifeTimeA])
	e.LifeTimeB = int(raw[extCSDLifeTimeB])
	if v := raw[extCSDVendorHealth : extCSDVendorHealth+extCSDVendorHealthN]; !allZero(v) {
		e.VendorHealth = fmt.Sprintf("%x", v)
	}
	return e, nil
}

// ParseExtCSDHex reads the EXT_CSD as debugfs prints it (/sys/kernel/debug/mmcN/mmcN:RCA/
// ext_csd: 1024 hex digits, byte 0 first), which the simulated card's ext_csd file also is.
func ParseExtCSDHex(s string) (ExtCSD, error) {
	b, err := hexBytes(s, ExtCSDSize)
	if err != nil {
		return ExtCSD{}, fmt.Errorf("EXT_CSD: %w", err)
	}
	return ParseExtCSD(b)
}

// Health turns the life-time fields into a Health (life-time steps are supported from
// EXT_CSD_REV 7, eMMC 5.0; an older device leaves them 0).
func (e ExtCSD) Health(source string) *Health {
	return &Health{Format: FormatExtCSD, Source: source,
		Values:  map[string]uint64{"life_time_est_a": uint64(e.LifeTimeA), "life_time_est_b": uint64(e.LifeTimeB), "pre_eol_info": uint64(e.PreEOL)},
		Summary: fmt.Sprintf("life time used: type A %s, type B %s; reserved blocks: %s", LifeText(e.LifeTimeA), LifeText(e.LifeTimeB), EOLText(e.PreEOL))}
}

// LifeText puts a DEVICE_LIFE_TIME_EST value in words.
func LifeText(v int) string {
	switch {
	case v == 0:
		return "not reported"
	case v >= 1 && v <= 10:
		return fmt.Sprintf("%d–%d %%", (v-1)*10, v*10)
	case v == 11:
		return "beyond its rated life"
	}
	return fmt.Sprintf("reserved value 0x%02x", v)
}

// EOLText puts a PRE_EOL_INFO value in words.
func EOLText(v int) string {
	switch v {
	case 0:
		return "not reported"
	case 1:
		return "normal"
	case 2:
		return "warning (80 % consumed)"
	case 3:
		return "urgent (90 % consumed): replace the device"
	}
	return fmt.Sprintf("reserved value 0x%02x", v)
}

// The Transcend SMART block: 512 bytes returned by CMD56 (GEN_CMD, read) with argument
// 0x110005F9 by Transcend's industrial microSD/SD cards (430T, 450I, 460I, ...). Its layout
// is published by the vendor in its own tool, Transcend Information's
// RaspberryPi_NVIDIAJetson-SDcard-SMARTQuery (mmc-utils/mmc_cmds.c, parsing_SMART_info):
// multi-byte numbers big-endian.
const (
	TranscendCMD56Arg = 0x110005F9
	TranscendMID      = 0x74 // Transcend's manufacturer ID in the CID
	smartSize         = 512
	tsMarker          = 0x00 // "Transcend", 16 bytes
	tsBadBlocks       = 0x1A // new bad block count, 1 byte
	tsSpareBlocks     = 0x1E // spare blocks, 2 bytes
	tsMinErase        = 0x20 // 4 bytes each: minimum, maximum, total and average erase counts
	tsMaxErase        = 0x24
	tsTotalErase      = 0x28
	tsAvgErase        = 0x2C
	tsPECycles        = 0x44 // rated NAND P/E cycles / 100, 2 bytes
	tsCardLife        = 0x46 // card life in %, 1 byte (as the vendor's tool prints it)
	tsPowerCycles     = 0x4C // power on/off count, 4 bytes
	tsController      = 0x58 // controller part number, 8 ASCII bytes
	tsFirmware        = 0x80 // firmware version, 6 ASCII bytes
	tsAbnormalPower   = 0xA4 // abnormal power detect count, 4 bytes
)

// TranscendSMART is the decoded Transcend SMART block.
type TranscendSMART struct {
	Controller, Firmware                     string
	BadBlocks, SpareBlocks                   uint64
	MinErase, MaxErase, TotalErase, AvgErase uint64
	RatedPECycles, CardLife                  uint64
	PowerCycles, AbnormalPower               uint64
}

// ParseTranscendSMART decodes the block; it must start with the vendor's marker "Transcend".
func ParseTranscendSMART(raw []byte) (TranscendSMART, error) {
	var s TranscendSMART
	if len(raw) != smartSize {
		return s, fmt.Errorf("SMART block of %d bytes: want %d", len(raw), smartSize)
	}
	if !bytes.HasPrefix(raw[tsMarker:], []byte("Transcend")) {
		return s, fmt.Errorf("SMART block does not start with Transcend's marker (%q): not this vendor's format", printable(raw[:16]))
	}
	be := func(off, n int) uint64 {
		var v uint64
		for _, b := range raw[off : off+n] {
			v = v<<8 | uint64(b)
		}
		return v
	}
	s.Controller = printable(raw[tsController : tsController+8])
	s.Firmware = printable(raw[tsFirmware : tsFirmware+6])
	s.BadBlocks, s.SpareBlocks = be(tsBadBlocks, 1), be(tsSpareBlocks, 2)
	s.MinErase, s.MaxErase, s.TotalErase, s.AvgErase = be(tsMinErase, 4), be(tsMaxErase, 4), be(tsTotalErase, 4), be(tsAvgErase, 4)
	s.RatedPECycles, s.CardLife = be(tsPECycles, 2)*100, be(tsCardLife, 1)
	s.PowerCycles, s.AbnormalPower = be(tsPowerCycles, 4), be(tsAbnormalPower, 4)
	return s, nil
}

// Health turns the block into a Health.
func (s TranscendSMART) Health(source string) *Health {
	return &Health{Format: FormatTranscend, Source: source, Values: map[string]uint64{
		"erase_count_total": s.TotalErase, "erase_count_avg": s.AvgErase, "erase_count_max": s.MaxErase,
		"erase_count_min": s.MinErase, "rated_pe_cycles": s.RatedPECycles, "card_life_percent": s.CardLife,
		"bad_blocks_new": s.BadBlocks, "spare_blocks": s.SpareBlocks, "power_cycles": s.PowerCycles,
		"abnormal_power": s.AbnormalPower},
		Summary: fmt.Sprintf("erases: %d in total, %d on average per block (max %d) of %d rated; card life %d %% (controller %s, firmware %s)",
			s.TotalErase, s.AvgErase, s.MaxErase, s.RatedPECycles, s.CardLife, orDash(s.Controller), orDash(s.Firmware))}
}

// NVMe SMART / Health Information log, log identifier 02h, 512 bytes (NVM Express Base
// Specification 2.0, §5.16.1.3 "SMART / Health Information (Log Page Identifier 02h)"):
// little-endian; the counters from byte 32 on are 128-bit.
const (
	NVMeSMARTLog  = 0x02
	nvmeLogSize   = 512
	nvmeCritical  = 0   // critical warning bits
	nvmeTemp      = 1   // composite temperature, kelvin, 2 bytes
	nvmeSpare     = 3   // available spare, %
	nvmeSpareThr  = 4   // available spare threshold, %
	nvmeUsed      = 5   // percentage used (may exceed 100)
	nvmeUnitsRead = 32  // data units read: thousands of 512-byte units
	nvmeUnitsWr   = 48  // data units written
	nvmeHostRead  = 64  // host read commands
	nvmeHostWrite = 80  // host write commands
	nvmeBusy      = 96  // controller busy time, minutes
	nvmePowerCyc  = 112 // power cycles
	nvmePowerOn   = 128 // power-on hours
	nvmeUnsafe    = 144 // unsafe shutdowns
	nvmeMediaErr  = 160 // media and data integrity errors
	nvmeErrLog    = 176 // number of error information log entries
)

// ParseNVMeSMART decodes the log page into a Health.
func ParseNVMeSMART(raw []byte, source string) (*Health, error) {
	if len(raw) != nvmeLogSize {
		return nil, fmt.Errorf("NVMe SMART log of %d bytes: want %d", len(raw), nvmeLogSize)
	}
	u128 := func(off int) uint64 {
		if binary.LittleEndian.Uint64(raw[off+8:]) != 0 {
			return math.MaxUint64 // beyond 2^64: saturate rather than wrap
		}
		return binary.LittleEndian.Uint64(raw[off:])
	}
	v := map[string]uint64{
		"critical_warning":    uint64(raw[nvmeCritical]),
		"temperature_kelvin":  uint64(binary.LittleEndian.Uint16(raw[nvmeTemp:])),
		"available_spare":     uint64(raw[nvmeSpare]),
		"available_spare_thr": uint64(raw[nvmeSpareThr]),
		"percentage_used":     uint64(raw[nvmeUsed]),
		"data_units_read":     u128(nvmeUnitsRead),
		"data_units_written":  u128(nvmeUnitsWr),
		"host_read_commands":  u128(nvmeHostRead),
		"host_write_commands": u128(nvmeHostWrite),
		"controller_busy_min": u128(nvmeBusy),
		"power_cycles":        u128(nvmePowerCyc),
		"power_on_hours":      u128(nvmePowerOn),
		"unsafe_shutdowns":    u128(nvmeUnsafe),
		"media_errors":        u128(nvmeMediaErr),
		"error_log_entries":   u128(nvmeErrLog),
	}
	sum := fmt.Sprintf("%d %% of the rated endurance used, spare %d %% (threshold %d %%), %d units of 512 000 bytes written, %d media errors",
		v["percentage_used"], v["available_spare"], v["available_spare_thr"], v["data_units_written"], v["media_errors"])
	if w := raw[nvmeCritical]; w != 0 {
		sum += fmt.Sprintf("; CRITICAL WARNING 0x%02x", w)
	}
	return &Health{Format: FormatNVMe, Source: source, Values: v, Summary: sum}, nil
}

// allZero reports whether b holds only zero bytes: nothing is left once they are trimmed.
func allZero(b []byte) bool { return len(bytes.TrimLeft(b, "\x00")) == 0 }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// hexBytes decodes n bytes of hex text, whitespace ignored.
func hexBytes(s string, n int) ([]byte, error) {
	t := strings.Join(strings.Fields(s), "")
	if len(t) != 2*n {
		return nil, fmt.Errorf("want %d hex digits, got %d", 2*n, len(t))
	}
	return hex.DecodeString(t)
}
