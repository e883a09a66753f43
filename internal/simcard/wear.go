package simcard

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/flash"
)

// WearFile is the wear-out control file inside the mount: it reads as the card's WearStatus in
// JSON, and takes the command "renew SEED [SCALE]" (see Card.Renew).
const WearFile = "wear"

// WearStatus is what the wear file reads as: the card's end-of-life counters (bad blocks,
// spares, health) with its profile's end-of-life model.
type WearStatus struct {
	Profile   string          `json:"profile"`
	EndOfLife flash.EndOfLife `json:"end_of_life"`
	flash.WearOut
	// Renewals counts the fresh cards put in since the server started.
	Renewals int `json:"renewals"`
	// Error is why the last command failed.
	Error string `json:"error,omitempty"`
}

// Renew puts a fresh card in: the same profile and size, nothing written (the backing file is
// emptied), its blocks' endurances drawn with seed around the profile's endurance times scale
// (flash.Model.WithEndurance). Its counters start from zero. It waits for the requests in
// progress, and refuses while a power-cut recording holds the card.
func (c *Card) Renew(seed uint64, scale float64) error {
	c.io.Lock()
	defer c.io.Unlock()
	c.pc.mu.Lock()
	busy := c.pc.rec != nil || c.pc.stream != nil
	c.pc.mu.Unlock()
	if busy {
		return errors.New("a power-cut recording holds the card: close it first")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m, err := c.model.WithEndurance(seed, scale)
	if err != nil {
		return err
	}
	// The old card's data goes with it: a fresh card reads as zeroes, as a discarded one.
	if err := unix.Fallocate(int(c.backing.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, int64(m.Size())); err != nil {
		return fmt.Errorf("empty the backing file for a fresh card: %w", err)
	}
	c.model = m
	c.renewals++
	return nil
}

// WearStatus returns the card's end-of-life counters now.
func (c *Card) WearStatus() WearStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return WearStatus{Profile: c.model.Profile().Name, EndOfLife: c.model.Profile().EndOfLife, WearOut: c.model.WearOut(),
		Renewals: c.renewals, Error: c.wearErr}
}

// WearCommand runs one command of the wear file: "renew SEED [SCALE]" (SCALE: the endurance
// scale, default the card's current one).
func (c *Card) WearCommand(line string) error {
	err := c.wearCommand(strings.Fields(line))
	c.mu.Lock()
	c.wearErr = ""
	if err != nil {
		c.wearErr = err.Error()
	}
	c.mu.Unlock()
	return err
}

func (c *Card) wearCommand(f []string) error {
	if len(f) < 2 || len(f) > 3 || f[0] != "renew" {
		return fmt.Errorf("unknown wear command %q: want renew SEED [SCALE]", strings.Join(f, " "))
	}
	seed, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return fmt.Errorf("renew: seed %q: %w", f[1], err)
	}
	c.mu.Lock()
	scale := c.model.WearOut().Scale
	c.mu.Unlock()
	if len(f) == 3 {
		if scale, err = strconv.ParseFloat(f[2], 64); err != nil {
			return fmt.Errorf("renew: scale %q: %w", f[2], err)
		}
	}
	return c.Renew(seed, scale)
}

func (c *Card) wearJSON() []byte {
	b, _ := json.MarshalIndent(c.WearStatus(), "", "  ") // a plain struct: cannot fail
	return append(b, '\n')
}

// garble makes the bytes of buf (read from the card at off) that lie in the wrong spans read
// back wrong: every byte of them differs from what was written (its top bit flipped, with a
// pattern of its offset), as data past its error correction does.
func garble(buf []byte, off uint64, wrong []flash.Span) {
	for _, s := range wrong {
		for a := s.Off; a < s.Off+s.Len; a++ {
			i := a - off
			if i < uint64(len(buf)) {
				buf[i] ^= 0x80 | byte(a>>9)
			}
		}
	}
}
