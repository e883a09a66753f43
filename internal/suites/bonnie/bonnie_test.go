package bonnie

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/suites/suitekit"
	"github.com/fsbench/fsbench/internal/testkit/fakefs"
)

func TestBlockIOCounts(t *testing.T) {
	tests := []struct {
		name        string
		size, chunk uint64
		wantChunks  int
	}{
		{"whole chunks", 64 << 10, 8192, 8},
		{"partial last chunk", 64<<10 + 100, 8192, 9},
		{"chunk larger than the pattern", 4 << 20, 2 << 20, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fakefs.New("/m")
			ctx := context.Background()
			p, err := blockWrite(ctx, c, "/m/file", tc.size, tc.chunk)
			if err != nil {
				t.Fatal(err)
			}
			// Writes of the pattern buffer may be split at its end: count bytes exactly.
			if p.Bytes != tc.size || c.Written != tc.size || uint64(len(c.Files["/m/file"])) != tc.size {
				t.Errorf("write: phase %d bytes, fs %d written, file %d; want %d", p.Bytes, c.Written, len(c.Files["/m/file"]), tc.size)
			}
			if c.Syncfses != 1 || c.Creates != 1 || p.Lat.N() != uint64(p.Ops) {
				t.Errorf("write: syncfs %d creates %d latencies %d ops %d", c.Syncfses, c.Creates, p.Lat.N(), p.Ops)
			}
			c.Written, c.Writes, c.Reads, c.Read = 0, 0, 0, 0
			p, err = blockRewrite(ctx, c, "/m/file", tc.size, tc.chunk)
			if err != nil {
				t.Fatal(err)
			}
			if p.Ops != tc.wantChunks || c.Writes != tc.wantChunks || c.Reads != tc.wantChunks || c.Written != tc.size || c.Read != tc.size {
				t.Errorf("rewrite: %d ops, %d writes, %d reads, %d written, %d read; want %d chunks of %d bytes", p.Ops, c.Writes, c.Reads, c.Written, c.Read, tc.wantChunks, tc.size)
			}
			if c.Syncfses != 2 {
				t.Errorf("rewrite did not syncfs: %d", c.Syncfses)
			}
			c.Read = 0
			p, err = blockRead(ctx, c, "/m/file", tc.chunk)
			if err != nil {
				t.Fatal(err)
			}
			if p.Bytes != tc.size || c.Read != tc.size || p.Ops != tc.wantChunks {
				t.Errorf("read: %d bytes in %d ops (fs read %d); want %d in %d", p.Bytes, p.Ops, c.Read, tc.size, tc.wantChunks)
			}
		})
	}
}

func TestSeeksCounts(t *testing.T) {
	c := fakefs.New("/m")
	ctx := context.Background()
	const size, chunk = 1 << 20, 8192
	if _, err := blockWrite(ctx, c, "/m/file", size, chunk); err != nil {
		t.Fatal(err)
	}
	c.Writes, c.Reads, c.Written, c.Read = 0, 0, 0, 0
	p, err := seeks(ctx, c, "/m/file", size, chunk, 8192, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ops != 8192 || c.Reads != 8192 || p.Lat.N() != 8192 {
		t.Errorf("%d seeks, %d reads, %d latencies; want 8192", p.Ops, c.Reads, p.Lat.N())
	}
	// One seek in ten writes its chunk back: binomial(8192, 0.1) is within ±5σ of 819.
	if sd := math.Sqrt(8192 * 0.1 * 0.9); math.Abs(float64(c.Writes)-819.2) > 5*sd {
		t.Errorf("%d rewrites among 8192 seeks, want about 10 %%", c.Writes)
	}
	if uint64(len(c.Files["/m/file"])) != size {
		t.Errorf("the seeks changed the file size to %d", len(c.Files["/m/file"]))
	}
	if _, err := seeks(ctx, c, "/m/file", 100, chunk, 10, 3, 1); err == nil {
		t.Error("a file smaller than one chunk was accepted")
	}
}

func TestCreateStatDeleteCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  int
		dirs   int
		random bool
	}{
		{"sequential, one directory", 1000, 1, false},
		{"sequential, 10 directories", 1024, 10, false},
		{"random, 7 directories", 999, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakefs.New("/m")
			ctx := context.Background()
			set := makeFileSet("/m/b", tc.files, tc.dirs, tc.random, 1)
			p, err := createFiles(ctx, c, "/m/b", set)
			if err != nil {
				t.Fatal(err)
			}
			if p.Ops != tc.files || c.Creates != tc.files || c.Mkdirs != tc.dirs+1 || c.Syncfses != 1 {
				t.Errorf("create: %d ops, %d creates, %d mkdirs, %d syncfs", p.Ops, c.Creates, c.Mkdirs, c.Syncfses)
			}
			if n, err := countFiles(c, "/m/b"); err != nil || n != tc.files {
				t.Errorf("countFiles = %d, %v; want %d", n, err, tc.files)
			}
			// The random set is the same for the same count and seed: stat and delete find it.
			again := makeFileSet("/m/b", tc.files, tc.dirs, tc.random, 1)
			if !slices.Equal(again.paths, set.paths) {
				t.Fatal("makeFileSet is not deterministic")
			}
			var paths []string
			if tc.random {
				paths = shuffled(set.paths, 2)
				if slices.Equal(paths, set.paths) {
					t.Error("random stat order is the creation order")
				}
			} else if paths, err = listFiles(c, set); err != nil {
				t.Fatal(err)
			}
			p, err = deleteFiles(ctx, c, "/m/b", set, paths)
			if err != nil {
				t.Fatal(err)
			}
			if p.Ops != tc.files || c.Removes != tc.files || len(c.Files) != 0 || len(c.Dirs) != 1 || c.Syncfses != 2 {
				t.Errorf("delete: %d ops, %d removes, %d files and %d dirs left, %d syncfs", p.Ops, c.Removes, len(c.Files), len(c.Dirs), c.Syncfses)
			}
		})
	}
}

func TestSequentialNamesSortInCreationOrder(t *testing.T) {
	set := makeFileSet("/m/b", 500, 3, false, 1)
	for i := 1; i < len(set.paths); i++ {
		if filepath.Dir(set.paths[i]) == filepath.Dir(set.paths[i-1]) && set.paths[i] < set.paths[i-1] {
			t.Fatalf("%s sorts before %s", set.paths[i], set.paths[i-1])
		}
	}
}

func TestBonnieSize(t *testing.T) {
	const gib = 1 << 30
	tests := []struct {
		name             string
		want, avail, ram uint64
		size             uint64
		notes            []string
	}{
		{"2 x RAM fits", 0, 100 * gib, 4 * gib, 8 * gib, nil},
		{"capped to the device", 0, 1 * gib, 4 * gib, 614 << 20, []string{"capped", "smaller than RAM"}},
		{"explicit size", 512 << 20, 10 * gib, 256 << 20, 512 << 20, nil},
		{"explicit, smaller than RAM", 100<<20 + 5, 10 * gib, 4 * gib, 100 << 20, []string{"smaller than RAM"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			size, note := bonnieSize(tc.want, tc.avail, tc.ram)
			if size != tc.size {
				t.Errorf("size %d, want %d", size, tc.size)
			}
			for _, n := range tc.notes {
				if !strings.Contains(note, n) {
					t.Errorf("note %q lacks %q", note, n)
				}
			}
			if tc.notes == nil && note != "" {
				t.Errorf("unexpected note %q", note)
			}
		})
	}
}

func TestBonnieFiles(t *testing.T) {
	tests := []struct {
		want   int
		inodes uint64
		n      int
		noted  bool
	}{
		{16384, 0, 16384, false},      // btrfs reports no inode count
		{16384, 100000, 16384, false}, // fits
		{16384, 10000, 7168, true},    // 80 % of 10000, in units of 1024
		{16384, 1000, 800, true},      // fewer than 1024 possible
	}
	for _, tc := range tests {
		n, note := bonnieFiles(tc.want, tc.inodes)
		if n != tc.n || (note != "") != tc.noted {
			t.Errorf("bonnieFiles(%d, %d) = %d, %q; want %d (noted %v)", tc.want, tc.inodes, n, note, tc.n, tc.noted)
		}
	}
}

// TestCreateFilesOS runs the create, stat and delete phases with the real suitekit.OS (the
// openat/fstatat/unlinkat path of dirFDs) in a temporary directory: every file exists and is
// empty, one latency per file, creating an existing file fails (O_EXCL, as bonnie++), and the
// delete phase leaves nothing.
func TestCreateFilesOS(t *testing.T) {
	root := filepath.Join(t.TempDir(), "c")
	set := makeFileSet(root, 50, 2, false, 1)
	p, err := createFiles(context.Background(), suitekit.OS{}, root, set)
	if err != nil {
		t.Fatal(err)
	}
	if p.Ops != 50 || p.Lat.N() != 50 {
		t.Errorf("%d ops, %d latencies; want 50", p.Ops, p.Lat.N())
	}
	for _, path := range set.paths {
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v %v", path, fi, err)
		}
	}
	if err := (&dirFDs{}).create(set.paths[0]); !errors.Is(err, os.ErrExist) {
		t.Errorf("creating an existing file: %v, want ErrExist", err)
	}
	// The timed loops of the stat tests: readdir order straight from getdents64, and a given
	// order (creation order, then a random one) resolved to directory descriptors beforehand.
	if s, err := statDirs(context.Background(), set.dirs); err != nil || s.Ops != 50 || s.Lat.N() != 50 {
		t.Errorf("statDirs: %d ops, %d latencies, %v; want 50", s.Ops, s.Lat.N(), err)
	}
	dirs := &dirFDs{}
	for _, order := range [][]string{set.paths, shuffled(set.paths, 2)} {
		ents, err := dirs.resolve(order)
		if err != nil {
			t.Fatal(err)
		}
		if s, err := statEntries(context.Background(), ents); err != nil || s.Ops != 50 {
			t.Errorf("statEntries: %d ops, %v; want 50", s.Ops, err)
		}
	}
	dirs.close()
	paths, err := listFiles(suitekit.OS{}, set)
	if err != nil || len(paths) != 50 {
		t.Fatalf("listed %d files, %v", len(paths), err)
	}
	d, err := deleteFiles(context.Background(), suitekit.OS{}, root, set, paths)
	if err != nil || d.Ops != 50 {
		t.Errorf("delete: %d ops, %v", d.Ops, err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there after the delete phase: %v", root, err)
	}
	if _, err := statDirs(context.Background(), set.dirs[:1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat in a removed directory: %v, want ErrNotExist", err)
	}
}

// TestStatLoopsCount: the stat tests' loops stat every file once, whatever the shape of the
// set (one or many directories, bonnie++'s sequential or random names), on a real filesystem.
func TestStatLoopsCount(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  int
		dirs   int
		random bool
	}{
		{"sequential, one directory", 1000, 1, false},
		{"sequential, 10 directories", 1024, 10, false},
		{"random, 7 directories", 999, 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			root := filepath.Join(t.TempDir(), "b")
			set := makeFileSet(root, tc.files, tc.dirs, tc.random, 1)
			if _, err := createFiles(ctx, suitekit.OS{}, root, set); err != nil {
				t.Fatal(err)
			}
			if p, err := statDirs(ctx, set.dirs); err != nil || p.Ops != tc.files || p.Lat.N() != uint64(tc.files) {
				t.Errorf("statDirs: %d ops, %d latencies, %v; want %d", p.Ops, p.Lat.N(), err, tc.files)
			}
			dirs := &dirFDs{}
			defer dirs.close()
			ents, err := dirs.resolve(shuffled(set.paths, 2))
			if err != nil {
				t.Fatal(err)
			}
			if p, err := statEntries(ctx, ents); err != nil || p.Ops != tc.files || p.Lat.N() != uint64(tc.files) {
				t.Errorf("statEntries: %d ops, %d latencies, %v; want %d", p.Ops, p.Lat.N(), err, tc.files)
			}
		})
	}
}

// TestDirentName: the getdents64 records statDirs walks, well formed and not.
func TestDirentName(t *testing.T) {
	rec := func(name string, reclen int) []byte {
		b := make([]byte, reclen)
		binary.NativeEndian.PutUint16(b[16:18], uint16(reclen))
		copy(b[19:], name)
		return b
	}
	for _, tc := range []struct {
		desc   string
		b      []byte
		name   string
		reclen int
		ok     bool
	}{
		{"a name padded with NULs", rec("0000000001abcdefg", 40), "0000000001abcdefg", 40, true},
		{"a name that fills the record but its NUL", rec("abc", 24), "abc", 24, true},
		{"two records: the first is read", append(rec("x", 24), rec("y", 24)...), "x", 24, true},
		{"shorter than a header", make([]byte, 10), "", 0, false},
		{"a record length of zero", make([]byte, 32), "", 0, false},
		{"a record longer than the buffer", rec("abc", 24)[:20], "", 0, false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			name, n, ok := direntName(tc.b)
			if name != tc.name || n != tc.reclen || ok != tc.ok {
				t.Errorf("direntName = %q, %d, %v; want %q, %d, %v", name, n, ok, tc.name, tc.reclen, tc.ok)
			}
		})
	}
}
