package targets

import (
	"context"
	"io"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/session"
)

// A Target is where a run's filesystems are made: one implementation per kind of --target,
// registered with Register (kinds.go). The engine never asks which kind a target is: it asks
// for its capabilities (Caps), and a target that declares LocalDevice implements Local, one that
// declares RemoteRunner implements Remote (AsLocal, AsRemote check it).
type Target interface {
	// Spec is the --target this target was made from.
	Spec() plan.TargetSpec
	// Caps is what this target can do.
	Caps() Capability
	// Check refuses, before anything is created, what this target cannot do with cfg: a suite
	// it cannot run, a size it cannot have, a device that is in use. It only reads.
	Check(cfg plan.Config) error
}

// Expander is a target that runs other variants than the configured ones (raw NAND runs each
// variant on each partition size); every other target runs the configured ones (Expand).
type Expander interface {
	Expand(cfg plan.Config) []Expanded
}

// Describer is a target that measures in its own way: its Methods are added to results.json's
// methods, and a value "" removes a method the block-device default has and it does not.
type Describer interface {
	Methods(cfg plan.Config) map[string]string
}

// Expand is the variants t runs: its own Expand, else the configured ones.
func Expand(t Target, cfg plan.Config) []Expanded {
	if e, ok := t.(Expander); ok {
		return e.Expand(cfg)
	}
	out := make([]Expanded, len(cfg.Variants))
	for i, v := range cfg.Variants {
		out[i] = Expanded{Variant: v}
	}
	return out
}

// Methods is how t measures beyond the block-device default (nil: the default).
func Methods(t Target, cfg plan.Config) map[string]string {
	if d, ok := t.(Describer); ok {
		return d.Methods(cfg)
	}
	return nil
}

// Remote is a target that hands the whole run to another fsbench (in a QEMU guest, on a board)
// and brings its results back into the session's results directory.
type Remote interface {
	Target
	// Run carries out req elsewhere and returns its results, saved in s.Dir. What it makes on
	// this machine is recorded in s's ledger and undone by s.Close.
	Run(ctx context.Context, s *session.Session, req plan.Request) (*results.Run, error)
}

// Expanded is a variant as a target runs it.
type Expanded struct {
	Variant plan.Variant
	// Base is the configured variant it comes from, and PartitionBytes the raw-flash partition
	// it runs on (raw NAND only).
	Base           string
	PartitionBytes uint64
}

// Local is a target that prepares a device on this machine.
type Local interface {
	Target
	// Prepare makes what the run works on, recording each part in s's ledger before making
	// it and registering its undoing with s.OnClose, so that s.Close (or, after a kill, the
	// ledger's cleanup) undoes it in the reverse order.
	Prepare(ctx context.Context, s *session.Session, cfg plan.Config) (*Prepared, error)
}

// Prepared is a local target ready for the tests.
type Prepared struct {
	// Device and DeviceName are the block device (/dev/loop3, loop3); empty on raw flash.
	Device, DeviceName string
	// Size is the device's size in bytes, which the dataset scales to.
	Size uint64
	// Identity is the device's identity from sysfs.
	Identity *blockdev.Identity
	// Extra is what only this kind's device yields (a simulated card's counters, its profile
	// and its power cuts; a raw NAND chip), or nil. The engine asks it for the interfaces it
	// consumes (internal/runner/kinddata.go), which the kind's value implements: so this
	// package, the contract, knows nothing of cards and chips, and a kind that yields none of
	// it leaves Extra nil.
	Extra any
	// Backing is the file that finally holds the device's data when the device itself does
	// not say (the simulated card's data file, behind FUSE): its disk carries the run's I/O.
	Backing string
	// Underlying is what a partition window (a loop device with an offset) is made over: the
	// image file, the simulated card's file, or the real device.
	Underlying string
	// Result describes the target for results.json.
	Result results.Target
	// Notes are lines for the log (a warning that direct I/O was refused, ...).
	Notes []string
	// Health, when set, says whether the target itself still works (the filesystem holding
	// an image is not full, the card server still runs): the runner asks after a repetition
	// with a failed test, so that a broken target is reported as such, not as the tested
	// filesystem's failure.
	Health func() error
}

// Options are what targets are given: the run's request (its configuration, target spec and
// every setting a target can take, read from run's flags), and the host's means of running and
// reporting.
type Options struct {
	plan.Request
	// Self is the argv prefix that runs fsbench's own command line (the card server is started
	// as `<Self> simcard serve`); empty: this executable.
	Self []string
	// Log receives progress lines; may be nil.
	Log func(format string, args ...any)
	// Console receives a guest's or board's console output as it comes; may be nil.
	Console io.Writer
}

// Logf writes a progress line to o.Log, if set.
func (o Options) Logf(format string, args ...any) {
	if o.Log != nil {
		o.Log(format, args...)
	}
}

// CheckBlockSuite refuses the raw-flash suite on a block device.
func CheckBlockSuite(cfg plan.Config) error {
	if cfg.FlashSuite() {
		return plan.Refusef("the free-electrons suite runs on raw NAND, not on a block device: use --target vm (a guest kernel with nandsim) or --target nandsim on a kernel that has it")
	}
	return cfg.CheckSuiteMix()
}

// Facts are what a run needs to know about the machine it runs on to decide which variants it
// can make: fs.System is the real one; tests give fakes.
type Facts interface {
	Check(k fs.Kind) fs.Availability
	HasModule(name string) bool
}

// Skipper is a target that cannot run some filesystems whatever the machine has (raw NAND runs
// no block-device filesystem): Skip gives the reason, or "".
type Skipper interface {
	Skip(k fs.Kind, facts Facts) string
}

// CheckNoPowerCut refuses the powercut suite on a target whose power fsbench cannot cut (a
// real device or board: a later change wires power switches), or cannot cut yet (an image, a
// guest), saying why.
func CheckNoPowerCut(cfg plan.Config, what, why string) error {
	if cfg.Suite.Has(plan.PowerCutSuite) {
		return plan.Refusef("suite powercut on %s: %s; nothing was run. Cut the power of a simulated card instead: --target simcard:PROFILE", what, why)
	}
	return nil
}

// CheckCardEnds refuses the endurance suite on a plain image file (what names it): a file on
// this machine's disk never wears out, so the suite would run round after round, writing that
// disk, until Ctrl-C.
func CheckCardEnds(cfg plan.Config, what string) error {
	if cfg.Suite.Has(plan.EnduranceSuite) {
		return plan.Refusef("suite endurance on %s: an image file never wears out, so the card would run round after round, writing this machine's disk, until stopped; nothing was run. Run a card to its end on a simulated card (--target simcard:PROFILE --endurance-scale 0.01: minutes) or a real one (--target device:/dev/X --destroy /dev/X)", what)
	}
	return nil
}

// NoSwitch is why a real device's power is not cut.
const NoSwitch = "a real power cut needs a power switch fsbench can drive, a board's: labgrid:PLACE/dev/X (its power resource) or ssh://HOST/dev/X with --power-off CMD --power-on CMD; nothing destructive is run without one"
