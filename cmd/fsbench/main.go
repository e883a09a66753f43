// Command fsbench measures filesystems on flash storage; see the README.
//
// Exit codes: 0 done, 1 the run could not be carried out, 2 bad flags or configuration,
// 3 compare --fail-on-regression found a significant regression, 130 interrupted (after
// cleaning up).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/fsbench/fsbench/internal/cli"
)

func main() {
	// The first SIGINT/SIGTERM cancels the context; the run then unmounts and detaches before
	// exiting. Further signals stay caught so that an impatient second Ctrl-C cannot skip that.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli.Main(ctx, os.Args[1:], cli.StdIO()))
}
