package cli

import (
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/plan"

	"github.com/fsbench/fsbench/internal/targets/boards"

	"github.com/fsbench/fsbench/internal/remote"

	"github.com/fsbench/fsbench/internal/targets"
)

// boardFlags are the flags of every command that can reach a board over SSH. The settings
// they name are read straight into a plan.Request (run's own, or one of their own for the
// other commands); the ssh client's are gathered by sshArgs.
type boardFlags struct {
	sshConfig  string
	sshOptions []string
	req        *plan.Request
}

// register adds the flags to fl, their values going into req (nil: a request of their own).
func (b *boardFlags) register(fl *pflag.FlagSet, req *plan.Request) {
	if req == nil {
		req = new(plan.Request)
	}
	b.req = req
	fl.StringVar(&b.sshConfig, "ssh-config", "", "for a board (ssh://...): the ssh client's configuration file (ssh -F); default: your ~/.ssh/config")
	fl.StringArrayVar(&b.sshOptions, "ssh-option", nil, "for a board (ssh://...): an option for the ssh client (ssh -o), e.g. --ssh-option ConnectTimeout=30; repeatable")
	fl.StringVar(&req.RemoteBinary, "remote-binary", "", "for a board (ssh://...): the fsbench binary to run there (default: fsbench-linux-ARCH next to this one, or make cross's dist/)")
	fl.StringVar(&req.LabgridCoordinator, "labgrid-coordinator", "", "for a labgrid place (labgrid:PLACE): the coordinator's HOST:PORT (default: $LG_COORDINATOR, else "+remote.DefaultLabgridCoordinator+")")
	fl.StringVar(&req.LabgridClient, "labgrid-client", "", "for a labgrid place (labgrid:PLACE): the labgrid-client program (default: $FSBENCH_LABGRID_CLIENT, else labgrid-client on PATH)")
	fl.StringVar(&req.RemoteDir, "remote-dir", "", "for a board (ssh://...): where fsbench keeps its binary and runs there (default "+boards.DefaultRemoteDir+")")
}

// sshArgs are the ssh client's extra arguments.
func (b boardFlags) sshArgs() []string {
	var out []string
	if b.sshConfig != "" {
		out = append(out, "-F", b.sshConfig)
	}
	for _, o := range b.sshOptions {
		out = append(out, "-o", o)
	}
	return out
}

// options are the target options for a board, logging to log.
func (b boardFlags) options(log func(string, ...any)) targets.Options {
	o := targets.Options{Request: *b.req, Log: log}
	o.SSHOptions = b.sshArgs()
	return o
}
