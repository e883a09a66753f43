// Package aging ages a mounted filesystem before the measured tests, the way a board's root
// filesystem ages in service: a seeded churn of package updates (written the way dpkg writes
// them), log appends and rotations, database commits, or Geriatrix-style random creates and
// deletes, up to a fullness and for an amount of churn. The same seed and capacity give the same
// tree, byte for byte (Listing), so that aged runs can be compared.
package aging

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Dir is the directory of the mounted filesystem the aged tree is made in.
const Dir = "aged"

// Profiles of churn (Spec.Profile).
const (
	Updates   = "updates"   // package releases replaced the way dpkg does it
	Logs      = "logs"      // appends, rotations and compressions
	Database  = "database"  // small random in-place writes with fsync (a write-ahead log)
	Geriatrix = "geriatrix" // random create and delete at a fullness
)

// Profiles lists the profiles, in the order the documentation gives them.
var Profiles = []string{Updates, Logs, Database, Geriatrix}

// Spec is what --age asks for.
type Spec struct {
	// Preset is the preset's name when the spec was given as one; "" otherwise.
	Preset  string
	Profile string
	// Fullness is the share of the filesystem's capacity the aged tree's files fill (0.8 = 80 %).
	Fullness float64
	// Churn is how much the churn writes after the tree is filled, in capacities of the
	// filesystem (1 = as many bytes as the filesystem holds).
	Churn float64
}

// DefaultChurn is the churn of a spec that names none: one capacity written.
const DefaultChurn = 1.0

// Preset is a named spec with what it stands for.
type Preset struct {
	Name, Spec, Means string
}

// Presets are the named specs, documented in docs/aging.md.
var Presets = []Preset{
	{"year-of-updates", "updates:80%:1x", "a root filesystem 80 % full that took a year of a stable release's updates: Debian stable's four point releases and its security updates a year rewrite about the installed package set once (an estimate from the point releases' package counts, not a measurement of one board)"},
	{"year-of-logs", "logs:60%:1x", "a root filesystem 60 % full whose logs were appended, rotated daily and compressed for a year, writing about its capacity"},
	{"busy-database", "database:50%:2x", "a device 50 % full holding a small database (SQLite in WAL mode) that committed two capacities of pages"},
	{"geriatrix", "geriatrix:80%:5x", "Geriatrix's method: random creates and deletes of files with a Debian rootfs's size distribution, kept at 80 % full, five capacities written"},
}

// Parse reads a spec: a preset's name, or [PROFILE:]FULLNESS%[:CHURNx], such as "80%",
// "updates:80%:1x" or "geriatrix:70%:3x". The profile defaults to updates, the churn to one
// capacity.
func Parse(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	for _, p := range Presets {
		if s == p.Name {
			sp, err := parse(p.Spec)
			sp.Preset = p.Name
			return sp, err
		}
	}
	return parse(s)
}

func parse(s string) (Spec, error) {
	bad := func(why string) (Spec, error) {
		return Spec{}, fmt.Errorf("--age %q: %s; write [PROFILE:]FULLNESS%%[:CHURNx] (profiles: %s), e.g. 80%% or updates:80%%:1x, or a preset (%s)",
			s, why, strings.Join(Profiles, ", "), strings.Join(PresetNames(), ", "))
	}
	parts := strings.Split(s, ":")
	sp := Spec{Profile: Updates, Churn: DefaultChurn}
	if len(parts) > 3 || s == "" {
		return bad("not a spec")
	}
	if !strings.HasSuffix(parts[0], "%") {
		if !slices.Contains(Profiles, parts[0]) {
			return bad(fmt.Sprintf("unknown profile %q", parts[0]))
		}
		sp.Profile, parts = parts[0], parts[1:]
	}
	if len(parts) == 0 {
		return bad("no fullness")
	}
	pct, ok := strings.CutSuffix(parts[0], "%")
	f, err := strconv.ParseFloat(pct, 64)
	if !ok || err != nil {
		return bad(fmt.Sprintf("fullness %q is not a percentage", parts[0]))
	}
	if f < 1 || f > 95 {
		return bad("fullness must be between 1 % and 95 % (above that no filesystem keeps room for the measured tests)")
	}
	sp.Fullness = f / 100
	if len(parts) == 2 {
		x, ok := strings.CutSuffix(parts[1], "x")
		c, err := strconv.ParseFloat(x, 64)
		if !ok || err != nil || c < 0 || c > 100 {
			return bad(fmt.Sprintf("churn %q is not a number of capacities such as 1x (0 to 100)", parts[1]))
		}
		sp.Churn = c
	} else if len(parts) > 2 {
		return bad("too many parts")
	}
	return sp, nil
}

// PresetNames lists the presets' names.
func PresetNames() []string {
	var n []string
	for _, p := range Presets {
		n = append(n, p.Name)
	}
	return n
}

// String is the spec in the canonical PROFILE:FULLNESS%:CHURNx form.
func (s Spec) String() string {
	return fmt.Sprintf("%s:%s%%:%sx", s.Profile, strconv.FormatFloat(100*s.Fullness, 'f', -1, 64), strconv.FormatFloat(s.Churn, 'f', -1, 64))
}

// Label is a short name for the aged twin of a variant ("aged80"), and Describe the spec in words.
func (s Spec) Label() string {
	return "aged" + strconv.FormatFloat(100*s.Fullness, 'f', -1, 64)
}

// Describe says what the spec does, for the methods of results.json.
func (s Spec) Describe() string {
	d := fmt.Sprintf("%s churn to %s %% full, then %s capacities written", s.Profile, strconv.FormatFloat(100*s.Fullness, 'f', -1, 64), strconv.FormatFloat(s.Churn, 'f', -1, 64))
	if s.Preset != "" {
		d = s.Preset + " (" + d + ")"
	}
	return d
}
