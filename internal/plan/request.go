package plan

import (
	"encoding/json"
	"fmt"
	"os"
)

// Request is a whole run as one fsbench hands it to another, in a QEMU guest or on a board: the
// resolved configuration (defaults, file and flags applied), where to run it and where to put
// the results. `fsbench run --request FILE` carries it out, so the guest or board needs no
// configuration file and no flags rebuilt from the host's.
type Request struct {
	Config Config     `json:"config"`
	Target TargetSpec `json:"target"`
	// Destroy names a device target's device again.
	Destroy string `json:"destroy,omitempty"`
	// Out is the exact results directory.
	Out string `json:"out"`
	// Force reuses Out, which the host made and holds.
	Force bool `json:"force,omitempty"`
	// Work is where the run makes its work directory (default: inside Out). A guest makes it in
	// its own RAM, so that a guest killed with its host leaves nothing in the shared directory.
	Work string `json:"work,omitempty"`
	// TimeScale multiplies a simulated card's modelled waits (0 = 1).
	TimeScale float64 `json:"time_scale,omitempty"`
	// NoCapacityCheck skips the capacity check of a device target (a board's card).
	NoCapacityCheck bool `json:"no_capacity_check,omitempty"`
}

// WriteRequest writes r to path as JSON.
func WriteRequest(path string, r Request) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the run request: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the run request: %w", err)
	}
	return nil
}

// LoadRequest reads a request written by WriteRequest and validates its configuration.
func LoadRequest(path string, opt Options) (Request, error) {
	var r Request
	b, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("reading the run request: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: not a run request: %w", path, err)
	}
	if err := r.Config.Validate(opt); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
