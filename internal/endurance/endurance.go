// Package endurance runs a card to its end: on a freshly made filesystem, a day of a device's
// writes (a workload), round after round, each round's promises verified from the card, until
// the card fails; it records when each milestone came (the first I/O error, the card turning
// read-only, the first wrong data, the end), how the card's bad blocks grew, what the
// filesystem did about it and how fast it still was. Its state after every round lives in the
// results directory, so that a run killed, a machine rebooted or a card reader plugged back in
// goes on from the last round it completed.
//
// What a round needs of the filesystem, of the card and of the measuring engine comes in by
// small interfaces (FS, Card, Env), so that the loop runs on a simulated card, a real one or a
// fake in a unit test alike.
package endurance

import (
	"context"
	"time"

	"github.com/fsbench/fsbench/internal/flash"
	"github.com/fsbench/fsbench/internal/results"
)

// Card is the simulated card's wear as the loop drives it; a real card has none (nil).
type Card interface {
	// Renew puts a fresh card in (emptied; its blocks' endurances drawn with seed).
	Renew(seed uint64) error
	// Status is the card's wear now: bad blocks, spares, health, host bytes written.
	Status() (Status, error)
	// Save writes the card's state (its model and its data) into dir; Restore makes the card
	// what dir holds. The filesystem is unmounted meanwhile.
	Save(dir string) error
	Restore(dir string) error
}

// Status is a card's wear now.
type Status struct {
	flash.WearOut
	// Behaviour is what the card does at its end (flash.EOLReadOnly, ...).
	Behaviour string `json:"behaviour"`
	// HostBytesWritten is what the card received since it was put in.
	HostBytesWritten uint64 `json:"host_bytes_written"`
}

// FS is the filesystem under test as a round needs it: made, mounted, unmounted, and what it
// says about itself.
type FS interface {
	// Dir is where the filesystem is mounted.
	Dir() string
	// Make makes a fresh filesystem on the device and mounts it.
	Make(ctx context.Context) error
	// Mount mounts the filesystem the device holds; Unmount unmounts it (nothing when it is
	// not mounted).
	Mount(ctx context.Context) error
	Unmount(ctx context.Context) error
	// State is what the filesystem says about itself now: mounted read-only by itself, its
	// own error counters.
	State() FSState
	// DeviceBytesWritten is what the device received so far (its sysfs counter), for a real
	// card's progress.
	DeviceBytesWritten() (uint64, error)
}

// FSState is what a mounted filesystem says about itself.
type FSState struct {
	// ReadOnly: the filesystem is mounted read-only (it remounted itself after an error).
	ReadOnly bool `json:"read_only,omitempty"`
	// Errors counts the errors it recorded (ext4's errors_count, btrfs's device error
	// counters: read, write, flush); Corruption the data or metadata checksum failures it
	// noticed (btrfs's corruption_errs). -1: it keeps no such counter.
	Errors     int64 `json:"errors"`
	Corruption int64 `json:"corruption"`
}

// Env is what a workload's day runs with: the mounted filesystem and the engine's measuring.
type Env struct {
	// Dir is the mounted filesystem.
	Dir string
	// Timed measures fn as a test (time, device counters, and the block trace with its
	// lifetime estimate when tracing is on).
	Timed func(test string, logical uint64, fn func() error) (results.Measurement, error)
	// RunTest runs one of the engine's own tests (the Bootlin write tests) on the filesystem.
	RunTest func(ctx context.Context, test string) ([]results.Measurement, error)
	// Source and Video are the dataset's tree and its incompressible file (for the Bootlin
	// workload), Copies and VideoCopies how many of each its tests write.
	Source, Video       string
	Copies, VideoCopies int
	// Seed makes the day's content.
	Seed uint64
}

// Day is what a workload's day did.
type Day struct {
	// Logical is the bytes written through the filesystem; Seconds the time its writes took.
	Logical uint64
	Seconds float64
	// Measurements are the day's timed measurements (the first day's carry the lifetime
	// estimate of their block requests).
	Measurements []results.Measurement
	// Verified is what the day checked of its own promises on the way (the Bootlin workload
	// verifies its dataset copies before it removes them).
	Verified Check
}

// Workload is a day of a device's writes.
type Workload interface {
	Name() string
	// Day performs day number n (1-based) on env.Dir, recording in m what the filesystem
	// promised (what it made durable by fsync or syncfs) as it goes.
	Day(ctx context.Context, env Env, n int, m *Manifest) (Day, error)
	// Resume brings the filesystem back to what m says was promised, after a day that was
	// killed half done (a real card keeps what it wrote): what was never promised goes.
	Resume(ctx context.Context, env Env, m *Manifest) error
}

// Params are the endurance suite's sizes (its [endurance] table).
type Params struct {
	// Workload names the day: "bootlin", "logging" or "update".
	Workload string `json:"workload"`
	// DayBytes is how much the logging and update workloads write a day (0: their defaults).
	DayBytes uint64 `json:"day_bytes,omitempty"`
	// AfterError is how many rounds a card that still works is run after its first error
	// (a wrong-data card goes on serving): the end then is the run's, not the card's.
	AfterError int `json:"after_error"`
	// MaxRounds bounds a card's rounds (0: none).
	MaxRounds int `json:"max_rounds,omitempty"`
	// Seed makes the cards (their blocks' endurances) and the workloads' content: card N of a
	// run is the same card in every run with the same seed.
	Seed uint64 `json:"seed"`
	// SnapshotEvery is how often the simulated card's state is saved for a resumed run (a
	// round is saved when at least this long has passed since the last save).
	SnapshotEvery time.Duration `json:"snapshot_every"`
}

// DefaultParams are the suite's defaults.
func DefaultParams() *Params {
	return &Params{Workload: WorkloadBootlin, AfterError: 3, Seed: 1, SnapshotEvery: time.Minute}
}
