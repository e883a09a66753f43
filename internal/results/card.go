package results

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fsbench/fsbench/internal/cardid"
)

// CardCheck is what a run knows of the card it ran on (results.json "card_check"): the
// capacity check made before a destructive run, and the card's identity and health read
// before and after the run, with what moved in between.
type CardCheck struct {
	// Capacity is the check that the card holds what it announces; nil when none was made,
	// and then CapacitySkipped says why (--no-capacity-check, a simulated card).
	Capacity        *CapacityCheck `json:"capacity,omitempty"`
	CapacitySkipped string         `json:"capacity_skipped,omitempty"`
	// Before and After are the card's identity and health before the first test and after
	// the last (the serial is kept only as a hash).
	Before *CardReading `json:"before,omitempty"`
	After  *CardReading `json:"after,omitempty"`
	// HealthDelta is what the card's own counters say moved during the run.
	HealthDelta *HealthDelta `json:"health_delta,omitempty"`
	// ModelledErases is, on a simulated card, how many erase-block erases its model counted
	// between the two readings: the wear the health delta should show.
	ModelledErases *uint64 `json:"modelled_erases,omitempty"`
}

// CapacityCheck is the capacity check's verdict as a run records it (the full explanation is
// fsbench probe --capacity's).
type CapacityCheck struct {
	Verdict        string  `json:"verdict"`         // genuine, counterfeit, damaged
	Class          string  `json:"class,omitempty"` // wraparound, chain, limbo
	AnnouncedBytes uint64  `json:"announced_bytes"`
	UsableBytes    uint64  `json:"usable_bytes"`
	BytesWritten   uint64  `json:"bytes_written"` // by the check, put back since
	Seconds        float64 `json:"seconds"`
	Method         string  `json:"method"`
	Why            string  `json:"why"`
}

// CardReading is one reading of a card's identity and health (see cardid.Reading).
type CardReading struct {
	Time      time.Time `json:"time"`
	Device    string    `json:"device"`
	Kind      string    `json:"kind"` // SD, MMC, NVMe, USB, image, other
	Source    string    `json:"source,omitempty"`
	Simulated bool      `json:"simulated,omitempty"`
	SizeBytes uint64    `json:"size_bytes,omitempty"`
	// Fingerprint identifies the card (maker, product, hashed serial); "" when nothing does.
	Fingerprint string      `json:"fingerprint,omitempty"`
	CID         *CardCID    `json:"cid,omitempty"`
	CSD         *CardCSD    `json:"csd,omitempty"`
	ExtCSD      *CardExtCSD `json:"ext_csd,omitempty"`
	Model       string      `json:"model,omitempty"`
	SerialHash  string      `json:"serial_hash,omitempty"`
	Health      *CardHealth `json:"health,omitempty"`
	Notes       []string    `json:"notes,omitempty"`
}

// CardCID is a decoded CID register, serial hashed (cardid.CID).
type CardCID struct {
	Kind           string `json:"kind"`
	ManufacturerID uint8  `json:"manfid"`
	OEMID          string `json:"oemid"`
	ProductName    string `json:"name"`
	Revision       string `json:"revision"`
	SerialHash     string `json:"serial_hash"`
	Year           int    `json:"year,omitempty"`
	Month          int    `json:"month,omitempty"`
	CRC            string `json:"crc,omitempty"`
}

// CardCSD is a decoded CSD register (cardid.CSD).
type CardCSD struct {
	Kind             string `json:"kind"`
	Structure        int    `json:"structure"`
	CapacityBytes    uint64 `json:"capacity_bytes"`
	ReadBlockLen     uint32 `json:"read_block_len"`
	WriteBlockLen    uint32 `json:"write_block_len"`
	CCC              uint16 `json:"ccc"`
	EraseSectorBytes uint32 `json:"erase_sector_bytes,omitempty"`
	PermWriteProtect bool   `json:"perm_write_protect,omitempty"`
	TmpWriteProtect  bool   `json:"tmp_write_protect,omitempty"`
	CRC              string `json:"crc,omitempty"`
}

// CardExtCSD is what is kept of an eMMC's EXT_CSD (cardid.ExtCSD).
type CardExtCSD struct {
	Rev           int    `json:"rev"`
	CapacityBytes uint64 `json:"capacity_bytes"`
	CacheBytes    uint64 `json:"cache_bytes,omitempty"`
	Firmware      string `json:"firmware,omitempty"`
	LifeTimeA     int    `json:"life_time_est_a"`
	LifeTimeB     int    `json:"life_time_est_b"`
	PreEOL        int    `json:"pre_eol_info"`
	VendorHealth  string `json:"vendor_health,omitempty"`
}

// CardHealth is the card's own wear report (cardid.Health).
type CardHealth struct {
	Format  string            `json:"format"`
	Source  string            `json:"source"`
	Values  map[string]uint64 `json:"values"`
	Summary string            `json:"summary,omitempty"`
}

// HealthDelta is what moved between two readings (cardid.Delta).
type HealthDelta struct {
	Format    string         `json:"format,omitempty"`
	Changes   []HealthChange `json:"changes"`
	Unchanged []string       `json:"unchanged,omitempty"`
	Note      string         `json:"note,omitempty"`
}

// HealthChange is one value that moved.
type HealthChange struct {
	Name   string `json:"name"`
	Before uint64 `json:"before"`
	After  uint64 `json:"after"`
	Delta  int64  `json:"delta"`
}

// FromReading converts a card reading; nil for nil.
func FromReading(r *cardid.Reading) *CardReading {
	if r == nil {
		return nil
	}
	out := &CardReading{Time: r.Time, Device: r.Device, Kind: r.Kind, Source: r.Source, Simulated: r.Simulated, SizeBytes: r.SizeBytes,
		Fingerprint: r.Fingerprint(), Model: r.Model, SerialHash: r.SerialHash, Notes: slices.Clone(r.Notes)}
	if c := r.CID; c != nil {
		out.CID = &CardCID{Kind: c.Kind, ManufacturerID: c.ManufacturerID, OEMID: c.OEMID, ProductName: c.ProductName,
			Revision: c.Revision, SerialHash: c.SerialHash, Year: c.Year, Month: c.Month, CRC: c.CRC}
	}
	if c := r.CSD; c != nil {
		out.CSD = &CardCSD{Kind: c.Kind, Structure: c.Structure, CapacityBytes: c.CapacityBytes, ReadBlockLen: c.ReadBlockLen,
			WriteBlockLen: c.WriteBlockLen, CCC: c.CCC, EraseSectorBytes: c.EraseSectorBytes, PermWriteProtect: c.PermWriteProtect,
			TmpWriteProtect: c.TmpWriteProtect, CRC: c.CRC}
	}
	if e := r.ExtCSD; e != nil {
		out.ExtCSD = &CardExtCSD{Rev: e.Rev, CapacityBytes: e.CapacityBytes, CacheBytes: e.CacheBytes, Firmware: e.Firmware,
			LifeTimeA: e.LifeTimeA, LifeTimeB: e.LifeTimeB, PreEOL: e.PreEOL, VendorHealth: e.VendorHealth}
	}
	if h := r.Health; h != nil {
		out.Health = &CardHealth{Format: h.Format, Source: h.Source, Values: maps.Clone(h.Values), Summary: h.Summary}
	}
	return out
}

// FromDelta converts a health delta.
func FromDelta(d cardid.Delta) *HealthDelta {
	out := &HealthDelta{Format: d.Format, Unchanged: slices.Clone(d.Unchanged), Note: d.Note, Changes: []HealthChange{}}
	for _, c := range d.Changes {
		out.Changes = append(out.Changes, HealthChange{Name: c.Name, Before: c.Before, After: c.After, Delta: c.Delta})
	}
	return out
}

// Describe is a short line about the card.
func (r *CardReading) Describe() string {
	fp := r.Fingerprint
	if fp == "" {
		fp = r.Kind + ", unidentified"
	}
	if r.Simulated {
		fp += " (simulated)"
	}
	return fmt.Sprintf("%s, %d bytes", fp, r.SizeBytes)
}

// cardReading is the reading that identifies a run's card: before, else after.
func (r *Run) cardReading() *CardReading {
	if r == nil || r.CardCheck == nil {
		return nil
	}
	if r.CardCheck.Before != nil {
		return r.CardCheck.Before
	}
	return r.CardCheck.After
}

// CardMismatches says which runs were made on another card than the first run (names[i]
// names runs[i]), one line each, for compare and merge to warn: figures from two cards compare
// the cards as much as the filesystems. Runs whose card nothing identifies are not compared.
func CardMismatches(runs []*Run, names []string) []string {
	var out []string
	a := runs[0].cardReading()
	for i := 1; i < len(runs); i++ {
		b := runs[i].cardReading()
		if a == nil || b == nil || a.Fingerprint == "" || b.Fingerprint == "" {
			continue
		}
		if a.Fingerprint != b.Fingerprint || a.SizeBytes != b.SizeBytes {
			out = append(out, fmt.Sprintf("%s and %s were made on different cards: %s on %s; %s on %s", names[0], names[i], names[0], a.Describe(), names[i], b.Describe()))
		}
	}
	return out
}
