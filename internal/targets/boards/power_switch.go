package boards

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/remote"
)

// powerSwitch switches a board's power: a labgrid place's power resource, or the user's own
// commands for a board reached over ssh://.
type powerSwitch interface {
	// Name says what switches it, for the log and results.json.
	Name() string
	// Set switches the power on or off and returns once the switch did (not once the board
	// is up: that is waited for apart).
	Set(ctx context.Context, on bool) error
}

// labgridPower is a place's power resource (a NetworkPowerPort, PDUDaemonPort, ...), through
// labgrid-client power on|off.
type labgridPower struct {
	lg    *remote.Labgrid
	place string
}

func (p labgridPower) Name() string { return "labgrid place " + p.place }

func (p labgridPower) Set(ctx context.Context, on bool) error {
	action := "off"
	if on {
		action = "on"
	}
	return p.lg.Power(ctx, p.place, action)
}

// commandPower is the user's own power commands (--power-off, --power-on), each run with sh -c
// on this machine.
type commandPower struct{ off, on string }

// powerCommandTimeout bounds one power command: a relay answers in seconds, a command that
// does not is broken, and the campaign must not wait for it for hours.
const powerCommandTimeout = 2 * time.Minute

func (p commandPower) Name() string { return "power commands" }

func (p commandPower) Set(ctx context.Context, on bool) error {
	command, flag := p.off, "--power-off"
	if on {
		command, flag = p.on, "--power-on"
	}
	cctx, cancel := context.WithTimeout(ctx, powerCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "-c", command)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(out.String())
		if len(msg) > 500 {
			msg = msg[len(msg)-500:]
		}
		return fmt.Errorf("%s %q: %w%s", flag, command, err, remote.Prefixed(": ", msg))
	}
	return nil
}

// checkPowerCommands refuses a live power cut on an ssh:// board without both commands.
func checkPowerCommands(o plan.Request, spec plan.TargetSpec) error {
	if o.PowerOff == "" || o.PowerOn == "" {
		return plan.Refusef("suite powercut on %s: fsbench cuts a board's power with your own switch: give the commands that switch it off and on, --power-off CMD and --power-on CMD (a USB relay, a PDU, a lab script; run here with sh -c), or use a labgrid place with a power resource (labgrid:PLACE/dev/X); nothing was run", spec)
	}
	return nil
}

// checkLive refuses, before anything runs, a live power-cut campaign a board cannot have: the
// suite must be powercut alone, on the board's card (a device named twice), with a way to
// switch its power.
func (t *sshTarget) checkLive(cfg plan.Config) error {
	if !cfg.Suite.Only(plan.PowerCutSuite) {
		return plan.Refusef("suite powercut on a board runs alone (its cuts switch the board off): run --suite %s apart", cfg.Suite)
	}
	in := t.spec.Inner
	if in == nil || in.Kind != plan.TargetDevice {
		return plan.Refusef("suite powercut on %s: a live power cut is made on the board's card: name its device, %s/dev/X with --destroy /dev/X", t.spec, t.spec)
	}
	if t.opt.Destroy != in.Device {
		return plan.Refusef("--destroy was not given or names another device: writing to %s on %s destroys everything on it; repeat the device's name with --destroy %s to confirm", in.Device, t.spec.Host, in.Device)
	}
	if t.spec.Kind == plan.TargetSSH {
		return checkPowerCommands(t.opt.Request, t.spec)
	}
	return nil // a labgrid place: its power resource is checked once it is acquired
}

// waitSSH returns once a command runs on the board over SSH (the user's client and
// configuration: an alias, a ProxyJump), or after the boot timeout.
func (t *sshTarget) waitSSH(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		tctx, cancel := context.WithTimeout(ctx, 40*time.Second)
		_, err := t.ssh.Run(tctx, "true", nil)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the board's SSH server did not answer within %s: %w", limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

func (t *sshTarget) bootTimeout() time.Duration {
	if t.opt.BootTimeout > 0 {
		return t.opt.BootTimeout
	}
	return 5 * time.Minute
}
