package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Suites are the suites a run runs, in order, one after the other on the same fresh filesystem.
// People write them as one comma-separated word ("bonnie,smallfiles", in --suite and in the
// configuration's suite key) and results files keep that spelling; in the program they are a
// list, parsed once here, so that no other package splits a string to ask what runs.
type Suites []string

// ParseSuites reads "bootlin" or "bonnie, smallfiles": names separated by commas, spaces around
// them dropped. An empty string is no suite; an empty name between two commas is kept, so that
// validation names it instead of the run silently dropping it.
func ParseSuites(s string) Suites {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out Suites
	for _, name := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(name))
	}
	return out
}

// String is the suites as people write them: "bonnie,smallfiles".
func (s Suites) String() string { return strings.Join(s, ",") }

// Has reports whether the run includes the named suite.
func (s Suites) Has(name string) bool { return slices.Contains(s, name) }

// Only reports whether the run is the named suite and nothing else.
func (s Suites) Only(name string) bool { return len(s) == 1 && s[0] == name }

// MarshalJSON writes the suites as one string, "bonnie,smallfiles", as results files have
// always recorded them.
func (s Suites) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads the string results files record, or a list of names.
func (s *Suites) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = ParseSuites(str)
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("suite: want a string such as \"bonnie,smallfiles\" or a list of names: %w", err)
	}
	*s = list
	return nil
}
