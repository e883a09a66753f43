package cli

import (
	"github.com/spf13/pflag"

	"github.com/fsbench/fsbench/internal/targets/boards"

	"github.com/fsbench/fsbench/internal/remote"

	"github.com/fsbench/fsbench/internal/targets"
)

// boardFlags are the flags of every command that can reach a board over SSH.
type boardFlags struct {
	sshConfig, remoteBinary, remoteDir string
	labgridCoordinator                 string
	sshOptions                         []string
}

func (b *boardFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&b.sshConfig, "ssh-config", "", "for a board (ssh://...): the ssh client's configuration file (ssh -F); default: your ~/.ssh/config")
	fl.StringArrayVar(&b.sshOptions, "ssh-option", nil, "for a board (ssh://...): an option for the ssh client (ssh -o), e.g. --ssh-option ConnectTimeout=30; repeatable")
	fl.StringVar(&b.remoteBinary, "remote-binary", "", "for a board (ssh://...): the fsbench binary to run there (default: fsbench-linux-ARCH next to this one, or make cross's dist/)")
	fl.StringVar(&b.labgridCoordinator, "labgrid-coordinator", "", "for a labgrid place (labgrid:PLACE): the coordinator's HOST:PORT (default: $LG_COORDINATOR, else "+remote.DefaultLabgridCoordinator+"); labgrid-client is found on PATH or as $FSBENCH_LABGRID_CLIENT")
	fl.StringVar(&b.remoteDir, "remote-dir", "", "for a board (ssh://...): where fsbench keeps its binary and runs there (default "+boards.DefaultRemoteDir+")")
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
	return targets.Options{SSHOptions: b.sshArgs(), RemoteBinary: b.remoteBinary, RemoteDir: b.remoteDir, Log: log,
		LabgridCoordinator: b.labgridCoordinator}
}
