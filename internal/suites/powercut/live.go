package powercut

import (
	"context"
	"time"

	"github.com/fsbench/fsbench/internal/plan"
	pcut "github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/results"
)

// LiveCut is one cut of a live power-cut campaign (a real board's power switched off while the
// workload ran), as the board's check found it and the host recorded it: the same figures as a
// cut of the simulated card (cutResult), with what only a live cut has. Its JSON is what the
// board sends back and what the campaign keeps, cut by cut, to resume.
type LiveCut struct {
	// N is the cut's number in its variant's campaign (from 1), Seed what chose its moment.
	N    int    `json:"n"`
	Seed uint64 `json:"seed"`
	// Pos is the host's position at the cut (pcut.Promises), InFlight whether an
	// operation that acknowledges was in flight, Acks and Ops the acknowledgements and the
	// operations the host heard of.
	Pos      uint64 `json:"pos"`
	InFlight bool   `json:"in_flight,omitempty"`
	Acks     int    `json:"acks"`
	Ops      int    `json:"ops"`
	// Lost: the board did not come back after the cut, even after a second power cycle; the
	// cut was not checked. Recycled: it came back only after a second power cycle.
	Lost     bool `json:"lost,omitempty"`
	Recycled bool `json:"recycled,omitempty"`
	// Remade: the check left the filesystem unrecoverable, and it was made again for the next.
	Remade bool `json:"remade,omitempty"`
	// WorkloadSeconds is from the workload's start to the cut, BootSeconds from power on to
	// the board's SSH server answering, CutSeconds the whole cut (boot to recorded).
	WorkloadSeconds float64 `json:"workload_s"`
	BootSeconds     float64 `json:"boot_s"`
	CutSeconds      float64 `json:"cut_s"`

	Mounted         bool       `json:"mounted"`
	RecoverySeconds float64    `json:"recovery_s"`
	Fsck            string     `json:"fsck"`
	Repair          string     `json:"repair,omitempty"`
	Usable          bool       `json:"usable"`
	Check           pcut.Check `json:"check"`
	UnsyncedSeconds float64    `json:"unsynced_s"`
	Leaked          uint64     `json:"leaked,omitempty"`
	LeakedOK        bool       `json:"leaked_ok,omitempty"`
	TimedOut        int        `json:"timed_out,omitempty"`
}

// Whole is the simulated card's rule: mounted without repair, checked clean (or no checker),
// every promise kept.
func (c LiveCut) Whole() bool { return !c.Lost && c.result().whole() }

func (c LiveCut) result() cutResult {
	return cutResult{mounted: c.Mounted, recovery: time.Duration(c.RecoverySeconds * float64(time.Second)), fsck: c.Fsck,
		repair: c.Repair, usable: c.Usable, check: c.Check, unsynced: time.Duration(c.UnsyncedSeconds * float64(time.Second)),
		leaked: c.Leaked, leakedOK: c.LeakedOK, timedOut: c.TimedOut}
}

// deviceCard is a real device as the cut checker sees a card: the power was cut for real, so
// there is no cut to build and nothing known of what the card lost; the device itself is what
// is checked, and it is never detached.
type deviceCard struct{ dev string }

func (deviceCard) Record(uint64) (string, error) { return "", nil }
func (deviceCard) Pos() (uint64, error)          { return 0, nil }
func (deviceCard) Stop() error                   { return nil }
func (deviceCard) Cut(c pcut.Cut, _ bool) (pcut.Outcome, error) {
	return pcut.Outcome{Cut: c, Durable: c.Pos}, nil
}
func (deviceCard) Reset() error { return nil }
func (d deviceCard) Attach(context.Context) (string, func() error, error) {
	return d.dev, func() error { return nil }, nil
}
func (deviceCard) Close() error { return nil }

// CheckDevice checks the filesystem on dev after a live cut exactly as a cut of the simulated
// card is checked (mount and its recovery time, the promises of man at the host's position pos,
// the checker, the repair where it failed, a second mount after a repair), and returns the
// cut's figures. The workload's files are in the directory "powercut" of the filesystem.
func (k CutChecker) CheckDevice(ctx context.Context, dev string, man *pcut.Manifest, pos uint64) (LiveCut, error) {
	res, err := k.check(ctx, deviceCard{dev}, man, pcut.Cut{Pos: int(pos), Kind: "live"}, false)
	return LiveCut{Pos: pos, Mounted: res.mounted, RecoverySeconds: res.recovery.Seconds(), Fsck: res.fsck, Repair: res.repair,
		Usable: res.usable, Check: res.check, UnsyncedSeconds: res.unsynced.Seconds(), Leaked: res.leaked, LeakedOK: res.leakedOK,
		TimedOut: res.timedOut}, err
}

// SummarizeLive gives a live campaign's cuts of one variant the figures of the simulated card's
// suite (summarizeCuts: whole, mounted, checker, repaired, promises, recovery, unsynced work
// lost) with what only live cuts have (results.LivePowerCut). Whose fault a broken promise is
// cannot be told on a real card, whose power-loss behaviour is unknown: the card-damage
// figures, and the broken promises charged to the filesystem, stay empty; the broken promises
// are in AckLossCuts and AtomicityCuts. The campaign's pace is over the cuts' own times, so
// that a campaign stopped and resumed is not charged for the pause.
func SummarizeLive(cuts []LiveCut, switchName string) results.PowerCut {
	var checked []cutResult
	live := &results.LivePowerCut{Switch: switchName}
	var boots, work []float64
	var elapsed time.Duration
	for _, c := range cuts {
		elapsed += time.Duration(c.CutSeconds * float64(time.Second))
		if c.BootSeconds > 0 {
			boots = append(boots, c.BootSeconds)
		}
		if c.Lost {
			live.Lost++
			continue
		}
		checked = append(checked, c.result())
		work = append(work, c.WorkloadSeconds)
		live.AcksHeard += c.Acks
		if c.InFlight {
			live.InFlight++
		}
		if c.Recycled {
			live.Recycled++
		}
		if c.Remade {
			live.Remade++
		}
	}
	st := results.PowerCut{Profile: "live", Live: live}
	summarizeCuts(&st, checked, elapsed)
	st.Acks = live.AcksHeard
	live.BrokenCuts = st.FSBrokenCuts.Count // no cut has card damage known: every broken one is here
	// Unknown on a real card: nothing says what it destroyed outside what the filesystem
	// wrote since its last flush.
	st.FSBrokenCuts, st.FSAckLossCuts, st.FSAtomicityCuts = results.Proportion{}, 0, 0
	st.CardDamageCuts = results.Proportion{}
	live.BootP50Seconds, _ = medianMax(boots)
	live.WorkloadP50Seconds, _ = medianMax(work)
	if elapsed > 0 {
		live.CutsPerHour = float64(len(cuts)) / elapsed.Hours()
	}
	return st
}

// ParamsOf is the powercut suite's sizes in p, or their defaults: for the live campaign, which
// runs outside a repetition.
func ParamsOf(p plan.SuiteParams) *Params {
	if pc, ok := p.Get(plan.PowerCutSuite).(*Params); ok {
		return pc
	}
	return Default()
}
