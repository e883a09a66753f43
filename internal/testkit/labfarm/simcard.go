package labfarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/board"
	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/simcard"
)

// SimCard puts each emulated board's card on a simulated card (internal/simcard, served over
// FUSE in this process): QEMU opens the served card file, so that every request the board
// sends reaches the card's model, and switching the board off at the relay kills QEMU at once
// and applies the profile's power-loss model to the card as it stands (simcard's power-off),
// before the board boots again from what is left. The boards are then known cards: a live
// power-cut campaign on them can be set beside the simulated card's replayed cuts.
type SimCard struct {
	// Profile is the card's profile: a built-in name or a profile file.
	Profile string
	// Bus is the board's view of the card (board.CardSD: /dev/mmcblk0, no cache, no flush;
	// board.CardVirtio: /dev/vda, a cache the guest flushes, for a profile whose model has
	// one, as an eMMC's).
	Bus string
	// Partitions gives the card an MBR with that many equal partitions (0: none).
	Partitions int
}

// simCardBoard is one board's served card.
type simCardBoard struct {
	dir    string // the FUSE mount point
	rec    string // the recording's directory, on the host's disk
	cancel context.CancelFunc
	done   chan error
}

// cardFile is the served card, which QEMU opens.
func (s *simCardBoard) cardFile() string { return filepath.Join(s.dir, simcard.CardFile) }

// command writes one command to the card's powercut file.
func (s *simCardBoard) command(line string) error {
	if err := os.WriteFile(filepath.Join(s.dir, simcard.PowerCutFile), []byte(line), 0o600); err != nil {
		st, _ := s.status()
		return fmt.Errorf("simulated card: %s: %w (%s)", line, err, st.Error)
	}
	return nil
}

// status reads the card's powercut status.
func (s *simCardBoard) status() (simcard.PowerCutStatus, error) {
	var st simcard.PowerCutStatus
	b, err := os.ReadFile(filepath.Join(s.dir, simcard.PowerCutFile))
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// stop unmounts the card (its QEMU must be gone).
func (s *simCardBoard) stop() error {
	s.cancel()
	select {
	case err := <-s.done:
		return err
	case <-time.After(time.Minute):
		return fmt.Errorf("the simulated card at %s did not stop within a minute", s.dir)
	}
}

// serveSimCard serves place's card in dir and returns it once its card file is there.
func serveSimCard(sc *SimCard, dir, place string, size uint64, logf func(string, ...any)) (*simCardBoard, error) {
	prof, err := flash.Lookup(sc.Profile)
	if err != nil {
		return nil, err
	}
	s := &simCardBoard{dir: filepath.Join(dir, "simcard-"+place), rec: filepath.Join(dir, "simcard-"+place+"-rec"), done: make(chan error, 1)}
	for _, d := range []string{s.dir, s.rec} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	cfg := simcard.Config{Profile: prof, Size: size, Dir: s.dir, Backing: filepath.Join(dir, "card-"+place+".backing"),
		TimeScale: 0, PathOffset: "off", Log: logWriter(logf)}
	go func() {
		_, err := simcard.Serve(ctx, cfg)
		s.done <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(s.cardFile()); err == nil {
			break
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("the simulated card of place %s: %w", place, err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			return nil, fmt.Errorf("the simulated card of place %s did not appear within 30 s", place)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sc.Partitions > 0 {
		if _, _, err := blockdev.WriteMBR(s.cardFile(), sc.Partitions); err != nil {
			return nil, errors.Join(err, s.stop())
		}
	}
	return s, nil
}

// logWriter turns the card server's lines into log calls.
type logWriter func(string, ...any)

func (w logWriter) Write(p []byte) (int, error) {
	if w != nil {
		for _, l := range strings.Split(strings.TrimSpace(string(p)), "\n") {
			w("%s", l)
		}
	}
	return len(p), nil
}

// powerOnCard switches the card's power on before its board boots: it records from here.
func (e *EmulatedBoard) powerOnCard() error {
	if e.card == nil {
		return nil
	}
	return e.card.command(fmt.Sprintf("power-on %s %d", e.card.rec, uint64(1)<<30))
}

// cutPower kills the board's QEMU at once and applies the card's power-loss model to what it
// received since power-on; the outcome is kept (Outcomes).
func (e *EmulatedBoard) cutPower() error {
	if _, err := board.PowerCutArch(e.opt.StateDir, e.opt.Name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	e.cuts++
	if err := e.card.command(fmt.Sprintf("power-off %d", 1000+e.cuts)); err != nil {
		return err
	}
	st, err := e.card.status()
	if err != nil {
		return err
	}
	if st.Outcome != nil {
		e.outcomes = append(e.outcomes, *st.Outcome)
	}
	return nil
}
