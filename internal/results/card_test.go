package results

import (
	"strings"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/cardid"
)

// fullCardCheck is a card check with every field set, for fullRun.
func fullCardCheck() *CardCheck {
	erases := uint64(12)
	reading := func(total uint64) *CardReading {
		return &CardReading{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Device: "/dev/mmcblk0", Kind: "SD",
			Source: "/sys/devices/platform/mmc0/mmc0:aaaa", Simulated: true, SizeBytes: 256 << 20,
			Fingerprint: "SD mid 0xaa oid XY \"QEMU!\" rev 0.1 serial 0123456789abcdef",
			CID:         &CardCID{Kind: "SD", ManufacturerID: 0xaa, OEMID: "XY", ProductName: "QEMU!", Revision: "0.1", SerialHash: "0123456789abcdef", Year: 2006, Month: 2, CRC: "ok"},
			CSD: &CardCSD{Kind: "SD", Structure: 1, CapacityBytes: 256 << 20, ReadBlockLen: 512, WriteBlockLen: 512, CCC: 0x5b5, EraseSectorBytes: 65536,
				PermWriteProtect: true, TmpWriteProtect: true, CRC: "ok"},
			ExtCSD: &CardExtCSD{Rev: 8, CapacityBytes: 8 << 30, CacheBytes: 512 << 10, Firmware: "0100000000000000", LifeTimeA: 1, LifeTimeB: 2, PreEOL: 1, VendorHealth: "00ff"},
			Model:  "SD Express 128GB", SerialHash: "fedcba9876543210",
			Health: &CardHealth{Format: cardid.FormatTranscend, Source: "gen_cmd56", Values: map[string]uint64{"erase_count_total": total}, Summary: "erases"},
			Notes:  []string{"no EXT_CSD on an SD card"}}
	}
	return &CardCheck{
		Capacity: &CapacityCheck{Verdict: "counterfeit", Class: "limbo", AnnouncedBytes: 2 << 30, UsableBytes: 117441024, BytesWritten: 532480,
			Seconds: 0.5, Method: "flush, then a reset of the card", Why: "it keeps only up to 112 MiB"},
		CapacitySkipped: "--no-capacity-check",
		Before:          reading(100), After: reading(112),
		HealthDelta: &HealthDelta{Format: cardid.FormatTranscend, Changes: []HealthChange{{Name: "erase_count_total", Before: 100, After: 112, Delta: 12}},
			Unchanged: []string{"erase_count_max"}, Note: "same card"},
		ModelledErases: &erases,
	}
}

func TestCardMismatches(t *testing.T) {
	a, b, c := &Run{CardCheck: fullCardCheck()}, &Run{CardCheck: fullCardCheck()}, &Run{CardCheck: fullCardCheck()}
	c.CardCheck.Before.Fingerprint = "SD mid 0x03 oid SD \"SL32G\" rev 8.0 serial 1111111111111111"
	none := &Run{}
	got := CardMismatches([]*Run{a, b, c, none}, []string{"A", "B", "C", "D"})
	if len(got) != 1 || !strings.Contains(got[0], "A and C were made on different cards") || !strings.Contains(got[0], "SL32G") {
		t.Errorf("mismatches = %q", got)
	}
}

func TestFromReading(t *testing.T) {
	cid := cardid.ParseSDCID(cardid.EncodeSDCID(cardid.SDCIDFields{MID: 3, OID: "SD", PNM: "SL32G", PSN: 7, Year: 2020, Month: 1}))
	r := FromReading(&cardid.Reading{Kind: "SD", SizeBytes: 1 << 30, CID: &cid})
	if r.CID.ProductName != "SL32G" || r.Fingerprint == "" || !strings.Contains(r.Describe(), "SL32G") {
		t.Errorf("FromReading = %+v", r)
	}
	if FromReading(nil) != nil {
		t.Error("FromReading(nil) is not nil")
	}
}
