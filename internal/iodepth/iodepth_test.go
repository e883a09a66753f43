package iodepth

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openDirect makes a file of size bytes in a temporary directory and opens it with O_DIRECT;
// it skips when the directory's filesystem has no direct I/O (tmpfs).
func openDirect(t *testing.T, size int64) (*os.File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("the filesystem of %s has no O_DIRECT (tmpfs?): set TMPDIR to a disk's filesystem", t.TempDir())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, path
}

// TestJobs runs each engine over a real file: the requests it reports are the ones done, a
// sequential write covers its region once, every block with the job's data (not zeroes).
func TestJobs(t *testing.T) {
	const size = 4 << 20
	for _, tc := range []struct {
		name   string
		job    Job
		engine string
	}{
		{"sequential write, depth 1", Job{Write: true, Block: 64 << 10, Size: size, Depth: 1}, "psync"},
		{"sequential write, depth 8", Job{Write: true, Block: 64 << 10, Size: size, Depth: 8}, "libaio"},
		{"random read, depth 32", Job{Random: true, Block: 4 << 10, Size: size, Depth: 32, Bytes: 2 << 20}, "libaio"},
		{"random write, depth 32, at an offset", Job{Write: true, Random: true, Block: 4 << 10, Offset: 1 << 20, Size: 1 << 20, Depth: 32, Bytes: 1 << 20}, "libaio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, path := openDirect(t, size)
			r, err := Run(context.Background(), int(f.Fd()), tc.job)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.job.Bytes
			if want == 0 {
				want = tc.job.Size
			}
			if r.Engine != tc.engine || r.Bytes != want || uint64(r.Ops)*tc.job.Block != want || r.Elapsed <= 0 || r.IOPS() <= 0 {
				t.Fatalf("result %+v: want engine %s, %d bytes in %d-byte requests", r, tc.engine, want, tc.job.Block)
			}
			if r.P50 > r.P99 || r.P99 > r.Max {
				t.Errorf("latencies out of order: p50 %v p99 %v max %v", r.P50, r.P99, r.Max)
			}
			if !tc.job.Write || tc.job.Random {
				return
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			zero := make([]byte, tc.job.Block)
			for off := uint64(0); off < size; off += tc.job.Block {
				if bytes.Equal(data[off:off+tc.job.Block], zero) {
					t.Fatalf("block at %d was not written", off)
				}
			}
		})
	}
}

// TestRuntime: a job with a runtime stops after about that long, and a cancelled context
// stops it with the context's error, nothing left in flight (io_destroy would wait for it).
func TestRuntime(t *testing.T) {
	f, _ := openDirect(t, 8<<20)
	start := time.Now()
	r, err := Run(context.Background(), int(f.Fd()), Job{Random: true, Block: 4 << 10, Size: 8 << 20, Depth: 16, Bytes: 1 << 40, Runtime: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 5*time.Second || r.Ops == 0 {
		t.Errorf("a 200 ms job took %v, %d requests", took, r.Ops)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, int(f.Fd()), Job{Random: true, Block: 4 << 10, Size: 8 << 20, Depth: 4, Bytes: 1 << 40}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v, want context.Canceled", err)
	}
}

// TestBadJob: a region smaller than one request is refused.
func TestBadJob(t *testing.T) {
	if _, err := Run(context.Background(), -1, Job{Block: 4096, Size: 1024}); err == nil {
		t.Error("a 1 KiB region with 4 KiB requests was accepted")
	}
}
