package endurance

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsbench/fsbench/internal/results"
)

// stateVersion is the version of the state file's layout.
const stateVersion = 1

// State is a card's run so far, written after every round (state.json in the card's state
// directory), and with every snapshot of a simulated card (snap/state.json).
type State struct {
	Version  int    `json:"version"`
	Workload string `json:"workload"`
	// CardSeed drew the card's blocks (simulated cards); Seed the workload's content.
	CardSeed uint64 `json:"card_seed"`
	Seed     uint64 `json:"seed"`
	// Round is the rounds completed.
	Round int `json:"round"`
	// Done: the card reached its end; Result is final.
	Done bool `json:"done,omitempty"`
	// FSID is the filesystem's id (statfs), so that a resumed run finds the card it used.
	FSID string `json:"fsid,omitempty"`
	// Manifest is what the filesystem promised by the end of Round.
	Manifest *Manifest `json:"manifest"`
	// Result is the card's record so far.
	Result results.Endurance `json:"result"`
	// Logical and Device are the bytes written through the filesystem and received by the
	// device so far; CardBytes what the simulated card received (its counters start with it).
	Logical   uint64 `json:"logical_bytes"`
	Device    uint64 `json:"device_bytes"`
	CardBytes uint64 `json:"card_bytes"`
	// Seconds is the time the card's rounds took, over every run.
	Seconds float64 `json:"seconds"`
	// CardError: the simulated card's first refusal is in the record.
	CardError bool `json:"card_error,omitempty"`
	// Pending is round Round+1 with its day done and not yet verified: a simulated card's
	// snapshot is taken then (the filesystem unmounted), and a run resumed from it goes on at
	// the verification.
	Pending *Pending `json:"pending,omitempty"`
}

// Pending is a day done and not yet verified: what it wrote and how it ended.
type Pending struct {
	N int `json:"n"`
	// Start is when the round began; Device and Card what the device and the simulated card
	// had received by then.
	Start  time.Time `json:"start"`
	Device uint64    `json:"device_bytes"`
	Card   uint64    `json:"card_bytes"`
	// Logical and Seconds are the day's bytes through the filesystem and their time;
	// Verified what it checked on the way.
	Logical  uint64  `json:"logical_bytes"`
	Seconds  float64 `json:"seconds"`
	Verified Check   `json:"verified"`
	// Err is why the day failed ("": it did not); IO, ReadOnly and Full say whether it was an
	// I/O error, a read-only filesystem or a full one.
	Err      string `json:"error,omitempty"`
	IO       bool   `json:"io,omitempty"`
	ReadOnly bool   `json:"read_only,omitempty"`
	Full     bool   `json:"full,omitempty"`
}

// Files of a card's state directory.
const (
	stateFile = "state.json"
	snapDir   = "snap"
	csvFile   = "rounds.csv"
)

// loadState reads dir's state file; nil when there is none.
func loadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the endurance state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("the endurance state %s is damaged (%v): move it away to start the card again", filepath.Join(dir, stateFile), err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("the endurance state %s is of version %d, this fsbench reads %d: finish that run with the fsbench that began it, or move it away", filepath.Join(dir, stateFile), st.Version, stateVersion)
	}
	if st.Manifest == nil {
		st.Manifest = NewManifest()
	}
	return &st, nil
}

// save writes the state into dir atomically.
func (st *State) save(dir string) error {
	st.Version = stateVersion
	return results.WriteAtomic(filepath.Join(dir, stateFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(st)
	})
}
