package simcard

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/fsbench/fsbench/internal/cardid"
	"github.com/fsbench/fsbench/internal/flash"
)

// File names inside the mount beside the card (device.go).
const (
	// DeviceDir is the card's device directory, laid out like the kernel's sysfs directory of
	// an SD card or eMMC (/sys/block/mmcblkN/device): cid, csd, type, name, manfid, oemid,
	// date, serial, preferred_erase_size, erase_size; an eMMC also has life_time,
	// pre_eol_info and ext_csd (hex, as debugfs prints it), an SD card gen_cmd56 (its health
	// block, hex). The health files move with the card's wear, as they are read.
	DeviceDir = cardid.SimDeviceDir
	// ResetFile power-cycles the card when written: a counterfeit loses what its RAM cache
	// held (Card.Reset); a genuine card loses nothing once flushed.
	ResetFile = "reset"
)

// simMID is the manufacturer ID of a genuine simulated card: one the SD Card Association has
// not assigned as far as the public lists go, so that no reading mistakes it for a real maker.
// A counterfeit has 0x00, as many real counterfeits do (f3 issue #15: a fake "Samsung" with
// manufacturer 0x00).
const simMID = 0xfb

// cardKind is "MMC" for an eMMC profile (its name starts with emmc), else "SD".
func cardKind(p flash.Profile) string {
	if strings.HasPrefix(p.Name, "emmc") || strings.HasPrefix(p.Base, "emmc") {
		return cardid.KindMMC
	}
	return cardid.KindSD
}

// identity is what the card's registers say about it: fixed for a card (a backing file).
type identity struct {
	kind     string
	cid, csd cardid.Register
	mid      uint8
	oid      string
	name     string
	psn      uint32
	au       uint64
	size     uint64
}

// newIdentity makes the registers of a card of profile p announcing size bytes. The serial is
// the profile's and the size's: every card served from one profile at one size is the same
// card to compare and merge (a run on sd-typical compares with another without a warning,
// one on emmc with a warning).
func newIdentity(p flash.Profile, announced uint64) identity {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s\x00%d", p.Name, announced)
	id := identity{kind: cardKind(p), mid: simMID, oid: "FB", psn: h.Sum32(), au: uint64(p.AUSize), size: announced}
	id.name = strings.ToUpper(strings.NewReplacer("-", "", "_", "").Replace(p.Name))
	if p.Fake != nil {
		id.mid, id.oid, id.name = 0, "", fmt.Sprintf("SD%02dG", (announced+1<<29)>>30)
	}
	switch id.kind {
	case cardid.KindMMC:
		id.name = fit(id.name, 6)
		id.cid = cardid.EncodeMMCCID(cardid.MMCCIDFields{MID: id.mid, CBX: 1, OID: 'F', PNM: id.name, PRVMajor: 1, PSN: id.psn, Month: 1, YearCode: 12})
		id.csd = cardid.EncodeMMCCSD()
	default:
		id.name = fit(id.name, 5)
		id.cid = cardid.EncodeSDCID(cardid.SDCIDFields{MID: id.mid, OID: id.oid, PNM: id.name, PRVMajor: 1, PSN: id.psn, Year: 2025, Month: 1})
		id.csd = cardid.EncodeSDCSD(announced)
	}
	return id
}

func fit(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// deviceFiles returns the device directory's files and their content now.
func (c *Card) deviceFiles() map[string][]byte {
	id := c.id
	out := map[string][]byte{
		"type":                 []byte(id.kind + "\n"),
		"cid":                  []byte(id.cid.String() + "\n"),
		"csd":                  []byte(id.csd.String() + "\n"),
		"name":                 []byte(id.name + "\n"),
		"manfid":               []byte(fmt.Sprintf("0x%06x\n", id.mid)),
		"oemid":                []byte(fmt.Sprintf("0x%04x\n", oemid(id.oid))),
		"date":                 []byte("01/2025\n"),
		"serial":               []byte(fmt.Sprintf("0x%08x\n", id.psn)),
		"preferred_erase_size": []byte(fmt.Sprintf("%d\n", id.au)),
		"erase_size":           []byte("512\n"),
	}
	h := c.health()
	switch id.kind {
	case cardid.KindMMC:
		life := lifeStep(h.avg, h.endurance)
		eol := preEOL(h.spare, h.spareLeft)
		out["life_time"] = []byte(fmt.Sprintf("0x%02x 0x%02x\n", life, life))
		out["pre_eol_info"] = []byte(fmt.Sprintf("0x%02x\n", eol))
		ext := cardid.EncodeExtCSD(cardid.ExtCSDFields{Rev: 8, Sectors: uint32(id.size / 512), CacheKiB: uint32(c.model.Profile().CacheSize >> 10),
			LifeTimeA: life, LifeTimeB: life, EOL: eol})
		out[cardid.SimExtCSD] = []byte(hex.EncodeToString(ext) + "\n")
	default:
		life := uint64(100)
		if h.endurance > 0 {
			life = 100 - min(100, h.avg*100/h.endurance)
		}
		blk := cardid.EncodeTranscendSMART(cardid.TranscendSMART{Controller: "FSBSIM", Firmware: "SIM1",
			BadBlocks: min(h.bad, 255), SpareBlocks: h.spareLeft,
			MinErase: h.min, MaxErase: h.max, TotalErase: h.total, AvgErase: h.avg, RatedPECycles: h.endurance, CardLife: life})
		out[cardid.SimGenCmd56] = []byte(hex.EncodeToString(blk) + "\n")
	}
	return out
}

func oemid(s string) uint16 {
	if len(s) < 2 {
		return 0
	}
	return uint16(s[0])<<8 | uint16(s[1])
}

// wear is the card's erase counts and bad blocks now.
type wear struct {
	total, avg, min, max, endurance uint64
	bad, spare, spareLeft           uint64
}

// health reads the model's erase counters: total erases since the card was made, and the
// minimum, average and maximum per erase block.
func (c *Card) health() wear {
	c.mu.Lock()
	cn := c.model.Counters()
	c.mu.Unlock()
	w := wear{total: cn.BlocksErased, max: uint64(cn.MaxErases), endurance: cn.Endurance}
	if e := cn.EndOfLife; e != nil {
		w.bad, w.spare, w.spareLeft = e.BadBlocks, e.SpareBlocks, e.SpareLeft
	}
	if cn.EraseBlocks > 0 {
		w.avg = cn.BlocksErased / cn.EraseBlocks
	}
	if len(cn.Wear) > 0 {
		w.min = uint64(cn.Wear[0].Erases)
	}
	return w
}

// lifeStep is an eMMC DEVICE_LIFE_TIME_EST value for an average erase count: 0x01 for 0-10 %
// of the rated cycles used ... 0x0A for 90-100 %, 0x0B beyond.
func lifeStep(avg, endurance uint64) int {
	if endurance == 0 {
		return 0
	}
	return int(min(11, avg*10/endurance+1))
}

// preEOL is an eMMC PRE_EOL_INFO value for the spare blocks used: 0x01 normal (under 80 % of
// the reserved blocks used), 0x02 warning (80 %), 0x03 urgent (90 %), as JESD84-B51 defines it.
func preEOL(spare, left uint64) int {
	if spare == 0 {
		return 1
	}
	switch used := (spare - min(left, spare)) * 100 / spare; {
	case used >= 90:
		return 3
	case used >= 80:
		return 2
	}
	return 1
}
