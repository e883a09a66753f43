// Command fsbench measures filesystems on flash storage; see the README.
//
// Exit codes: 0 done, 1 the run could not be carried out, 2 bad flags or configuration,
// 3 compare --fail-on-regression found a significant regression, 128+n after signal n, having
// cleaned up: 129 SIGHUP (the terminal or SSH session hung up), 130 SIGINT, 141 SIGPIPE (the
// output pipe closed), 143 SIGTERM.
package main

import (
	"context"
	"os"

	"github.com/fsbench/fsbench/internal/cli"
)

func main() {
	// The first SIGINT, SIGTERM or SIGHUP cancels the context; the run then unmounts and
	// detaches before exiting. Further signals stay caught so that an impatient second Ctrl-C
	// cannot skip that.
	ctx, stop := cli.SignalContext(context.Background())
	code := cli.Main(ctx, os.Args[1:], cli.StdIO())
	stop()
	os.Exit(code)
}
