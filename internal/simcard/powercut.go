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
	"sync"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/powercut"
)

// File names of the power-cut machinery inside the mount (see PowerCutCommand).
const (
	// PowerCutFile takes commands (written) and reads as the PowerCutStatus in JSON.
	PowerCutFile = "powercut"
	// CutFile is the card as it is after the cut the last "cut" command built: reads and
	// writes (fsck, a mount's journal replay) go to memory over it, untimed.
	CutFile = "cut"
)

// PowerCutStatus is what the powercut file reads as.
type PowerCutStatus struct {
	// Pos is the card's request position: how many requests (writes, discards, flushes) it
	// received since recording started, recorded or not.
	Pos       uint64 `json:"pos"`
	Recording bool   `json:"recording"`
	// Full: the stream reached its size limit and recording stopped there; Recorded is how
	// many requests it holds (Pos until then).
	Full     bool   `json:"full,omitempty"`
	Recorded uint64 `json:"recorded,omitempty"`
	// Records is the length of the stream the cuts are built from.
	Records int `json:"records,omitempty"`
	// Outcome is what the power-loss model made of the last cut.
	Outcome *powercut.Outcome `json:"outcome,omitempty"`
	// OverlayBlocks is how many 4 KiB blocks the cut's overlay holds (its memory).
	OverlayBlocks int `json:"overlay_blocks,omitempty"`
	// Error is why the last command failed.
	Error string `json:"error,omitempty"`
}

// The commands the powercut file takes, one per write:
//
//	record DIR LIMIT   copy the card to DIR/base.img and record every request after it in DIR
//	                   (at most LIMIT bytes of data)
//	stop               stop recording
//	cut POS SEED [merge-loss]
//	                   build the card as it is after a power cut at request POS (cuts in
//	                   ascending POS: the durable prefix is applied to DIR/base.img in place);
//	                   merge-loss adds that fault to the profile's model
//	reset              forget what was written to the cut since it was built
//	close              release the stream and the cut
const (
	cmdRecord = "record"
	cmdStop   = "stop"
	cmdCut    = "cut"
	cmdReset  = "reset"
	cmdClose  = "close"
)

// powerCut is a card's recording and cut state.
type powerCut struct {
	mu       sync.Mutex
	dir      string
	rec      *powercut.Recorder
	stream   *powercut.Stream
	work     *os.File // DIR/base.img, advanced to the current cut's durable prefix
	applied  int
	cut      *powercut.Overlay // the cut's state over work
	scratch  *powercut.Overlay // what fsck and mounts wrote over the cut
	outcome  *powercut.Outcome
	lastErr  string
	startPos uint64
	// off: the card's power is off (live.go): every request fails until power-on.
	off bool
}

// record is called with c.mu held for every request the model accepted, in model order.
func (c *Card) record(r flash.Request, buf []byte) error {
	pc := &c.pc
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.rec == nil || r.Op == flash.OpRead {
		return nil
	}
	rec := powercut.Record{Op: r.Op, Off: r.Off, Len: r.Len, FUA: r.FUA}
	if m := c.model.LastMerges(); len(m) > 0 {
		rec.Merge = m[0]
	}
	if r.Op != flash.OpWrite {
		rec.Len = min(rec.Len, c.model.Size())
	}
	return pc.rec.Add(rec, buf)
}

// PowerCutStatus returns the recording and cut state.
func (c *Card) PowerCutStatus() PowerCutStatus {
	pc := &c.pc
	pc.mu.Lock()
	defer pc.mu.Unlock()
	st := PowerCutStatus{Outcome: pc.outcome, Error: pc.lastErr}
	if pc.rec != nil {
		st.Recording, st.Pos, st.Full, st.Recorded = true, pc.rec.Len(), pc.rec.Full(), pc.rec.Recorded()
	}
	if pc.stream != nil {
		st.Records = len(pc.stream.Records)
	}
	if pc.scratch != nil {
		st.OverlayBlocks = pc.scratch.Blocks()
	}
	return st
}

// PowerCutCommand runs one command of the powercut file (see cmdRecord and the others).
func (c *Card) PowerCutCommand(line string) error {
	err := c.powerCutCommand(strings.Fields(line))
	c.pc.mu.Lock()
	c.pc.lastErr = ""
	if err != nil {
		c.pc.lastErr = err.Error()
	}
	c.pc.mu.Unlock()
	return err
}

func (c *Card) powerCutCommand(f []string) error {
	if len(f) == 0 {
		return errors.New("empty powercut command")
	}
	if ok, err := c.livePowerCommand(f); ok {
		return err
	}
	pc := &c.pc
	switch f[0] {
	case cmdRecord:
		if len(f) != 3 {
			return errors.New("usage: record DIR LIMIT")
		}
		limit, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("record limit %q: %w", f[2], err)
		}
		return c.startRecording(f[1], limit)
	case cmdStop:
		pc.mu.Lock()
		defer pc.mu.Unlock()
		if pc.rec == nil {
			return errors.New("not recording")
		}
		err := pc.rec.Close()
		pc.rec = nil
		return err
	case cmdCut:
		if len(f) < 3 || len(f) > 4 || (len(f) == 4 && f[3] != "merge-loss") {
			return errors.New("usage: cut POS SEED [merge-loss]")
		}
		pos, err1 := strconv.Atoi(f[1])
		seed, err2 := strconv.ParseUint(f[2], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("cut: %w", err)
		}
		m := powercut.ModelOf(c.model.Profile())
		m.MergeLoss = m.MergeLoss || len(f) == 4
		return c.buildCut(powercut.Cut{Pos: pos, Seed: seed}, m)
	case cmdReset:
		pc.mu.Lock()
		defer pc.mu.Unlock()
		if pc.cut == nil {
			return errors.New("no cut built")
		}
		pc.scratch = powercut.NewOverlay(pc.cut, pc.cut.Size())
		return nil
	case cmdClose:
		pc.mu.Lock()
		defer pc.mu.Unlock()
		return pc.release()
	}
	return fmt.Errorf("unknown powercut command %q", f[0])
}

// release closes the stream and the working image; pc.mu is held.
func (pc *powerCut) release() error {
	var errs []error
	if pc.rec != nil {
		errs = append(errs, pc.rec.Close())
		pc.rec = nil
	}
	if pc.stream != nil {
		errs = append(errs, pc.stream.Close())
		pc.stream = nil
	}
	if pc.work != nil {
		errs = append(errs, pc.work.Close())
		pc.work = nil
	}
	pc.cut, pc.scratch, pc.outcome, pc.applied = nil, nil, nil, 0
	return errors.Join(errs...)
}

// startRecording copies the card to DIR/base.img and starts recording. No request is in
// flight meanwhile (c.io is held exclusively), so the base and the stream fit together.
func (c *Card) startRecording(dir string, limit uint64) error {
	c.io.Lock()
	defer c.io.Unlock()
	pc := &c.pc
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if err := pc.release(); err != nil {
		return err
	}
	if err := copySparse(filepath.Join(dir, powercut.BaseFile), c.backing, int64(c.model.Size())); err != nil {
		return fmt.Errorf("copy the card before recording: %w", err)
	}
	rec, err := powercut.NewRecorder(dir, limit)
	if err != nil {
		return err
	}
	pc.dir, pc.rec = dir, rec
	return nil
}

// buildCut makes the cut's state: the durable prefix applied to the working image (which
// only moves forward, so each recorded request is applied once over all the cuts), and the
// outcome's other writes in an overlay.
func (c *Card) buildCut(cut powercut.Cut, m powercut.Model) error {
	pc := &c.pc
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.rec != nil {
		return errors.New("cut while recording: stop first")
	}
	if pc.dir == "" {
		return errors.New("cut: nothing was recorded")
	}
	if pc.stream == nil {
		s, err := powercut.OpenStream(pc.dir)
		if err != nil {
			return err
		}
		w, err := os.OpenFile(filepath.Join(pc.dir, powercut.BaseFile), os.O_RDWR, 0)
		if err != nil {
			s.Close()
			return fmt.Errorf("open the card's base image: %w", err)
		}
		pc.stream, pc.work, pc.applied = s, w, 0
	}
	if cut.Pos < 0 || cut.Pos > len(pc.stream.Records) {
		return fmt.Errorf("cut at %d: the stream has %d requests", cut.Pos, len(pc.stream.Records))
	}
	o := powercut.Decide(pc.stream.Records, cut, m)
	// The image is advanced in place only to the floor, which no later cut goes below (a
	// write buffer can lose writes from before the last cut's durable prefix); the records
	// from there to this cut's durable prefix go into its overlay.
	floor := powercut.Floor(pc.stream.Records, cut.Pos, m)
	if floor < pc.applied {
		return fmt.Errorf("cut at %d needs the card as at request %d, but it was advanced to %d: build cuts in ascending order", cut.Pos, floor, pc.applied)
	}
	if err := powercut.Apply(pc.work, pc.stream, pc.applied, floor); err != nil {
		return fmt.Errorf("advance the card to request %d: %w", floor, err)
	}
	pc.applied = floor
	size := int64(c.model.Size())
	pc.cut = powercut.NewOverlay(pc.work, size)
	if err := powercut.Apply(pc.cut, pc.stream, floor, o.Durable); err != nil {
		return fmt.Errorf("cut at %d: %w", cut.Pos, err)
	}
	if err := powercut.ApplyOutcome(pc.cut, pc.stream, o); err != nil {
		return fmt.Errorf("cut at %d: %w", cut.Pos, err)
	}
	pc.scratch = powercut.NewOverlay(pc.cut, size)
	pc.outcome = &o
	return nil
}

// cutIO reads or writes the built cut.
func (c *Card) cutIO(p []byte, off int64, write bool) (int, error) {
	pc := &c.pc
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.scratch == nil {
		return 0, errors.New("no cut built")
	}
	if write {
		return pc.scratch.WriteAt(p, off)
	}
	n, err := pc.scratch.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// copySparse copies size bytes of src to a new file dst, skipping holes (the card's backing
// file is sparse, and so is most of a freshly made filesystem).
func copySparse(dst string, src *os.File, size int64) error {
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	return copyData(out, src, size) // no fsync: the simulation is thrown away with its files
}

// powerCutJSON is the powercut file's content.
func (c *Card) powerCutJSON() []byte {
	b, _ := json.Marshal(c.PowerCutStatus()) // a plain struct: cannot fail
	return append(b, '\n')
}
