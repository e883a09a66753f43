package plan

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Request is everything a run is asked to do, the one options type from the command line to
// the engine: `fsbench run`'s flags are read straight into it (cli), the runner and the targets
// take it as it is (embedded in targets.Options and runner.Options), and no field is copied by
// hand on the way.
//
// It is also the run as one fsbench hands it to another, in a QEMU guest or on a board: the
// resolved configuration (defaults, file and flags applied), where to run it and where to put
// the results. `fsbench run --request FILE` carries it out, so the guest or board needs no
// configuration file and no flags rebuilt from the host's. The fields tagged `json:"-"` are the
// starting machine's own (its image file, its SSH client, its labgrid coordinator): they are
// never handed on.
type Request struct {
	Config Config     `json:"config"`
	Target TargetSpec `json:"target"`
	// Destroy must name a device target's device again, as a deliberate second confirmation.
	Destroy string `json:"destroy,omitempty"`
	// Out is the exact results directory; empty: <Config.ResultsDir>/<timestamp>.
	Out string `json:"out"`
	// Force reuses a results directory an earlier run made (nothing in it is deleted); a guest
	// or board sets it for Out, which the host already made and holds.
	Force bool `json:"force,omitempty"`
	// Work is where the run makes its work directory (default: inside Out). A guest makes it in
	// its own RAM, so that a guest killed with its host leaves nothing in the shared directory.
	Work string `json:"work,omitempty"`
	// TimeScale multiplies a simulated card's modelled waits (0 = 1, real time).
	TimeScale float64 `json:"time_scale,omitempty"`
	// EnduranceScale multiplies the endurance of a simulated card's every block (0 = 1: as its
	// profile says; 0.01: it wears out after a hundredth of the writes), for the endurance
	// suite to reach a card's end in minutes.
	EnduranceScale float64 `json:"endurance_scale,omitempty"`
	// NoCapacityCheck skips the check that a real device holds what it announces; results.json
	// records that it was skipped.
	NoCapacityCheck bool `json:"no_capacity_check,omitempty"`

	// Image is the image file to create (image target); empty: one in the work directory,
	// deleted at the end.
	Image string `json:"-"`
	// KeepImage leaves the image file after the run.
	KeepImage bool `json:"-"`
	// NoDirectIO attaches loop devices without direct I/O: the host's page cache then answers
	// reads a second time. The default (false) is direct I/O, also in a guest or on a board.
	NoDirectIO bool `json:"-"`
	// Kernel is the vm target's guest kernel (empty: the newest /boot/vmlinuz-*).
	Kernel string `json:"-"`
	// SSHOptions are more arguments for the ssh client (-F FILE, -o Option=value).
	SSHOptions []string `json:"-"`
	// RemoteBinary is the fsbench binary to put on a board (default: the release binary for
	// its architecture next to this one, or make cross's dist/).
	RemoteBinary string `json:"-"`
	// RemoteDir is where fsbench keeps its binary and runs on a board (default
	// boards.DefaultRemoteDir).
	RemoteDir string `json:"-"`
	// LinkTimeout is how long a board's run goes on without hearing from the host before it
	// stops in order (0: boards.DefaultLinkTimeout); the host writes to it every quarter of that.
	LinkTimeout time.Duration `json:"-"`
	// LabgridCoordinator is the labgrid coordinator's HOST:PORT (empty: $LG_COORDINATOR, else
	// labgrid's default) and LabgridClient labgrid-client's path (empty:
	// $FSBENCH_LABGRID_CLIENT, else PATH): --target labgrid:PLACE.
	LabgridCoordinator, LabgridClient string `json:"-"`
	// PowerCycle power-cycles a labgrid place's board before the run, and BootTimeout is how
	// long its SSH server may then take to answer (0: 5 minutes).
	PowerCycle  bool          `json:"-"`
	BootTimeout time.Duration `json:"-"`
	// PowerOff and PowerOn are the user's own commands (run with sh -c on this machine) that
	// switch an ssh:// board's power off and on: a USB relay, a PDU, a lab script. With them
	// --suite powercut cuts the board's power for real (a labgrid place uses its power
	// resource instead).
	PowerOff, PowerOn string `json:"-"`
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
