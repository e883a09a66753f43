package plan

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// TargetKind names where a run's device comes from.
type TargetKind string

// The target kinds. image, simcard, device and nandsim run here; vm, ssh and labgrid hand the
// run to another fsbench (a QEMU guest, a board over SSH, a board of a labgrid farm) and bring
// its results back.
const (
	TargetImage   TargetKind = "image"   // a sparse image file on a loop device
	TargetSimcard TargetKind = "simcard" // the flash model served as a file (FUSE), on a loop device
	TargetDevice  TargetKind = "device"  // a real block device, named twice (--destroy)
	TargetNandsim TargetKind = "nandsim" // a simulated raw NAND chip (suite free-electrons)
	TargetVM      TargetKind = "vm"      // a guest kernel under QEMU, with an emulated SD card
	TargetSSH     TargetKind = "ssh"     // a board reached with the user's OpenSSH client
	TargetLabgrid TargetKind = "labgrid" // a place of a labgrid farm, reached as over SSH
)

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
	// Arg is what follows "KIND:" for a kind that registered its form (RegisterTargetForm).
	Arg string
}

// String gives the spec back in the form ParseTarget reads.
func (t TargetSpec) String() string {
	switch t.Kind {
	case TargetSimcard:
		return "simcard:" + t.Profile
	case TargetDevice:
		return "device:" + t.Device
	case TargetVM:
		if t.Inner != nil {
			return "vm:" + t.Inner.String()
		}
		return "vm"
	case TargetSSH:
		u := &url.URL{Scheme: "ssh", Host: t.Host}
		if strings.Contains(t.Host, ":") {
			u.Host = "[" + t.Host + "]" // an IPv6 address
		}
		if t.Port != 0 {
			u.Host += ":" + strconv.Itoa(t.Port)
		}
		if t.User != "" {
			u.User = url.User(t.User)
		}
		return u.String() + t.innerPath()
	case TargetLabgrid:
		return "labgrid:" + t.Place + t.innerPath()
	}
	if t.Arg != "" {
		return string(t.Kind) + ":" + t.Arg
	}
	return string(t.Kind)
}

// Short is the name a board gets among others (a farm's members): a labgrid place's name, a
// board's host (and port); other targets their spec.
func (t TargetSpec) Short() string {
	switch t.Kind {
	case TargetLabgrid:
		return t.Place
	case TargetSSH:
		if t.Port != 0 {
			return fmt.Sprintf("%s:%d", t.Host, t.Port)
		}
		return t.Host
	}
	return t.String()
}

// innerPath is the part of an ssh or labgrid spec after the host or place.
func (t TargetSpec) innerPath() string {
	switch {
	case t.Inner == nil || t.Inner.Kind == TargetImage:
		return ""
	case t.Inner.Kind == TargetDevice:
		return t.Inner.Device
	}
	return "/" + t.Inner.String()
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

// targetUsage is the list of forms, for error messages.
const targetUsage = "image (the default), simcard:PROFILE (e.g. simcard:sd-typical; fsbench simcard profiles lists them), " +
	"device:/dev/X with --destroy /dev/X, nandsim (raw NAND, suite free-electrons), vm or vm:simcard:PROFILE (a QEMU guest), " +
	"ssh://[user@]host[:port]/dev/X (a board, with --destroy /dev/X), or labgrid:PLACE/dev/X (a board of a labgrid farm)"

// targetForm is how a registered kind's --target reads.
type targetForm struct {
	usage string
	parse func(arg string) (TargetSpec, error)
}

// targetForms are the kinds registered beside the built-in ones; written only by init functions.
var targetForms = map[TargetKind]targetForm{}

// RegisterTargetForm makes ParseTarget read "KIND" and "KIND:ARG" as a target of kind, for a
// kind that lives in a package of its own: parse makes its spec from ARG ("" for a bare KIND;
// nil: the spec {Kind, Arg}), and usage is its form in error messages. It panics on a kind
// registered twice or a built-in one. Call it from an init function.
func RegisterTargetForm(kind TargetKind, usage string, parse func(arg string) (TargetSpec, error)) {
	if _, dup := targetForms[kind]; dup || builtinTarget(kind) {
		panic("target form " + string(kind) + " registered twice")
	}
	if parse == nil {
		parse = func(arg string) (TargetSpec, error) { return TargetSpec{Kind: kind, Arg: arg}, nil }
	}
	targetForms[kind] = targetForm{usage: usage, parse: parse}
}

func builtinTarget(k TargetKind) bool {
	switch k {
	case TargetImage, TargetSimcard, TargetDevice, TargetNandsim, TargetVM, TargetSSH, TargetLabgrid:
		return true
	}
	return false
}

// ParseTarget reads a --target value.
func ParseTarget(s string) (TargetSpec, error) {
	bad := func(why string) (TargetSpec, error) {
		usage := []string{targetUsage}
		for _, f := range targetForms {
			usage = append(usage, f.usage)
		}
		slices.Sort(usage[1:])
		return TargetSpec{}, fmt.Errorf("target %q: %s; use %s", s, why, strings.Join(usage, ", "))
	}
	switch {
	case s == "" || s == "image":
		return TargetSpec{Kind: TargetImage}, nil
	case s == "simcard":
		return TargetSpec{Kind: TargetSimcard, Profile: DefaultCardProfile}, nil
	case strings.HasPrefix(s, "simcard:"):
		p := strings.TrimPrefix(s, "simcard:")
		if p == "" {
			return bad("no profile after simcard:")
		}
		return TargetSpec{Kind: TargetSimcard, Profile: p}, nil
	case strings.HasPrefix(s, "device:"):
		d := strings.TrimPrefix(s, "device:")
		if d == "" {
			return bad("no device after device:")
		}
		return TargetSpec{Kind: TargetDevice, Device: d}, nil
	case s == "nandsim":
		return TargetSpec{Kind: TargetNandsim}, nil
	case s == "vm":
		return TargetSpec{Kind: TargetVM}, nil
	case strings.HasPrefix(s, "vm:"):
		in, err := ParseTarget(strings.TrimPrefix(s, "vm:"))
		if err != nil || in.Kind != TargetSimcard {
			return bad("a guest's SD card can be vm (an image file) or vm:simcard:PROFILE")
		}
		return TargetSpec{Kind: TargetVM, Inner: &in}, nil
	case strings.HasPrefix(s, "ssh://"):
		t, err := parseSSHTarget(s)
		if err != nil {
			return bad(err.Error())
		}
		return t, nil
	case strings.HasPrefix(s, "labgrid:"):
		t, err := parseLabgridTarget(strings.TrimPrefix(s, "labgrid:"))
		if err != nil {
			return bad(err.Error())
		}
		return t, nil
	}
	kind, arg, _ := strings.Cut(s, ":")
	if f, ok := targetForms[TargetKind(kind)]; ok {
		t, err := f.parse(arg)
		if err != nil {
			return bad(err.Error())
		}
		return t, nil
	}
	return bad("unknown kind")
}

// parseSSHTarget reads ssh://[user@]host[:port][PATH]; its error says what is wrong, for
// ParseTarget to add the forms to.
func parseSSHTarget(s string) (TargetSpec, error) {
	u, err := url.Parse(s)
	if err != nil {
		return TargetSpec{}, err
	}
	t := TargetSpec{Kind: TargetSSH, Host: u.Hostname()}
	if t.Host == "" {
		return TargetSpec{}, errors.New("no host after ssh://")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return TargetSpec{}, errors.New("port " + p + " is not a TCP port")
		}
		t.Port = n
	}
	if u.User != nil {
		t.User = u.User.Username()
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return TargetSpec{}, errors.New("a query or fragment means nothing here")
	}
	if t.Inner, err = boardTarget(u.Path); err != nil {
		return TargetSpec{}, err
	}
	return t, nil
}

// parseLabgridTarget reads what follows labgrid: (PLACE[PATH]); its error says what is wrong.
func parseLabgridTarget(rest string) (TargetSpec, error) {
	place, path, _ := strings.Cut(rest, "/")
	if place == "" {
		return TargetSpec{}, errors.New("no place after labgrid:")
	}
	if path != "" {
		path = "/" + path
	}
	in, err := boardTarget(path)
	if err != nil {
		return TargetSpec{}, err
	}
	return TargetSpec{Kind: TargetLabgrid, Place: place, Inner: in}, nil
}

// boardTarget reads the path of an ssh:// or labgrid: target: /dev/X is that device on the
// board, nothing an image file there, /simcard:PROFILE a simulated card there.
func boardTarget(path string) (*TargetSpec, error) {
	switch {
	case path == "" || path == "/" || path == "/image":
		return &TargetSpec{Kind: TargetImage}, nil
	case strings.HasPrefix(path, "/dev/"):
		return &TargetSpec{Kind: TargetDevice, Device: path}, nil
	case strings.HasPrefix(path, "/simcard"):
		in, err := ParseTarget(strings.TrimPrefix(path, "/"))
		if err != nil {
			return nil, err
		}
		return &in, nil
	}
	return nil, fmt.Errorf("the path %q on the board is neither a device (/dev/...) nor /simcard:PROFILE", path)
}
