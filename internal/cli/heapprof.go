package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// heapProfileEnv names a file to which fsbench writes a heap profile (pprof format) each time its
// live heap reaches a new high. It is for developers chasing fsbench's
// own memory (a 512 MiB board needs its memory for the page cache being measured):
//
//	FSBENCH_HEAPPROFILE=/tmp/heap.pprof fsbench run ...
//	go tool pprof -sample_index=inuse_space -top fsbench /tmp/heap.pprof
//
// The profile at the high point is the one that explains peak RSS (one at exit would show only
// what is still live then); its alloc_space view counts everything allocated up to that point.
// Not a flag: users have no use for it.
const heapProfileEnv = "FSBENCH_HEAPPROFILE"

// startHeapProfile starts the sampler named by FSBENCH_HEAPPROFILE, if set, and returns the
// function that stops it. A profile that cannot be written is reported once on errw; the run
// goes on.
func startHeapProfile(ctx context.Context, errw io.Writer) func() {
	path := os.Getenv(heapProfileEnv)
	if path == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var failed bool
	write := func() {
		if err := writeHeapProfile(path); err != nil && !failed {
			failed = true
			fmt.Fprintf(errw, "fsbench: %s: %v\n", heapProfileEnv, err)
		}
	}
	// The live heap as of the last GC: what the heap profile shows too.
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var high uint64
	check := func() {
		metrics.Read(sample)
		// A new high by at least 1/16 (and 1 MiB): writing a profile at every small step
		// would cost more than the memory it explains.
		if v := sample[0].Value.Uint64(); v > high+high/16+1<<20 {
			high = v
			write()
		}
	}
	go func() {
		defer close(done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				check()
			}
		}
	}()
	return func() {
		cancel()
		<-done
		check() // a high reached since the last tick
	}
}

// writeHeapProfile writes the heap profile to path through a temporary file, so that a reader
// never sees half a profile.
func writeHeapProfile(path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
