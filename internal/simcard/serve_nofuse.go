//go:build arm || 386 || mips || mipsle

package simcard

import (
	"context"
	"fmt"
	"runtime"
)

// FUSEAvailable reports whether this build can serve a card through FUSE.
const FUSEAvailable = false

// Serve is unavailable on 32-bit builds: go-fuse v2.12.1, the FUSE library fsbench uses,
// does not compile for them. The flash model (and Card) work everywhere.
func Serve(ctx context.Context, cfg Config) (Stats, error) {
	return Stats{}, fmt.Errorf("simcard serve is not available in this %s/%s build (the FUSE library does not support 32-bit targets); run it on a 64-bit machine, or model the card with flash profiles only", runtime.GOOS, runtime.GOARCH)
}
