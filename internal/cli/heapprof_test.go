package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestHeapProfile: with FSBENCH_HEAPPROFILE set, a live heap that grows leaves a pprof file
// (gzip-compressed protobuf) and the memory classes beside it; unset, nothing is written.
func TestHeapProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	t.Setenv(heapProfileEnv, "")
	startHeapProfile(context.Background(), os.Stderr)()
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a profile was written with the variable unset")
	}

	t.Setenv(heapProfileEnv, path)
	var errs bytes.Buffer
	stop := startHeapProfile(context.Background(), &errs)
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 256<<10)) // 16 MiB live
	}
	runtime.GC()
	stop()
	runtime.KeepAlive(keep)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no profile after a 16 MiB live heap: %v (%s)", err, errs.String())
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("%s is not a gzip-compressed pprof profile (%d bytes)", path, len(b))
	}
	if mem, err := os.ReadFile(path + ".mem.txt"); err != nil || !bytes.Contains(mem, []byte("/gc/heap/live:bytes")) || !bytes.Contains(mem, []byte("VmHWM")) {
		t.Errorf("%s.mem.txt: %v\n%s", path, err, mem)
	}
	if errs.Len() > 0 {
		t.Errorf("errors reported: %s", errs.String())
	}
}
