package cardid

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fixtures below are assembled by hand, field by field, from the register layouts the
// parsers cite; a comment under each says where each byte comes from.

// TestCRC7 checks CRC7 against the command CRCs the SD specification lists as examples
// (SD Physical Layer Simplified Specification 9.00, §4.5): CMD0 with argument 0 ends in
// 0x95, CMD17 with argument 0 in 0x55, CMD8 with argument 0x1AA in 0x87 (CRC7 << 1 | 1).
func TestCRC7(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want byte
	}{{"4000000000", 0x95}, {"5100000000", 0x55}, {"48000001aa", 0x87}} {
		b, _ := hex.DecodeString(c.cmd)
		if got := CRC7(b)<<1 | 1; got != c.want {
			t.Errorf("CRC7(%s) = 0x%02x, want 0x%02x", c.cmd, got, c.want)
		}
	}
}

func reg(t *testing.T, s string) Register {
	t.Helper()
	r, err := ParseRegister(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseSDCID(t *testing.T) {
	// QEMU's emulated SD card (hw/sd/sd.c, sd_set_cid), as a host controller that strips the
	// CRC shows it in sysfs:
	//   aa         MID 0xaa
	//   5859       OID "XY"
	//   51454d5521 PNM "QEMU!"
	//   01         PRV 0.1
	//   deadbeef   PSN
	//   00 62      reserved 0, MDT year 0x06 (2006), month 2
	//   00         CRC stripped
	q := ParseSDCID(reg(t, "aa585951454d552101deadbeef006200"))
	if q.Kind != KindSD || q.ManufacturerID != 0xaa || q.OEMID != "XY" || q.ProductName != "QEMU!" || q.Revision != "0.1" ||
		q.Year != 2006 || q.Month != 2 || q.CRC != "" || len(q.SerialHash) != 16 {
		t.Errorf("QEMU CID = %+v", q)
	}
	// A 32 GB SDHC card laid out field by field:
	//   03 "SD" "SL32G" PRV 8.0, PSN 0x12345678, MDT 2017-12 (year 17 = 0x11: 0x01 0x1c)
	body := "035344534c333247" + "80" + "12345678" + "011c"
	b, _ := hex.DecodeString(body)
	full := body + hex.EncodeToString([]byte{CRC7(b)<<1 | 1})
	s := ParseSDCID(reg(t, full))
	if s.ManufacturerID != 3 || s.OEMID != "SD" || s.ProductName != "SL32G" || s.Revision != "8.0" || s.Year != 2017 || s.Month != 12 || s.CRC != "ok" {
		t.Errorf("SDHC CID = %+v", s)
	}
	if s.SerialHash == q.SerialHash {
		t.Error("two cards share a serial hash")
	}
	// A wrong CRC is reported, not hidden.
	bad := ParseSDCID(reg(t, body+"ff"))
	if bad.CRC != "bad" {
		t.Errorf("CRC of a corrupted CID = %q, want bad", bad.CRC)
	}
	// The same card with another serial hashes differently.
	other := ParseSDCID(reg(t, "035344534c333247"+"80"+"12345679"+"011c00"))
	if other.SerialHash == s.SerialHash {
		t.Error("serials 0x12345678 and 0x12345679 hash alike")
	}
	if strings.Contains(s.Fingerprint(), "12345678") {
		t.Errorf("fingerprint %q carries the serial", s.Fingerprint())
	}
}

func TestParseMMCCID(t *testing.T) {
	// An eMMC laid out field by field (JESD84-B51 §7.2):
	//   15       MID 0x15
	//   01       reserved 0, CBX 1 (BGA)
	//   00       OID 0x00
	//   384754464452 PNM "8GTFD" + "R" ("8GTFDR")
	//   a1       PRV 10.1
	//   cafef00d PSN
	//   b7       MDT month 11, year code 7 (2020 on EXT_CSD_REV > 4, 2004 otherwise)
	c := ParseMMCCID(reg(t, "150100384754464452a1cafef00db700"), 8)
	if c.Kind != KindMMC || c.ManufacturerID != 0x15 || c.OEMID != "0x00" || c.ProductName != "8GTFDR" || c.Revision != "10.1" || c.Month != 11 || c.Year != 2020 {
		t.Errorf("eMMC CID = %+v", c)
	}
	if old := ParseMMCCID(reg(t, "150100384754464452a1cafef00db700"), 4); old.Year != 2004 {
		t.Errorf("year on an EXT_CSD_REV 4 device = %d, want 2004", old.Year)
	}
}

func TestParseSDCSD(t *testing.T) {
	// Version 2.0 (SDHC), 32 GB (SD 9.00 §5.3.3):
	//   40 CSD_STRUCTURE 1; 0e TAAC; 00 NSAC; 32 TRAN_SPEED 25 MHz
	//   5b 5.. CCC 0x5b5; .9 READ_BL_LEN 9; 00 flags
	//   00 ed 2f C_SIZE 0x00ed2f [69:48] -> (60719+1) x 512 KiB
	//   7f 80  ERASE_BLK_EN 1, SECTOR_SIZE 0x7f, WP_GRP_SIZE 0
	//   0a 40  R2W_FACTOR 2, WRITE_BL_LEN 9
	//   00 00  flags, CRC stripped
	v2, err := ParseSDCSD(reg(t, "400e00325b590000ed2f7f800a400000"))
	if err != nil || v2.Structure != 1 || v2.CapacityBytes != 60720*512<<10 || v2.ReadBlockLen != 512 || v2.WriteBlockLen != 512 || v2.CCC != 0x5b5 {
		t.Errorf("SDHC CSD = %+v, %v", v2, err)
	}
	// Version 1.0 (SDSC), 256 MiB (§5.3.2), as QEMU builds it for a 256 MiB image:
	//   00 26 00 32 | 5f 59 READ_BL_LEN 9 | e0 ff ff: C_SIZE [73:62] = 1023
	//   ff: C_SIZE_MULT [49:47] high bits 11 | c2: C_SIZE_MULT low bit 1 (-> 7), ERASE_BLK_EN 1,
	//   SECTOR_SIZE high bits | 87: SECTOR_SIZE low bit (-> 5), WP_GRP_SIZE 7 | 92 60 00 00
	// capacity = (1023+1) x 2^(7+2) x 512 = 256 MiB
	v1, err := ParseSDCSD(reg(t, "002600325f59e0ffffffc287926000"+"00"))
	if err != nil || v1.Structure != 0 || v1.CapacityBytes != 256<<20 || v1.EraseSectorBytes != 6*512 {
		t.Errorf("SDSC CSD = %+v, %v", v1, err)
	}
	// Version 3.0 (SDUC): C_SIZE [75:48] = 0x0400000 -> (4194304+1) x 512 KiB, just over 2 TiB.
	v3, err := ParseSDCSD(reg(t, "800e00325b590040000000000a400000"))
	if err != nil || v3.Structure != 2 || v3.CapacityBytes != (0x400000+1)*512<<10 {
		t.Errorf("SDUC CSD = %+v, %v", v3, err)
	}
	if _, err := ParseSDCSD(reg(t, "c00e00325b590000ed2f7f800a400000")); err == nil {
		t.Error("a reserved CSD structure (3) was accepted")
	}
	// eMMC above 2 GB: C_SIZE 0xFFF, capacity in EXT_CSD.
	m := ParseMMCCSD(reg(t, "d0270132 0f5903ff f6dbffef 8e40400d"))
	if m.CapacityBytes != 0 || m.ReadBlockLen != 512 {
		t.Errorf("eMMC CSD = %+v", m)
	}
}

func TestParseExtCSD(t *testing.T) {
	raw := make([]byte, 512)
	raw[192] = 8                                                    // EXT_CSD_REV: eMMC 5.1
	raw[212], raw[213], raw[214], raw[215] = 0x00, 0x00, 0xe9, 0x00 // SEC_COUNT 0x00e90000 (little-endian)
	raw[249], raw[250] = 0x00, 0x02                                 // CACHE_SIZE 512 KiB
	raw[267] = 1                                                    // PRE_EOL_INFO normal
	raw[268] = 3                                                    // LIFE_TIME_EST_TYP_A: 20-30 %
	raw[269] = 1                                                    // LIFE_TIME_EST_TYP_B: 0-10 %
	e, err := ParseExtCSD(raw)
	if err != nil || e.Rev != 8 || e.CapacityBytes != 0xe90000*512 || e.CacheBytes != 512<<10 || e.PreEOL != 1 || e.LifeTimeA != 3 || e.LifeTimeB != 1 {
		t.Fatalf("EXT_CSD = %+v, %v", e, err)
	}
	h := e.Health("test")
	if h.Values["life_time_est_a"] != 3 || !strings.Contains(h.Summary, "20–30 %") || !strings.Contains(h.Summary, "normal") {
		t.Errorf("health = %+v", h)
	}
	if e2, err := ParseExtCSDHex(hex.EncodeToString(raw)); err != nil || e2 != e {
		t.Errorf("hex EXT_CSD = %+v, %v", e2, err)
	}
	if _, err := ParseExtCSD(raw[:511]); err == nil {
		t.Error("a short EXT_CSD was accepted")
	}
	if got := EncodeExtCSD(ExtCSDFields{Rev: 8, Sectors: 0xe90000, CacheKiB: 512, LifeTimeA: 3, LifeTimeB: 1, EOL: 1}); hex.EncodeToString(got) != hex.EncodeToString(raw) {
		t.Error("EncodeExtCSD differs from the hand-built register")
	}
}

func TestParseTranscendSMART(t *testing.T) {
	raw := make([]byte, 512)
	copy(raw, "Transcend")                        // 0x00 card marker
	raw[0x1a] = 2                                 // new bad blocks
	raw[0x1e], raw[0x1f] = 0x00, 0x40             // spare blocks 64
	copy(raw[0x20:], []byte{0, 0, 0, 3})          // min erase 3
	copy(raw[0x24:], []byte{0, 0, 0x01, 0x2c})    // max erase 300
	copy(raw[0x28:], []byte{0, 0x01, 0x86, 0xa0}) // total erase 100000
	copy(raw[0x2c:], []byte{0, 0, 0, 0x32})       // average erase 50
	raw[0x44], raw[0x45] = 0x00, 0x1e             // P/E cycles 30 x 100
	raw[0x46] = 98                                // card life 98 %
	copy(raw[0x4c:], []byte{0, 0, 0x02, 0x00})    // power cycles 512
	copy(raw[0x58:], "SM2706")                    // controller
	copy(raw[0x80:], "T1106A")                    // firmware
	copy(raw[0xa4:], []byte{0, 0, 0, 7})          // abnormal power 7
	s, err := ParseTranscendSMART(raw)
	want := TranscendSMART{Controller: "SM2706", Firmware: "T1106A", BadBlocks: 2, SpareBlocks: 64, MinErase: 3, MaxErase: 300,
		TotalErase: 100000, AvgErase: 50, RatedPECycles: 3000, CardLife: 98, PowerCycles: 512, AbnormalPower: 7}
	if err != nil || s != want {
		t.Fatalf("SMART = %+v, %v\nwant %+v", s, err, want)
	}
	if got := EncodeTranscendSMART(want); hex.EncodeToString(got[:0xb0]) != hex.EncodeToString(raw[:0xb0]) {
		t.Errorf("EncodeTranscendSMART differs from the hand-built block:\n%x\n%x", got[:0xb0], raw[:0xb0])
	}
	raw[0] = 'X'
	if _, err := ParseTranscendSMART(raw); err == nil {
		t.Error("a block without the vendor's marker was accepted")
	}
}

func TestParseNVMeSMART(t *testing.T) {
	raw := make([]byte, 512)
	raw[0] = 0x04                       // critical warning: reliability degraded
	raw[1], raw[2] = 0x3b, 0x01         // 315 K
	raw[3], raw[4], raw[5] = 100, 10, 7 // spare 100 %, threshold 10 %, 7 % used
	raw[48], raw[49] = 0x10, 0x27       // data units written 10000
	raw[112] = 42                       // power cycles
	raw[160] = 1                        // media errors
	raw[32+15] = 1                      // data units read beyond 2^64: saturates
	h, err := ParseNVMeSMART(raw, "test")
	if err != nil {
		t.Fatal(err)
	}
	v := h.Values
	if v["critical_warning"] != 4 || v["temperature_kelvin"] != 315 || v["available_spare"] != 100 || v["percentage_used"] != 7 ||
		v["data_units_written"] != 10000 || v["power_cycles"] != 42 || v["media_errors"] != 1 || v["data_units_read"] != 1<<64-1 {
		t.Errorf("NVMe health = %v", v)
	}
	if !strings.Contains(h.Summary, "CRITICAL WARNING 0x04") {
		t.Errorf("summary %q hides the critical warning", h.Summary)
	}
}

func TestEncodersRoundTrip(t *testing.T) {
	cid := EncodeSDCID(SDCIDFields{MID: 0xfb, OID: "FB", PNM: "SIMSD", PRVMajor: 1, PSN: 77, Year: 2026, Month: 3})
	c := ParseSDCID(cid)
	if c.ManufacturerID != 0xfb || c.OEMID != "FB" || c.ProductName != "SIMSD" || c.Revision != "1.0" || c.Year != 2026 || c.Month != 3 || c.CRC != "ok" {
		t.Errorf("SD CID round trip = %+v", c)
	}
	if csd, err := ParseSDCSD(EncodeSDCSD(2 << 30)); err != nil || csd.CapacityBytes != 2<<30 || csd.CRC != "ok" {
		t.Errorf("SD CSD round trip = %+v, %v", csd, err)
	}
	m := ParseMMCCID(EncodeMMCCID(MMCCIDFields{MID: 0xfb, CBX: 1, OID: 0x46, PNM: "SIMMC", PSN: 5, Month: 4, YearCode: 13}), 8)
	if m.ProductName != "SIMMC" || m.Year != 2010 || m.Month != 4 || m.CRC != "ok" {
		t.Errorf("MMC CID round trip = %+v", m)
	}
	if csd := ParseMMCCSD(EncodeMMCCSD()); csd.CapacityBytes != 0 || csd.CRC != "ok" {
		t.Errorf("MMC CSD round trip = %+v", csd)
	}
}

func TestCompareAndSameCard(t *testing.T) {
	cidA := ParseSDCID(EncodeSDCID(SDCIDFields{MID: 3, OID: "SD", PNM: "SL32G", PSN: 1, Year: 2020, Month: 1}))
	cidB := ParseSDCID(EncodeSDCID(SDCIDFields{MID: 3, OID: "SD", PNM: "SL32G", PSN: 2, Year: 2020, Month: 1}))
	health := func(total, avg uint64) *Health {
		return TranscendSMART{TotalErase: total, AvgErase: avg}.Health("t")
	}
	before := &Reading{Kind: KindSD, SizeBytes: 1 << 30, CID: &cidA, Health: health(100, 1)}
	after := &Reading{Kind: KindSD, SizeBytes: 1 << 30, CID: &cidA, Health: health(164, 2)}
	if same, unknown := SameCard(before, after); !same || unknown {
		t.Errorf("SameCard(a, a) = %v, %v", same, unknown)
	}
	d := Compare(before, after)
	if n, ok := d.Value("erase_count_total"); !ok || n != 64 || d.Note != "" {
		t.Errorf("delta = %+v", d)
	}
	if n, ok := d.Value("erase_count_max"); !ok || n != 0 {
		t.Errorf("an unchanged value: %d, %v", n, ok)
	}
	other := &Reading{Kind: KindSD, SizeBytes: 1 << 30, CID: &cidB, Health: health(5, 0)}
	if same, unknown := SameCard(before, other); same || unknown {
		t.Errorf("SameCard(a, b) = %v, %v", same, unknown)
	}
	if d := Compare(before, other); !strings.Contains(d.Note, "not the same card") {
		t.Errorf("delta across cards: %+v", d)
	}
	if _, unknown := SameCard(before, &Reading{Kind: "image"}); !unknown {
		t.Error("an image reading identified a card")
	}
}

func TestScrubSerials(t *testing.T) {
	in := map[string]string{"type": "SD", "manfid": "0x000003", "serial": "0x12345678", "cid": "035344534c33324780123456780111c00", "name": "SL32G"}
	in["cid"] = "035344534c3332478012345678011c00"
	out := ScrubSerials(in)
	for k, v := range out {
		if strings.Contains(v, "12345678") {
			t.Errorf("%s = %q still holds the serial", k, v)
		}
	}
	if out["name"] != "SL32G" || !strings.HasPrefix(out["serial"], "sha256:") || !strings.HasPrefix(out["cid"], "serial-sha256:") {
		t.Errorf("scrubbed = %v", out)
	}
	if in["serial"] != "0x12345678" {
		t.Error("ScrubSerials changed its input")
	}
}

func TestDiskName(t *testing.T) {
	for in, want := range map[string]string{"mmcblk0p2": "mmcblk0", "mmcblk0": "mmcblk0", "nvme0n1p1": "nvme0n1", "nvme0n1": "nvme0n1", "sda1": "sda1", "mmcblk0boot0": "mmcblk0boot0"} {
		if got := diskName(in); got != want {
			t.Errorf("diskName(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestReadFakeSysfs reads an eMMC and an SD card from sysfs trees laid out like the kernel's
// (without sending them commands): registers decoded, the eMMC's cached life time used and said
// to be the kernel's copy, the SD card's missing health explained.
func TestReadFakeSysfs(t *testing.T) {
	root := t.TempDir()
	mk := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	host := "devices/platform/sdhci/mmc_host/mmc0/mmc0:0001"
	mk(host+"/block/mmcblk0/size", "15269888\n")
	mk(host+"/block/mmcblk0/mmcblk0p1/size", "2048\n")
	mk(host+"/block/mmcblk0/mmcblk0p1/partition", "1\n")
	mk(host+"/block/mmcblk0/mmcblk0p1/start", "2048\n")
	mk(host+"/type", "MMC\n")
	mk(host+"/cid", "150100384754464452a1cafef00db700\n")
	mk(host+"/csd", "d02701320f5903fff6dbffef8e40400d\n")
	mk(host+"/life_time", "0x02 0x01\n")
	mk(host+"/pre_eol_info", "0x01\n")
	link("../../../mmc0:0001", host+"/block/mmcblk0/device")
	link("../../"+host+"/block/mmcblk0", "class/block/mmcblk0")
	link("../../"+host+"/block/mmcblk0/mmcblk0p1", "class/block/mmcblk0p1")
	sd := "devices/platform/sdhci1/mmc_host/mmc1/mmc1:aaaa"
	mk(sd+"/block/mmcblk1/size", "524288\n")
	mk(sd+"/type", "SD\n")
	mk(sd+"/cid", "aa585951454d552101deadbeef006200\n")
	mk(sd+"/csd", "002600325f59e0ffffffc28792600000\n")
	link("../../../mmc1:aaaa", sd+"/block/mmcblk1/device")
	link("../../"+sd+"/block/mmcblk1", "class/block/mmcblk1")

	nodes := t.TempDir()
	for _, n := range []string{"mmcblk0p1", "mmcblk1"} {
		if err := os.Mkdir(filepath.Join(nodes, n), 0o755); err != nil { // stands for the device node
			t.Fatal(err)
		}
	}
	r, err := Read(context.Background(), filepath.Join(nodes, "mmcblk0p1"), Options{Sysfs: root, NoCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != KindMMC || r.CID == nil || r.CID.ProductName != "8GTFDR" || r.CSD == nil || r.Health == nil ||
		r.Health.Values["life_time_est_a"] != 2 || !strings.Contains(r.Health.Source, "kernel's copy") {
		t.Errorf("eMMC reading = %+v (health %+v)", r, r.Health)
	}
	r, err = Read(context.Background(), filepath.Join(nodes, "mmcblk1"), Options{Sysfs: root, NoCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != KindSD || r.CID == nil || r.CID.ProductName != "QEMU!" || r.CSD == nil || r.CSD.CapacityBytes != 256<<20 ||
		r.SizeBytes != 256<<20 || r.Health != nil || len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "published") {
		t.Errorf("SD reading = %+v", r)
	}
}
