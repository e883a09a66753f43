package cardid

import (
	"fmt"
	"maps"
	"slices"
)

// Fingerprint says which card a reading is of: the CID's maker, product and hashed serial;
// a device without a CID, its model and hashed serial. "" when nothing identifies it (an image,
// a loop device, a reader that hides its card), and then no two readings can be told apart.
func (r *Reading) Fingerprint() string {
	switch {
	case r == nil:
		return ""
	case r.CID != nil:
		return r.CID.Fingerprint()
	case r.SerialHash != "":
		return fmt.Sprintf("%s %q serial %s", r.Kind, r.Model, r.SerialHash)
	}
	return ""
}

// Describe is a short line about the card for logs and warnings.
func (r *Reading) Describe() string {
	if r == nil {
		return "no reading"
	}
	fp := r.Fingerprint()
	if fp == "" {
		fp = r.Kind + ", unidentified"
	}
	if r.Simulated {
		fp += " (simulated)"
	}
	return fmt.Sprintf("%s, %d bytes", fp, r.SizeBytes)
}

// SameCard says whether a and b are readings of one card. unknown is true when either reading
// has nothing that identifies a card: then same is false and nothing can be concluded.
func SameCard(a, b *Reading) (same, unknown bool) {
	fa, fb := a.Fingerprint(), b.Fingerprint()
	if fa == "" || fb == "" {
		return false, true
	}
	return fa == fb && a.SizeBytes == b.SizeBytes, false
}

// Change is one health value that moved between two readings.
type Change struct {
	Name   string `json:"name"`
	Before uint64 `json:"before"`
	After  uint64 `json:"after"`
	// Delta is After − Before (negative when a value went down, which a wear counter should
	// not do: a reset card or another card).
	Delta int64 `json:"delta"`
}

// Delta is what moved between two readings of one card.
type Delta struct {
	Format  string   `json:"format,omitempty"`
	Changes []Change `json:"changes"`
	// Unchanged lists the values that stayed as they were.
	Unchanged []string `json:"unchanged,omitempty"`
	// Note says why there is nothing to compare, or what makes the comparison doubtful.
	Note string `json:"note,omitempty"`
}

// Compare returns the health delta from before to after.
func Compare(before, after *Reading) Delta {
	var d Delta
	if same, unknown := SameCard(before, after); !same && !unknown {
		d.Note = fmt.Sprintf("not the same card: %s before, %s after", before.Describe(), after.Describe())
	}
	if before == nil || after == nil || before.Health == nil || after.Health == nil {
		if d.Note == "" {
			d.Note = "no health report in both readings"
		}
		return d
	}
	if before.Health.Format != after.Health.Format {
		d.Note = fmt.Sprintf("health read as %s before and %s after: not comparable", before.Health.Format, after.Health.Format)
		return d
	}
	d.Format = after.Health.Format
	d.Changes = []Change{}
	for _, k := range slices.Sorted(maps.Keys(after.Health.Values)) {
		b, ok := before.Health.Values[k]
		if !ok {
			continue
		}
		a := after.Health.Values[k]
		if a == b {
			d.Unchanged = append(d.Unchanged, k)
			continue
		}
		d.Changes = append(d.Changes, Change{Name: k, Before: b, After: a, Delta: int64(a - b)})
	}
	return d
}

// Value returns a health value's change, and whether the value was compared at all.
func (d Delta) Value(name string) (int64, bool) {
	for _, c := range d.Changes {
		if c.Name == name {
			return c.Delta, true
		}
	}
	return 0, slices.Contains(d.Unchanged, name)
}

// ScrubSerials replaces, in a map of sysfs device attributes (blockdev.Identity.Device), the
// ones that carry a serial number by their hash: "serial" by its hash, "cid" (which holds the
// serial in its PSN field) by the CID's serial hash. Results then identify a card without
// publishing its serial. It returns a new map.
func ScrubSerials(attrs map[string]string) map[string]string {
	if attrs == nil {
		return nil
	}
	out := maps.Clone(attrs)
	maker := attrs["manfid"] + attrs["oemid"] + attrs["name"] + attrs["vendor"] + attrs["model"]
	if s, ok := out["serial"]; ok {
		out["serial"] = "sha256:" + HashSerial(maker, s)
	}
	if c, ok := out["cid"]; ok {
		reg, err := ParseRegister(c)
		switch {
		case err != nil:
			out["cid"] = "sha256:" + HashSerial(maker, c)
		case attrs["type"] == KindMMC:
			out["cid"] = "serial-sha256:" + ParseMMCCID(reg, -1).SerialHash
		default:
			out["cid"] = "serial-sha256:" + ParseSDCID(reg).SerialHash
		}
	}
	return out
}
