package targets

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/fsbench/fsbench/internal/plan"
)

// Capability is something a target can do. The engine asks a target for its capabilities,
// never for its kind, so that a new kind runs through it as soon as it says what it can do.
type Capability uint

// The capabilities.
const (
	// LocalDevice: the target prepares a block device (or a raw flash chip) on this machine and
	// the engine runs the tests on it; it implements Local.
	LocalDevice Capability = 1 << iota
	// RemoteRunner: the target hands the whole run to another fsbench (in a guest, on a board)
	// and brings its results back; it implements Remote.
	RemoteRunner
	// UserDevice: the device is the user's own, named twice: its size is known once it is
	// checked, the card is checked for holding what it announces, windows over it are opened
	// as over a device.
	UserDevice
	// CardModel: the device is a simulated card (the flash model): its counters, its wear and
	// its profile are recorded, and its identity is read like a real card's.
	CardModel
	// RawFlash: the device is a raw NAND chip, not a block device.
	RawFlash
	// PowerControl: the run can cut the device's power (the powercut suite).
	PowerControl
)

// Has reports whether c includes every capability of x.
func (c Capability) Has(x Capability) bool { return c&x == x }

var capNames = []string{"local block device", "remote runner", "user's device", "card model", "raw flash", "power control"}

// String lists the capabilities, for messages.
func (c Capability) String() string {
	var out []string
	for i, n := range capNames {
		if c.Has(1 << i) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// A Maker makes a target of its kind from a parsed spec.
type Maker func(spec plan.TargetSpec, opt Options) (Target, error)

var registry = struct {
	sync.RWMutex
	m map[plan.TargetKind]Maker
}{m: map[plan.TargetKind]Maker{}}

// Register makes the kind available to New. It panics when the kind is registered twice: two
// packages claiming one --target name is a programming error.
func Register(kind plan.TargetKind, make Maker) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[kind]; dup {
		panic("target kind " + string(kind) + " registered twice")
	}
	registry.m[kind] = make
}

// Base is what a target is made from: the --target it was parsed from, the run's options and
// the capabilities its kind declared. A kind whose capabilities do not depend on the spec
// embeds it, has Spec and Caps from it, and registers with RegisterKind.
type Base struct {
	spec plan.TargetSpec
	caps Capability
	// Opt is the run's options.
	Opt Options
}

// Spec is the --target the target was made from.
func (b Base) Spec() plan.TargetSpec { return b.spec }

// Caps is what its kind declared it can do.
func (b Base) Caps() Capability { return b.caps }

// RegisterKind registers a kind, what its targets can do, and how one is made from a Base:
// make wraps it in the kind's type (func(b targets.Base) targets.Target { return &imageTarget{b} }).
func RegisterKind(kind plan.TargetKind, caps Capability, make func(Base) Target) {
	Register(kind, func(spec plan.TargetSpec, opt Options) (Target, error) {
		return make(Base{spec: spec, caps: caps, Opt: opt}), nil
	})
}

// Kinds lists the registered kinds, sorted.
func Kinds() []plan.TargetKind {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]plan.TargetKind, 0, len(registry.m))
	for k := range registry.m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// New makes the target a spec names, with the Maker its kind registered.
func New(spec plan.TargetSpec, opt Options) (Target, error) {
	if opt.TimeScale == 0 {
		opt.TimeScale = 1
	}
	if spec.Kind == "" { // the zero spec is the default target
		spec.Kind = plan.TargetImage
	}
	registry.RLock()
	make, ok := registry.m[spec.Kind]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("--target %s is not available in this fsbench (its kinds: %v)", spec, Kinds())
	}
	return make(spec, opt)
}

// AsLocal is t as a Local target, or an error when it does not declare LocalDevice or does
// not implement Local.
func AsLocal(t Target) (Local, error) {
	l, ok := t.(Local)
	if !ok || !t.Caps().Has(LocalDevice) {
		return nil, fmt.Errorf("--target %s cannot prepare a device here (capabilities: %s)", t.Spec(), t.Caps())
	}
	return l, nil
}

// AsRemote is t as a Remote target, or an error when it does not declare RemoteRunner or does
// not implement Remote.
func AsRemote(t Target) (Remote, error) {
	r, ok := t.(Remote)
	if !ok || !t.Caps().Has(RemoteRunner) {
		return nil, fmt.Errorf("--target %s cannot run elsewhere (capabilities: %s)", t.Spec(), t.Caps())
	}
	return r, nil
}
