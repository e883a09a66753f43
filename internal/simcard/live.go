package simcard

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/powercut"
)

// A card in a board whose power is switched: an emulated board (QEMU) boots from the card
// file, and killing QEMU is the power going. The card applies its profile's power-loss model
// to itself as it stands at that moment, so that the board boots again from what a real card
// of that profile would hold:
//
//	power-on DIR LIMIT  the power is on: copy the card to DIR/base.img and record every
//	                    request after it (at most LIMIT bytes of data), as record does
//	power-off SEED      the power went: stop recording, decide with the profile's model
//	                    (seeded) what the card lost of what it received since power-on, write
//	                    that into the card, and refuse every request until the next power-on
//
// The outcome (powercut.Outcome: what survived, the torn and paired pages, the card's own
// damage) reads in the powercut file's status, so that a test can see what the model did.
const (
	cmdPowerOn  = "power-on"
	cmdPowerOff = "power-off"
)

// errPoweredOff is what a request to a card whose power is off gets: the kernel's I/O error.
var errPoweredOff = syscall.EIO

// offErr refuses a request while the card's power is off.
func (c *Card) offErr() error {
	c.pc.mu.Lock()
	defer c.pc.mu.Unlock()
	if c.pc.off {
		return errPoweredOff
	}
	return nil
}

// livePowerCommand runs power-on and power-off; ok is false for another command.
func (c *Card) livePowerCommand(f []string) (ok bool, err error) {
	switch f[0] {
	case cmdPowerOn:
		if len(f) != 3 {
			return true, errors.New("usage: power-on DIR LIMIT")
		}
		limit, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return true, fmt.Errorf("power-on limit %q: %w", f[2], err)
		}
		if err := c.startRecording(f[1], limit); err != nil {
			return true, err
		}
		c.pc.mu.Lock()
		c.pc.off = false
		c.pc.mu.Unlock()
		return true, nil
	case cmdPowerOff:
		if len(f) != 2 {
			return true, errors.New("usage: power-off SEED")
		}
		seed, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return true, fmt.Errorf("power-off seed %q: %w", f[1], err)
		}
		return true, c.powerOff(seed)
	}
	return false, nil
}

// powerOff applies the power-loss model to the card as it stands: the cut is at the end of
// what it received since power-on. The card's file held every request received; afterwards it
// holds the cut's state. No request is in flight meanwhile (c.io is held exclusively), and none
// is taken until the next power-on.
func (c *Card) powerOff(seed uint64) error {
	c.io.Lock()
	defer c.io.Unlock()
	pc := &c.pc
	pc.mu.Lock()
	if pc.rec == nil {
		pc.mu.Unlock()
		return errors.New("power-off: the card's power was not on (power-on DIR LIMIT first)")
	}
	full := pc.rec.Full()
	err := pc.rec.Close()
	pc.rec, pc.off = nil, true
	if full {
		err = errors.Join(err, errors.New("power-off: the recording filled its limit since power-on, so the card cannot tell what it lost: give power-on a larger LIMIT"))
	}
	pc.mu.Unlock()
	if err != nil {
		return err
	}
	stream, err := powercut.OpenStream(pc.dir)
	if err != nil {
		return err
	}
	n := len(stream.Records)
	stream.Close()
	if err := c.buildCut(powercut.Cut{Pos: n, Seed: seed, Kind: "live"}, powercut.ModelOf(c.model.Profile())); err != nil {
		return err
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	o := *pc.outcome
	// What differs between the card's file (every request applied) and the cut lies in the
	// spans of the records from the floor the cut was built over, and in the pages the model
	// destroyed beside them.
	var spans []flash.Span
	for _, r := range pc.stream.Records[pc.applied:] {
		if r.Op == flash.OpWrite || r.Op == flash.OpDiscard {
			spans = append(spans, flash.Span{Off: r.Off, Len: r.Len})
		}
	}
	if o.Torn != nil {
		spans = append(spans, o.Torn.Page)
	}
	if o.Paired != nil {
		spans = append(spans, *o.Paired)
	}
	spans = append(spans, o.Erased...)
	buf := make([]byte, 1<<20)
	size := c.model.Size()
	for _, s := range spans {
		for done := uint64(0); done < s.Len && s.Off+done < size; {
			k := min(s.Len-done, uint64(len(buf)), size-s.Off-done)
			if _, err := pc.cut.ReadAt(buf[:k], int64(s.Off+done)); err != nil {
				return fmt.Errorf("power-off: reading the cut: %w", err)
			}
			if _, err := c.backing.WriteAt(buf[:k], int64(s.Off+done)); err != nil {
				return fmt.Errorf("power-off: writing the card: %w", err)
			}
			done += k
		}
	}
	err = pc.release()
	pc.outcome = &o
	return err
}
