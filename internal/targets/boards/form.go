package boards

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/fsbench/fsbench/internal/plan"

	// The kinds a board runs on (PATH: /dev/X, an image, /simcard:PROFILE): the request handed
	// to the board carries their --target forms, which their packages register.
	_ "github.com/fsbench/fsbench/internal/targets/device"
	_ "github.com/fsbench/fsbench/internal/targets/image"
	_ "github.com/fsbench/fsbench/internal/targets/simcard"
)

// The --target forms of a board: ssh://[user@]host[:port][PATH] and labgrid:PLACE[PATH], where
// PATH is what the board runs on (boardTarget).
func init() {
	plan.RegisterTargetForm(plan.TargetSSH, plan.TargetForm{Usage: "ssh://[user@]host[:port]/dev/X (a board, with --destroy /dev/X)",
		Parse: parseSSH, Format: formatSSH, Short: func(t plan.TargetSpec) string {
			if t.Port != 0 {
				return fmt.Sprintf("%s:%d", t.Host, t.Port)
			}
			return t.Host
		}})
	plan.RegisterTargetForm(plan.TargetLabgrid, plan.TargetForm{Usage: "labgrid:PLACE/dev/X (a board of a labgrid farm)",
		Parse:  parseLabgrid,
		Format: func(t plan.TargetSpec) string { return "labgrid:" + t.Place + innerPath(t) },
		Short:  func(t plan.TargetSpec) string { return t.Place }})
}

// parseSSH reads what follows ssh: (//[user@]host[:port][PATH]); its error says what is wrong,
// for plan.ParseTarget to add the forms to.
func parseSSH(arg string) (plan.TargetSpec, error) {
	if !strings.HasPrefix(arg, "//") {
		return plan.TargetSpec{}, errors.New("a board over SSH is addressed as a URL, ssh://[user@]host[:port]/dev/X")
	}
	u, err := url.Parse("ssh:" + arg)
	if err != nil {
		return plan.TargetSpec{}, err
	}
	t := plan.TargetSpec{Kind: plan.TargetSSH, Host: u.Hostname()}
	if t.Host == "" {
		return plan.TargetSpec{}, errors.New("no host after ssh://")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return plan.TargetSpec{}, errors.New("port " + p + " is not a TCP port")
		}
		t.Port = n
	}
	if u.User != nil {
		t.User = u.User.Username()
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return plan.TargetSpec{}, errors.New("a query or fragment means nothing here")
	}
	if t.Inner, err = boardTarget(u.Path); err != nil {
		return plan.TargetSpec{}, err
	}
	return t, nil
}

// formatSSH gives an ssh spec back as parseSSH reads it.
func formatSSH(t plan.TargetSpec) string {
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
	return u.String() + innerPath(t)
}

// parseLabgrid reads what follows labgrid: (PLACE[PATH]); its error says what is wrong.
func parseLabgrid(rest string) (plan.TargetSpec, error) {
	place, path, _ := strings.Cut(rest, "/")
	if place == "" {
		return plan.TargetSpec{}, errors.New("no place after labgrid:")
	}
	if path != "" {
		path = "/" + path
	}
	in, err := boardTarget(path)
	if err != nil {
		return plan.TargetSpec{}, err
	}
	return plan.TargetSpec{Kind: plan.TargetLabgrid, Place: place, Inner: in}, nil
}

// boardTarget reads the path of an ssh:// or labgrid: target: /dev/X is that device on the
// board, nothing an image file there, /simcard:PROFILE a simulated card there.
func boardTarget(path string) (*plan.TargetSpec, error) {
	switch {
	case path == "" || path == "/" || path == "/image":
		return &plan.TargetSpec{Kind: plan.TargetImage}, nil
	case strings.HasPrefix(path, "/dev/"):
		return &plan.TargetSpec{Kind: plan.TargetDevice, Device: path}, nil
	case strings.HasPrefix(path, "/simcard"):
		in, err := plan.ParseTarget(strings.TrimPrefix(path, "/"))
		if err != nil {
			return nil, err
		}
		return &in, nil
	}
	return nil, fmt.Errorf("the path %q on the board is neither a device (/dev/...) nor /simcard:PROFILE", path)
}

// innerPath is the part of an ssh or labgrid spec after the host or place.
func innerPath(t plan.TargetSpec) string {
	switch {
	case t.Inner == nil || t.Inner.Kind == plan.TargetImage:
		return ""
	case t.Inner.Kind == plan.TargetDevice:
		return t.Inner.Device
	}
	return "/" + t.Inner.String()
}
