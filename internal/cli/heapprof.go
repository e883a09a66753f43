package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// heapProfileEnv names a file to which fsbench writes a heap profile (pprof format) each time
// its live heap or its resident memory reaches a new high, and beside it (FILE.mem.txt) the
// Go runtime's memory classes and the kernel's view (VmRSS, RssAnon, RssFile) at that moment.
// It is for developers chasing fsbench's own memory (a 512 MiB board needs its memory for the
// page cache being measured):
//
//	FSBENCH_HEAPPROFILE=/tmp/heap.pprof fsbench run ...
//	go tool pprof -sample_index=inuse_space -top fsbench /tmp/heap.pprof
//	cat /tmp/heap.pprof.mem.txt
//
// The profile at the high point is the one that explains peak RSS (one at exit would show only
// what is still live then); its alloc_space view counts everything allocated up to that point.
// Not a flag: users have no use for it.
const heapProfileEnv = "FSBENCH_HEAPPROFILE"

// memClasses are the runtime/metrics the .mem.txt file lists: where the Go runtime's share of
// the resident memory is (the rest of RssAnon is outside it; RssFile is the binary's pages).
var memClasses = []string{
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/total:bytes",
}

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
	samples := make([]metrics.Sample, len(memClasses))
	for i, n := range memClasses {
		samples[i].Name = n
	}
	write := func() {
		err := writeHeapProfile(path)
		if err == nil {
			err = writeMemClasses(path+".mem.txt", samples)
		}
		if err != nil && !failed {
			failed = true
			fmt.Fprintf(errw, "fsbench: %s: %v\n", heapProfileEnv, err)
		}
	}
	var highLive, highRSS uint64
	check := func() {
		metrics.Read(samples)
		live := samples[0].Value.Uint64() // as of the last GC: what the heap profile shows too
		rss := residentBytes()
		// A new high by at least 1/16 (and 1 MiB): writing a profile at every small step
		// would cost more than the memory it explains.
		newLive := live > highLive+highLive/16+1<<20
		newRSS := rss > highRSS+highRSS/16+1<<20
		if newLive || newRSS {
			highLive, highRSS = max(highLive, live), max(highRSS, rss)
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

// residentBytes is this process's resident memory (/proc/self/statm), 0 when unreadable.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// writeMemClasses writes the runtime's memory classes (read into samples just before) and
// the kernel's Vm and Rss lines of /proc/self/status.
func writeMemClasses(path string, samples []metrics.Sample) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", time.Now().Format(time.RFC3339))
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			fmt.Fprintf(&b, "%-48s %8.1f MiB\n", s.Name, float64(s.Value.Uint64())/(1<<20))
		}
	}
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "VmHWM") || strings.HasPrefix(l, "VmRSS") || strings.HasPrefix(l, "Rss") {
				b.WriteString(l + "\n")
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
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
