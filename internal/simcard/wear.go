package simcard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/flash"
)

// WearFile is the wear-out control file inside the mount: it reads as the card's WearStatus in
// JSON, and takes the commands "renew SEED [SCALE]" (Card.Renew), "save DIR" (Card.Save) and
// "restore DIR" (Card.Restore).
const WearFile = "wear"

// WearStatus is what the wear file reads as: the card's end-of-life counters (bad blocks,
// spares, health) with its profile's end-of-life model.
type WearStatus struct {
	Profile   string          `json:"profile"`
	EndOfLife flash.EndOfLife `json:"end_of_life"`
	flash.WearOut
	// HostBytesWritten is what the card received since it was put in.
	HostBytesWritten uint64 `json:"host_bytes_written"`
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
		HostBytesWritten: c.model.Counters().HostBytesWritten, Renewals: c.renewals, Error: c.wearErr}
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
	if len(f) == 2 && f[0] == "save" {
		return c.Save(f[1])
	}
	if len(f) == 2 && f[0] == "restore" {
		return c.Restore(f[1])
	}
	if len(f) < 2 || len(f) > 3 || f[0] != "renew" {
		return fmt.Errorf("unknown wear command %q: want renew SEED [SCALE], save DIR or restore DIR", strings.Join(f, " "))
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

// Files of a saved card (Card.Save).
const (
	savedModel = "model.bin"
	savedData  = "card.data"
)

// Save writes the card into dir: its model (every block's wear, every mapping) and its data
// (a sparse copy of the backing file), consistent with each other: no request runs meanwhile.
func (c *Card) Save(dir string) error {
	if c.fake != nil {
		return errors.New("a counterfeit card cannot be saved")
	}
	c.io.Lock()
	defer c.io.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	b, err := c.model.MarshalBinary()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, savedModel), b, 0o644); err != nil {
		return fmt.Errorf("saving the card: %w", err)
	}
	dst, err := os.OpenFile(filepath.Join(dir, savedData), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("saving the card: %w", err)
	}
	err = copyData(dst, c.backing, int64(c.model.Size()))
	if serr := dst.Sync(); err == nil {
		err = serr
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("saving the card's data: %w", err)
	}
	return nil
}

// Restore makes the card the one Save wrote into dir: its model and its data. It must be a
// card of the same size (the backing file keeps its size).
func (c *Card) Restore(dir string) error {
	if c.fake != nil {
		return errors.New("a counterfeit card cannot be restored")
	}
	b, err := os.ReadFile(filepath.Join(dir, savedModel))
	if err != nil {
		return fmt.Errorf("restoring the card: %w", err)
	}
	m, err := flash.LoadModel(b)
	if err != nil {
		return err
	}
	src, err := os.Open(filepath.Join(dir, savedData))
	if err != nil {
		return fmt.Errorf("restoring the card: %w", err)
	}
	defer src.Close()
	c.io.Lock()
	defer c.io.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.Size() != c.model.Size() {
		return fmt.Errorf("restoring the card: the saved card holds %d bytes, this one %d", m.Size(), c.model.Size())
	}
	if err := unix.Fallocate(int(c.backing.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, int64(m.Size())); err != nil {
		return fmt.Errorf("emptying the backing file: %w", err)
	}
	if err := copyData(c.backing, src, int64(m.Size())); err != nil {
		return fmt.Errorf("restoring the card's data: %w", err)
	}
	c.model = m
	return nil
}

// copyData copies the first n bytes of src to dst, only the parts of src that hold data
// (SEEK_DATA, SEEK_HOLE): a card's backing file is sparse, mostly holes. dst's other parts
// are left as they are (holes in a new or emptied file); dst ends at n bytes.
func copyData(dst, src *os.File, n int64) error {
	buf := make([]byte, 1<<20)
	for off := int64(0); off < n; {
		data, err := unix.Seek(int(src.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // no data after off
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(int(src.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		hole = min(hole, n)
		for p := data; p < hole; {
			k, err := src.ReadAt(buf[:min(int64(len(buf)), hole-p)], p)
			if k > 0 {
				if _, werr := dst.WriteAt(buf[:k], p); werr != nil {
					return werr
				}
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			if k == 0 {
				break
			}
			p += int64(k)
		}
		off = hole
	}
	return dst.Truncate(n)
}
