package plan

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// TargetKind names where a run's device comes from.
type TargetKind string

// The built-in target kinds. image, simcard, device and nandsim run here; vm, ssh and labgrid
// hand the run to another fsbench (a QEMU guest, a board over SSH, a board of a labgrid farm)
// and bring its results back. Each kind's package under internal/targets registers its --target
// form (RegisterTargetForm); this package knows only the names, for the fields of TargetSpec.
const (
	TargetImage   TargetKind = "image"   // a sparse image file on a loop device
	TargetSimcard TargetKind = "simcard" // the flash model served as a file (FUSE), on a loop device
	TargetDevice  TargetKind = "device"  // a real block device, named twice (--destroy)
	TargetNandsim TargetKind = "nandsim" // a simulated raw NAND chip (suite free-electrons)
	TargetVM      TargetKind = "vm"      // a guest kernel under QEMU, with an emulated SD card
	TargetSSH     TargetKind = "ssh"     // a board reached with the user's OpenSSH client
	TargetLabgrid TargetKind = "labgrid" // a place of a labgrid farm, reached as over SSH
)

// DefaultTarget is the kind of the empty --target (and of the zero TargetSpec).
const DefaultTarget = TargetImage

// DefaultCardProfile is the simulated card's profile when a target names none.
const DefaultCardProfile = "sd-typical"

// TargetSpec is a parsed --target. It is parsed once, by ParseTarget, and passed around typed.
type TargetSpec struct {
	Kind TargetKind
	// Profile is the simulated card's profile (a built-in name or a profile file): simcard.
	Profile string
	// Device is the block device to destroy: device (and the device on a board: see Inner).
	Device string
	// Inner is what the guest or the board runs on: for vm, the guest's SD card (nil: an image
	// file; a simcard spec: the card is simulated on the host); for ssh and labgrid, the
	// target on the board (device:/dev/X, image, simcard:PROFILE).
	Inner *TargetSpec
	// User, Host and Port address a board over SSH (empty and 0: the user's ssh_config decides).
	User, Host string
	Port       int
	// Place is the labgrid place.
	Place string
	// Arg is what follows "KIND:" for a kind whose form keeps it as it is (TargetForm.Parse nil).
	Arg string
}

// A TargetForm is how one kind's --target reads and prints. The grammar is plan's: KIND, or
// KIND:ARG (ssh://HOST is the kind ssh with the ARG //HOST); what ARG means is the kind's.
type TargetForm struct {
	// Usage is the form in error messages, with an example or a note in parentheses
	// ("simcard:PROFILE (e.g. simcard:sd-typical; ...)").
	Usage string
	// Parse makes the spec from ARG ("" for a bare KIND; "KIND:" with nothing after it is refused
	// before). Its error says what is wrong with ARG; ParseTarget adds the forms. nil: the
	// spec {Kind, Arg}.
	Parse func(arg string) (TargetSpec, error)
	// Format gives a spec of the kind back in the form Parse reads. nil: KIND, or KIND:Arg.
	Format func(TargetSpec) string
	// Short is the spec's name among others (a farm's members: a board's host, a place).
	// nil: Format's.
	Short func(TargetSpec) string
}

// targetForms are the registered forms; written by init functions, read by everyone after.
var targetForms = struct {
	sync.RWMutex
	m map[TargetKind]TargetForm
}{m: map[TargetKind]TargetForm{}}

// RegisterTargetForm makes ParseTarget read "KIND" and "KIND:ARG" as a target of kind, and
// TargetSpec.String print one. Every kind registers its own, from its package's init function
// (internal/targets/NAME). It panics on a kind registered twice or a form without usage.
func RegisterTargetForm(kind TargetKind, form TargetForm) {
	if kind == "" || strings.ContainsAny(string(kind), ":/") || form.Usage == "" {
		panic(fmt.Sprintf("target form %q: a kind is a word without ':' or '/', and its form has a usage", kind))
	}
	targetForms.Lock()
	defer targetForms.Unlock()
	if _, dup := targetForms.m[kind]; dup {
		panic("target form " + string(kind) + " registered twice")
	}
	targetForms.m[kind] = form
}

// lookupForm is the form kind registered.
func lookupForm(kind TargetKind) (TargetForm, bool) {
	targetForms.RLock()
	defer targetForms.RUnlock()
	f, ok := targetForms.m[kind]
	return f, ok
}

// String gives the spec back in the form ParseTarget reads; a spec of a kind whose form is not
// registered (its package is not linked in) reads KIND, or KIND:ARG.
func (t TargetSpec) String() string {
	if f, ok := lookupForm(t.Kind); ok && f.Format != nil {
		return f.Format(t)
	}
	if t.Arg != "" {
		return string(t.Kind) + ":" + t.Arg
	}
	return string(t.Kind)
}

// Short is the name a target gets among others (a farm's members): a labgrid place's name, a
// board's host (and port), as its kind says; other targets their spec.
func (t TargetSpec) Short() string {
	if f, ok := lookupForm(t.Kind); ok && f.Short != nil {
		return f.Short(t)
	}
	return t.String()
}

// MarshalText writes the spec as ParseTarget reads it, so that a run request file says
// "target": "simcard:sd-typical".
func (t TargetSpec) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses a spec written by MarshalText.
func (t *TargetSpec) UnmarshalText(b []byte) error {
	s, err := ParseTarget(string(b))
	if err != nil {
		return err
	}
	*t = s
	return nil
}

// ParseTarget reads a --target value: "" is the default kind as it is, else KIND or KIND:ARG
// as the kind's registered form reads it. Its errors name every registered form, and the kind
// the user most likely meant when the kind is unknown.
func ParseTarget(s string) (TargetSpec, error) {
	if s == "" {
		return TargetSpec{Kind: DefaultTarget}, nil
	}
	kind, arg, colon := strings.Cut(s, ":")
	f, ok := lookupForm(TargetKind(kind))
	switch {
	case !ok:
		return TargetSpec{}, badTarget(s, "unknown kind"+kindHint(kind))
	case colon && arg == "":
		return TargetSpec{}, badTarget(s, "nothing after "+kind+":")
	case f.Parse == nil:
		return TargetSpec{Kind: TargetKind(kind), Arg: arg}, nil
	}
	t, err := f.Parse(arg)
	if err != nil {
		return TargetSpec{}, badTarget(s, err.Error())
	}
	return t, nil
}

// badTarget is ParseTarget's error: what is wrong with s, and the forms it could take (the
// default kind's first).
func badTarget(s, why string) error {
	usage := TargetUsages()
	if len(usage) == 0 {
		return fmt.Errorf("target %q: %s; this fsbench knows no kind of target", s, why)
	}
	return fmt.Errorf("target %q: %s; use %s", s, why, strings.Join(usage, ", "))
}

// TargetUsages are the registered forms' usages, the default kind's first, the others sorted:
// what error messages and run's --target help list, so that neither lists them by hand.
func TargetUsages() []string {
	targetForms.RLock()
	var usage []string
	for k, f := range targetForms.m {
		if k != DefaultTarget {
			usage = append(usage, f.Usage)
		}
	}
	def, haveDef := targetForms.m[DefaultTarget]
	targetForms.RUnlock()
	slices.Sort(usage)
	if haveDef {
		usage = append([]string{def.Usage}, usage...)
	}
	return usage
}

// kindHint names the registered kind the user most likely meant by kind: one a typo away
// ("imagee"), or the only one it begins ("nand" for nandsim); "" when none is clear.
func kindHint(kind string) string {
	if kind == "" {
		return ""
	}
	targetForms.RLock()
	var kinds, extending []string
	for k := range targetForms.m {
		kinds = append(kinds, string(k))
		if strings.HasPrefix(string(k), strings.ToLower(kind)) {
			extending = append(extending, string(k))
		}
	}
	targetForms.RUnlock()
	m := suggest(kind, kinds)
	if m == "" && len(extending) == 1 {
		m = extending[0]
	}
	if m == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", m)
}

// NoArg is the Parse of a kind that takes nothing after its name (image, nandsim).
func NoArg(kind TargetKind) func(arg string) (TargetSpec, error) {
	return func(arg string) (TargetSpec, error) {
		if arg != "" {
			return TargetSpec{}, fmt.Errorf("%s takes nothing after %s:", kind, kind)
		}
		return TargetSpec{Kind: kind}, nil
	}
}
