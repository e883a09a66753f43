package target

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/nand"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/powercut"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/simcard"
)

// A Target is where a run's filesystems are made: one implementation per kind of --target
// (image.go, simcard.go, device.go, nandsim.go, vm.go, ...). Every target is either Local (it
// prepares a device on this machine and the engine runs the tests on it) or Remote (it hands
// the whole run to another fsbench, in a guest or on a board, and brings its results back).
type Target interface {
	// Spec is the --target this target was made from.
	Spec() plan.TargetSpec
	// Check refuses, before anything is created, what this target cannot do with cfg: a suite
	// it cannot run, a size it cannot have, a device that is in use. It only reads.
	Check(cfg plan.Config) error
	// Expand turns the configured variants into the ones a run makes: the same ones, except on
	// raw NAND, where each variant runs on each partition size.
	Expand(cfg plan.Config) []Expanded
	// Methods describes how this target measures, for results.json's methods; a value ""
	// removes a method the block-device default has and this target does not.
	Methods(cfg plan.Config) map[string]string
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
	Prepare(ctx context.Context, s *Session, cfg plan.Config) (*Prepared, error)
}

// Prepared is a local target ready for the tests.
type Prepared struct {
	// Device and DeviceName are the block device (/dev/loop3, loop3); empty on raw flash.
	Device, DeviceName string
	// Size is the device's size in bytes, which the dataset scales to.
	Size uint64
	// Identity is the device's identity from sysfs.
	Identity *blockdev.Identity
	// Chip and Timings are the simulated NAND chip (nandsim); nil on a block device.
	Chip    *nand.Chip
	Timings nand.Timings
	// Card reads the simulated card's counters and its server's overhead (simcard); nil
	// otherwise.
	Card func() (simcard.Stats, error)
	// PowerCut records the simulated card's request stream and builds the card after a power
	// cut (the powercut suite); nil on every other target.
	PowerCut powercut.Card
	// CardProfile is the simulated card's profile, which traces are replayed through too.
	CardProfile string
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

// Options are what targets need beyond their spec and the configuration.
type Options struct {
	// Destroy must name a device target's device again, as a deliberate second confirmation.
	Destroy string
	// Image is the image file to create (image target); empty: one in the work directory.
	Image string
	// KeepImage leaves the image file after the run.
	KeepImage bool
	// DirectIO attaches loop devices with direct I/O (the default).
	DirectIO bool
	// TimeScale multiplies the simulated card's modelled waits (1 = real time).
	TimeScale float64
	// Self is the argv prefix that runs fsbench's own command line (the card server is started
	// as `<Self> simcard serve`); empty: this executable.
	Self []string
	// NANDNoDelays turns off nandsim's simulated chip timings.
	NANDNoDelays bool
	// Kernel is the vm target's guest kernel (empty: the newest /boot/vmlinuz-*).
	Kernel string
	// Log receives progress lines; may be nil.
	Log func(format string, args ...any)
	// Console receives a guest's or board's console output as it comes; may be nil.
	Console io.Writer
	// SSHOptions are more arguments for the ssh client (-F FILE, -o Option=value).
	SSHOptions []string
	// RemoteBinary is the fsbench binary to put on a board (default: the release binary for
	// its architecture next to this one, or make cross's dist/).
	RemoteBinary string
	// RemoteDir is where fsbench keeps its binary and runs on a board (DefaultRemoteDir).
	RemoteDir string
	// LinkTimeout is how long a board's run goes on without hearing from the host before it
	// stops in order (0: DefaultLinkTimeout); the host writes to it every quarter of that.
	LinkTimeout time.Duration
	// LabgridCoordinator is the labgrid coordinator's HOST:PORT (empty: $LG_COORDINATOR, else
	// labgrid's default) and LabgridClient labgrid-client's path (empty:
	// $FSBENCH_LABGRID_CLIENT, else PATH): --target labgrid:PLACE.
	LabgridCoordinator, LabgridClient string
	// PowerCycle power-cycles a labgrid place's board before the run, and BootTimeout is how
	// long its SSH server may then take to answer (0: 5 minutes).
	PowerCycle  bool
	BootTimeout time.Duration
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		o.Log(format, args...)
	}
}

// New makes the target a spec names.
func New(spec plan.TargetSpec, opt Options) (Target, error) {
	if opt.TimeScale == 0 {
		opt.TimeScale = 1
	}
	switch spec.Kind {
	case plan.TargetImage, "": // the zero spec is the default target
		return &imageTarget{opt: opt}, nil
	case plan.TargetSimcard:
		return &simcardTarget{spec: spec, opt: opt}, nil
	case plan.TargetDevice:
		return &deviceTarget{spec: spec, opt: opt}, nil
	case plan.TargetNandsim:
		return &nandsimTarget{opt: opt}, nil
	case plan.TargetVM:
		return &vmTarget{spec: spec, opt: opt}, nil
	case plan.TargetSSH:
		return newSSHTarget(spec, opt), nil
	case plan.TargetLabgrid:
		return &labgridTarget{spec: spec, opt: opt}, nil
	}
	return nil, fmt.Errorf("--target %s is not available yet", spec)
}

// sameVariants is the Expand of every target but raw NAND.
func sameVariants(cfg plan.Config) []Expanded {
	out := make([]Expanded, len(cfg.Variants))
	for i, v := range cfg.Variants {
		out[i] = Expanded{Variant: v}
	}
	return out
}

// checkBlockSuite refuses the raw-flash suite on a block device.
func checkBlockSuite(cfg plan.Config) error {
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

// checkNoPowerCut refuses the powercut suite on a target whose power fsbench cannot cut (a
// real device or board: a later change wires power switches), or cannot cut yet (an image, a
// guest), saying why.
func checkNoPowerCut(cfg plan.Config, what, why string) error {
	if cfg.Suite.Has(catalog.SuitePowerCut) {
		return plan.Refusef("suite powercut on %s: %s; nothing was run. Cut the power of a simulated card instead: --target simcard:PROFILE", what, why)
	}
	return nil
}

// noSwitch is why a real device's power is not cut.
const noSwitch = "a real power cut needs a power switch fsbench can drive, which is not wired yet, and nothing destructive is run without one"
