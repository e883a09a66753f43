package remote

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// LabgridPlace is what `labgrid-client show` says about a place: who holds it and which
// resources it matches. labgrid has no machine-readable output for this; the resources are
// printed with Python's pprint, which ParseLabgridShow reads as Python literals.
type LabgridPlace struct {
	Name string
	// Acquired is "HOST/USER" of whoever holds the place; empty when it is free.
	Acquired string
	// Changed is the place's "changed" time as labgrid prints it: acquiring sets it, so with
	// Acquired it tells this acquisition from a later one of the same user.
	Changed   string
	Resources []LabgridResource
}

// LabgridResource is one resource of a place.
type LabgridResource struct {
	// Name is the resource's name ("NetworkService") and Path its full path
	// ("exporter/group/NetworkService/NetworkService").
	Name, Path string
	// Class is labgrid's resource class ("NetworkService", "NetworkPowerPort").
	Class string
	// Available is the exporter's "avail": false when the resource is exported but absent.
	Available bool
	// Params are the resource's parameters (address, port, username, ...).
	Params map[string]any
}

// ParseLabgridShow reads the output of `labgrid-client -p PLACE show`.
func ParseLabgridShow(text string) (*LabgridPlace, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	p := &LabgridPlace{}
	i := 0
	for ; i < len(lines); i++ {
		if name, ok := strings.CutPrefix(lines[i], "Place '"); ok {
			p.Name = strings.TrimSuffix(name, "':")
			i++
			break
		}
	}
	if p.Name == "" {
		return nil, fmt.Errorf("labgrid-client show: no \"Place '...':\" line in its output")
	}
	// The place's own fields are indented by two spaces; a resource starts unindented.
	for ; i < len(lines) && (strings.HasPrefix(lines[i], " ") || lines[i] == ""); i++ {
		key, val, ok := strings.Cut(strings.TrimSpace(lines[i]), ":")
		if !ok || strings.HasPrefix(lines[i], "    ") {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "acquired":
			if val != "None" {
				p.Acquired = val
			}
		case "changed":
			p.Changed = val
		}
	}
	for i < len(lines) {
		head := lines[i]
		i++
		var rest string
		var ok bool
		if rest, ok = strings.CutPrefix(head, "Acquired resource '"); !ok {
			if rest, ok = strings.CutPrefix(head, "Matching resource '"); !ok {
				continue // lines labgrid may add in a later version
			}
		}
		name, pathPart, ok := strings.Cut(rest, "' (")
		if !ok || !strings.HasSuffix(pathPart, "):") {
			return nil, fmt.Errorf("labgrid-client show: cannot read the resource line %q", head)
		}
		// The resource's pprint'ed dict: the indented lines that follow.
		var body strings.Builder
		for i < len(lines) && strings.HasPrefix(lines[i], " ") {
			body.WriteString(lines[i])
			body.WriteByte('\n')
			i++
		}
		v, err := parsePyLiteral(body.String())
		if err != nil {
			return nil, fmt.Errorf("labgrid-client show: resource %s: %w", name, err)
		}
		d, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("labgrid-client show: resource %s is not a dict", name)
		}
		r := LabgridResource{Name: name, Path: strings.TrimSuffix(pathPart, "):")}
		r.Class, _ = d["cls"].(string)
		r.Available, _ = d["avail"].(bool)
		r.Params, _ = d["params"].(map[string]any)
		p.Resources = append(p.Resources, r)
	}
	return p, nil
}

// Resource returns the first resource of class cls, or nil.
func (p *LabgridPlace) Resource(cls string) *LabgridResource {
	for i := range p.Resources {
		if p.Resources[i].Class == cls {
			return &p.Resources[i]
		}
	}
	return nil
}

// powerClasses are labgrid's resources that `labgrid-client power` drives.
var powerClasses = []string{"NetworkPowerPort", "PDUDaemonPort", "YKUSHPowerPort", "USBPowerPort", "SiSPMPowerPort",
	"TasmotaPowerPort", "ModbusTCPCoil", "SysfsGPIO", "LXAUSBMux"}

// HasPower reports whether the place has a resource `labgrid-client power` can switch.
func (p *LabgridPlace) HasPower() bool {
	for _, c := range powerClasses {
		if p.Resource(c) != nil {
			return true
		}
	}
	return false
}

// LabgridSSH is how a place's board is reached over SSH, from its NetworkService.
type LabgridSSH struct {
	Address string
	Port    int // 0: ssh's default
	User    string
	// Proxy is the exporter's host when the board is reachable only through it (labgrid's
	// proxy_required): fsbench then jumps through it, as labgrid-client ssh does.
	Proxy string
}

// NetworkService reads the place's NetworkService: how the board is reached over SSH.
func (p *LabgridPlace) NetworkService() (LabgridSSH, error) {
	var s LabgridSSH
	r := p.Resource("NetworkService")
	if r == nil {
		return s, fmt.Errorf("place %s has no NetworkService resource: fsbench reaches a board over SSH; add a NetworkService {address, port, username} for the board to the exporter's configuration", p.Name)
	}
	s.Address, _ = r.Params["address"].(string)
	if s.Address == "" {
		return s, fmt.Errorf("place %s: its NetworkService has no address", p.Name)
	}
	switch n := r.Params["port"].(type) {
	case int64:
		if n < 0 || n > 65535 {
			return s, fmt.Errorf("place %s: its NetworkService's port %d is not a TCP port", p.Name, n)
		}
		s.Port = int(n)
	case nil:
	default:
		return s, fmt.Errorf("place %s: its NetworkService's port %v is not a number", p.Name, n)
	}
	s.User, _ = r.Params["username"].(string)
	if extra, ok := r.Params["extra"].(map[string]any); ok {
		if req, _ := extra["proxy_required"].(bool); req {
			s.Proxy, _ = extra["proxy"].(string)
		}
	}
	return s, nil
}

// parsePyLiteral reads one Python literal as pprint writes it: dicts, lists, tuples,
// strings (adjacent ones joined, as pprint splits long strings over lines), integers,
// floats, None, True and False. Integers are int64, dicts map[string]any (keys given as
// strings or numbers), lists and tuples []any.
func parsePyLiteral(s string) (any, error) {
	p := &pyParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.errorf("unexpected %q after the value", p.rest())
	}
	return v, nil
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: "+format, append([]any{p.i}, args...)...)
}

func (p *pyParser) rest() string {
	r := p.s[p.i:]
	if len(r) > 20 {
		r = r[:20] + "…"
	}
	return r
}

func (p *pyParser) space() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

func (p *pyParser) value() (any, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.dict()
	case c == '[':
		return p.list('[', ']')
	case c == '(':
		return p.list('(', ')')
	case c == '\'' || c == '"':
		var b strings.Builder
		for p.i < len(p.s) && (p.s[p.i] == '\'' || p.s[p.i] == '"') {
			str, err := p.str()
			if err != nil {
				return nil, err
			}
			b.WriteString(str)
			p.space()
		}
		return b.String(), nil
	case c == '-' || c == '+' || c >= '0' && c <= '9':
		return p.number()
	}
	for _, kw := range []struct {
		word string
		v    any
	}{{"None", nil}, {"True", true}, {"False", false}} {
		if strings.HasPrefix(p.s[p.i:], kw.word) {
			p.i += len(kw.word)
			return kw.v, nil
		}
	}
	return nil, p.errorf("cannot read %q", p.rest())
}

func (p *pyParser) dict() (any, error) {
	p.i++ // {
	out := map[string]any{}
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return out, nil
		}
		k, err := p.value()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errorf("expected ':' after a dict key")
		}
		p.i++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out[fmt.Sprint(k)] = v
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '}' {
			continue
		}
		return nil, p.errorf("expected ',' or '}' in a dict")
	}
}

func (p *pyParser) list(open, end byte) (any, error) {
	p.i++ // open
	out := []any{}
	comma := false
	for {
		p.space()
		if p.i < len(p.s) && p.s[p.i] == end {
			p.i++
			if open == '(' && len(out) == 1 && !comma {
				// Not a tuple but parentheses: pprint wraps a long string as ('abc'\n 'def').
				return out[0], nil
			}
			return out, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			comma = true
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == end {
			continue
		}
		return nil, p.errorf("expected ',' or %q", string(end))
	}
}

// str reads a quoted string with Python's common escapes (repr writes \\, \', \n, \t, \r,
// \xNN, \uNNNN).
func (p *pyParser) str() (string, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\\' && p.i+1 < len(p.s):
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if p.i+n > len(p.s) {
					return "", p.errorf("short \\%c escape", e)
				}
				r, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
				if err != nil {
					return "", p.errorf("bad \\%c escape", e)
				}
				b.WriteRune(rune(r))
				p.i += n
			default:
				b.WriteByte(e) // \\ \' \"
			}
		case c == '\n':
			return "", p.errorf("newline inside a string")
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *pyParser) number() (any, error) {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte("+-0123456789.eE_xabcdefABCDEF", p.s[p.i]) >= 0 {
		p.i++
	}
	lit := strings.ReplaceAll(p.s[start:p.i], "_", "")
	if n, err := strconv.ParseInt(lit, 0, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(lit, 64); err == nil {
		return f, nil
	}
	return nil, fmt.Errorf("at offset %d: %q is not a number", start, lit)
}
