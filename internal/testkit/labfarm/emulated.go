package labfarm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsbench/fsbench/internal/board"
	"github.com/fsbench/fsbench/internal/powercut"
)

// Emulated asks for emulated ARM boards (internal/board: QEMU under TCG, dropbear, an SD card
// image as /dev/mmcblk0) behind the farm's places instead of sshd "boards": each place gets a
// board of its own, booted when the farm starts, and the place's outlet on the relay is that
// board's power (on boots its QEMU, off ends exactly that QEMU process).
type Emulated struct {
	Arch board.Arch
	// CardSize is each board's SD card (default 256 MiB: mkfs.ext4's discard of the card is
	// written out by QEMU, about 13 s per 256 MiB under TCG).
	CardSize uint64
	// Mem (MiB) and SMP are each board's (default 1024 and 1: two boards share this 2-core
	// machine, and a vCPU more per board only makes them compete harder).
	Mem, SMP int
	// CacheDir is the board cache (default board.DefaultCacheDir/ARCH), StateDir where the
	// boards are recorded (default DIR/boards: the farm's own, so that an `fsbench cleanup`
	// elsewhere leaves them alone, and the farm's Stop ends them).
	CacheDir, StateDir string
	// SimCard, when set, puts each board's card on a simulated card whose power goes with the
	// board's (simcard.go).
	SimCard *SimCard
	// Log receives the boards' progress lines; may be nil.
	Log func(string, ...any)
}

// EmulatedBoard is the emulated board of one place. Its port and card stay the same across
// power cycles, as a real board's address and card outlive its power: a power cycle reboots
// the same board with the same card.
type EmulatedBoard struct {
	Place string
	opt   board.Options

	mu    sync.Mutex
	state *board.State
	boots int
	// card is the board's simulated card (Emulated.SimCard), cardOn whether its power is on;
	// cuts counts its power cuts and outcomes what the model made of each.
	card     *simCardBoard
	cardOn   bool
	cuts     int
	outcomes []powercut.Outcome
	// dead is how many power-ons to come leave the board dead (Kill).
	dead int
}

// PowerOn boots the board unless it runs; it returns once its SSH answers, so that the relay
// answers labgrid's "power on" when the board is up, as a board behind a real switch is
// expected to be soon after.
func (e *EmulatedBoard) PowerOn(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != nil && e.state.Alive() {
		return nil
	}
	if e.dead > 0 {
		// The relay switched, but the board does not come up: a board that died.
		e.dead--
		return nil
	}
	if e.card != nil && !e.cardOn {
		if err := e.powerOnCard(); err != nil {
			return err
		}
		e.cardOn = true
	}
	s, err := board.Up(ctx, e.opt)
	if err != nil {
		return fmt.Errorf("powering on the emulated board of place %s: %w", e.Place, err)
	}
	e.state = s
	e.boots++
	return nil
}

// PowerOff ends exactly the board's QEMU process (by its recorded pid and start time); the
// card image stays, as a card stays in a board that is switched off.
func (e *EmulatedBoard) PowerOff() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state = nil
	if e.card != nil {
		if !e.cardOn {
			return nil
		}
		e.cardOn = false
		if err := e.cutPower(); err != nil {
			return fmt.Errorf("cutting the power of the emulated board of place %s: %w", e.Place, err)
		}
		return nil
	}
	if _, err := board.DownArch(e.opt.StateDir, e.opt.Name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("powering off the emulated board of place %s: %w", e.Place, err)
	}
	return nil
}

// State is the running board (nil while it is off).
func (e *EmulatedBoard) State() *board.State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// Boots counts the board's boots (the first one and each power on since).
func (e *EmulatedBoard) Boots() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.boots
}

// Card is the board's SD card image.
func (e *EmulatedBoard) Card() string { return e.opt.Card }

// Kill leaves the board dead at its next n power-ons (the relay answers, the board never
// boots): a board that does not come back after a cut.
func (e *EmulatedBoard) Kill(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dead += n
}

// Outcomes are what the simulated card's power-loss model made of each of its power cuts.
func (e *EmulatedBoard) Outcomes() []powercut.Outcome {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]powercut.Outcome(nil), e.outcomes...)
}

// stopCard unmounts the board's simulated card; the board must be off.
func (e *EmulatedBoard) stopCard() error {
	if e.card == nil {
		return nil
	}
	return e.card.stop()
}

// startEmulated boots one emulated board per place, all at once (each boot is mostly waiting
// for the guest's kernel under TCG), and returns them with the farm's view of them.
func startEmulated(ctx context.Context, em *Emulated, dir string, places []string) (map[string]*EmulatedBoard, map[string]Board, error) {
	stateDir := em.StateDir
	if stateDir == "" {
		stateDir = filepath.Join(dir, "boards")
	}
	size := em.CardSize
	if size == 0 {
		size = 256 << 20
	}
	mem, smp := em.Mem, em.SMP
	if mem == 0 {
		mem = 1024
	}
	if smp == 0 {
		smp = 1
	}
	boards := map[string]*EmulatedBoard{}
	for _, place := range places {
		port, err := FreePort()
		if err != nil {
			return boards, nil, err
		}
		b := &EmulatedBoard{Place: place, opt: board.Options{Arch: em.Arch, Name: "farm-" + place,
			CacheDir: em.CacheDir, StateDir: stateDir, Card: filepath.Join(dir, "card-"+place+".img"), CardSize: size,
			Port: port, Mem: mem, SMP: smp, BootTimeout: 10 * time.Minute, Log: em.Log}}
		boards[place] = b
		if em.SimCard != nil {
			if b.card, err = serveSimCard(em.SimCard, dir, place, size, em.Log); err != nil {
				return boards, nil, err
			}
			b.opt.Card, b.opt.CardBus, b.opt.NoCardLock = b.card.cardFile(), em.SimCard.Bus, true
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(places))
	for i, place := range places {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = boards[place].PowerOn(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return boards, nil, err
	}
	views := map[string]Board{}
	for place, b := range boards {
		s := b.State()
		// No HostKey: dropbear makes new host keys at each boot (-R), so the farm's ssh
		// configuration cannot pin them; the boards are on the loopback address only.
		views[place] = Board{Address: "127.0.0.1", Port: s.Port, User: "root", Key: s.Key}
	}
	return boards, views, nil
}
