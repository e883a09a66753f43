package dataset

import (
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func deflateRatio(b []byte) float64 {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, 6)
	w.Write(b)
	w.Close()
	return float64(buf.Len()) / float64(len(b))
}

// treeEntry is what the tests compare between trees; it is read with the os package,
// independently of the walker under test.
type treeEntry struct {
	Path   string
	Mode   fs.FileMode
	Size   int64
	Sum    [32]byte // sha256 of the content of regular files
	Target string   // symlink target
	Mtime  int64    // nanoseconds
}

func readTreeEntries(t *testing.T, root string) []treeEntry {
	t.Helper()
	var ents []treeEntry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		e := treeEntry{Path: rel, Mode: fi.Mode(), Mtime: fi.ModTime().UnixNano()}
		switch {
		case fi.Mode().IsRegular():
			e.Size = fi.Size()
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Sum = sha256.Sum256(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.Target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		ents = append(ents, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ents
}

func treeHash(ents []treeEntry) string {
	h := sha256.New()
	for _, e := range ents {
		fmt.Fprintf(h, "%s\x00%o\x00%d\x00%x\x00%s\x00%d\n", e.Path, uint32(e.Mode), e.Size, e.Sum, e.Target, e.Mtime)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func generate(t *testing.T, spec Spec) (string, Stats) {
	t.Helper()
	dir := t.TempDir()
	st, err := Generate(context.Background(), dir, spec)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", spec, err)
	}
	return dir, st
}

func TestGenerateDeterministic(t *testing.T) {
	tests := []struct {
		name  string
		a, b  Spec
		equal bool
	}{
		{"same spec", Spec{Seed: 7, TargetBytes: 4 << 20}, Spec{Seed: 7, TargetBytes: 4 << 20}, true},
		{"other seed", Spec{Seed: 7, TargetBytes: 4 << 20}, Spec{Seed: 8, TargetBytes: 4 << 20}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			da, _ := generate(t, tt.a)
			db, _ := generate(t, tt.b)
			ha, hb := treeHash(readTreeEntries(t, da)), treeHash(readTreeEntries(t, db))
			if (ha == hb) != tt.equal {
				t.Errorf("tree hashes %s and %s: equal=%v, want %v", ha, hb, ha == hb, tt.equal)
			}
		})
	}
}

// TestGenerateGolden pins the generated tree, so that a change to the generator (which
// would make results incomparable with earlier runs) is deliberate: run with -update.
func TestGenerateGolden(t *testing.T) {
	dir, st := generate(t, Spec{Seed: 1, TargetBytes: 2 << 20})
	got := fmt.Sprintf("files %d dirs %d symlinks %d bytes %d largest %d median %d\ntree %s\n",
		st.Files, st.Dirs, st.Symlinks, st.Bytes, st.LargestFile, st.MedianFile, treeHash(readTreeEntries(t, dir)))
	golden := filepath.Join("testdata", "tree-seed1-2MiB.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("generated tree changed:\ngot  %s\nwant %s(run with -update if intended)", got, want)
	}
}

func TestGenerateSize(t *testing.T) {
	for _, target := range []uint64{1 << 20, 8 << 20, 64 << 20} {
		t.Run(fmt.Sprint(target>>20, "MiB"), func(t *testing.T) {
			dir, st := generate(t, Spec{Seed: 3, TargetBytes: target})
			if d := float64(st.Bytes)/float64(target) - 1; d < -0.05 || d > 0.05 {
				t.Errorf("Bytes = %d, want %d ±5%%", st.Bytes, target)
			}
			if st.LargestFile > target/8 {
				t.Errorf("LargestFile = %d > target/8 = %d", st.LargestFile, target/8)
			}
			d, err := Describe(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if d != st {
				t.Errorf("Describe = %+v, Generate returned %+v", d, st)
			}
			var sum uint64
			n := 0
			for _, e := range readTreeEntries(t, dir) {
				if e.Mode.IsRegular() {
					sum += uint64(e.Size)
					n++
				}
			}
			if sum != st.Bytes || n != st.Files {
				t.Errorf("tree holds %d files of %d bytes, Stats say %d files of %d bytes", n, sum, st.Files, st.Bytes)
			}
		})
	}
}

func TestGenerateShape(t *testing.T) {
	const target = 64 << 20
	dir, st := generate(t, Spec{Seed: 5, TargetBytes: target})
	t.Logf("%+v, mean %d", st, st.Bytes/uint64(st.Files))
	ents := readTreeEntries(t, dir)
	var sizes []int64
	modes := map[fs.FileMode]int{}
	empty := 0
	for _, e := range ents {
		if e.Mode.IsRegular() {
			sizes = append(sizes, e.Size)
			modes[e.Mode.Perm()]++
			if e.Size == 0 {
				empty++
			}
		}
	}
	slices.Sort(sizes)
	var top int64
	for _, s := range sizes[len(sizes)-len(sizes)/100:] {
		top += s
	}
	mean := st.Bytes / uint64(st.Files)
	checks := []struct {
		what string
		ok   bool
	}{
		{"median file 1-8 KiB", st.MedianFile >= 1<<10 && st.MedianFile <= 8<<10},
		{"mean file 15-35 KiB", mean >= 15<<10 && mean <= 35<<10},
		{"largest file >= 1 MiB (heavy tail)", st.LargestFile >= 1<<20},
		{"largest file <= target/8", st.LargestFile <= target/8},
		{"top 1% of files hold >= 20% of bytes", float64(top) >= 0.2*float64(st.Bytes)},
		{"symlinks present", st.Symlinks >= 10},
		{"many directories", st.Dirs >= 100},
		{"a few empty files", empty >= 3},
		{"executables (0755)", modes[0o755] >= 10},
		{"0644 files are the majority", modes[0o644] > len(sizes)/2},
		{"compressibility 0.35-0.60", st.Compressibility >= 0.35 && st.Compressibility <= 0.60},
		{"sampled (tree > sample budget)", st.SampledBytes > 0 && st.SampledBytes <= sampleBudget},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: failed (stats %+v, mean %d, top1%% %d, empty %d, modes %v)", c.what, st, mean, top, empty, modes)
		}
	}
	// Rootfs landmarks.
	for link, want := range map[string]string{"bin": "usr/bin", "lib": "usr/lib"} {
		if got, err := os.Readlink(filepath.Join(dir, link)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want -> %q", link, got, err, want)
		}
	}
	sonames := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Path, "usr/lib/"+arch+"/lib") && e.Target != "" {
			if fi, err := os.Stat(filepath.Join(dir, e.Path)); err != nil || !fi.Mode().IsRegular() {
				t.Errorf("soname link %s -> %s does not resolve to a file: %v", e.Path, e.Target, err)
			}
			sonames++
		}
	}
	for _, d := range []string{"etc", "usr/bin", "usr/share/doc", "usr/share/locale", "var/lib/dpkg/info"} {
		if fi, err := os.Lstat(filepath.Join(dir, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s is not a directory: %v", d, err)
		}
	}
	if sonames < 5 {
		t.Errorf("%d soname links in usr/lib/%s, want >= 5", sonames, arch)
	}
}

func TestContentRatios(t *testing.T) {
	tests := []struct {
		name     string
		kind     uint8
		min, max float64
	}{
		{"text", contentText, 0.25, 0.40},
		{"binary", contentBinary, 0.40, 0.60},
		{"compressed", contentCompressed, 0.98, 1.01},
	}
	b := make([]byte, sampleBlock)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g contentGen
			var sum float64
			const n = 32
			for i := range n {
				g.reset(tt.kind, 11, uint64(i), magics[".gz"])
				g.fill(b)
				sum += deflateRatio(b)
			}
			if r := sum / n; r < tt.min || r > tt.max {
				t.Errorf("mean deflate ratio of 64 KiB blocks = %.3f, want %.2f-%.2f", r, tt.min, tt.max)
			}
		})
	}
}

// TestContentChunking: a file's content must not depend on how it is cut into chunks other
// than at multiples of 16 (Generate writes 256 KiB chunks).
func TestContentChunking(t *testing.T) {
	for _, kind := range []uint8{contentText, contentBinary, contentCompressed} {
		var g contentGen
		whole := make([]byte, 100000)
		g.reset(kind, 1, 2, magics[".png"])
		g.fill(whole)
		g.reset(kind, 1, 2, magics[".png"])
		var parts []byte
		for _, n := range []int{48, 4096, 16, 50000} {
			p := make([]byte, n)
			g.fill(p)
			parts = append(parts, p...)
		}
		if !bytes.Equal(whole[:len(parts)], parts) {
			t.Errorf("kind %d: chunked content differs from whole", kind)
		}
	}
}

func TestWriteVideo(t *testing.T) {
	dir := t.TempDir()
	const size = 3<<20 + 5
	for _, name := range []string{"a", "b"} {
		if err := WriteVideo(context.Background(), filepath.Join(dir, name), size, 9); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Describe(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes != 2*size || st.Compressibility <= 0.98 {
		t.Errorf("videos: %d bytes (want %d), compressibility %.4f (want > 0.98)", st.Bytes, 2*size, st.Compressibility)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a"))
	b, _ := os.ReadFile(filepath.Join(dir, "b"))
	if !bytes.Equal(a, b) {
		t.Error("same seed gave different videos")
	}
	if err := WriteVideo(context.Background(), filepath.Join(dir, "c"), 1<<20, 10); err != nil {
		t.Fatal(err)
	}
	if c, _ := os.ReadFile(filepath.Join(dir, "c")); bytes.Equal(c, a[:1<<20]) {
		t.Error("different seeds gave the same video")
	}
}

func TestCopyTree(t *testing.T) {
	src, _ := generate(t, Spec{Seed: 2, TargetBytes: 4 << 20})
	// What cp -a also handles: hard links and FIFOs.
	if err := os.Link(filepath.Join(src, "etc/passwd"), filepath.Join(src, "etc/passwd-link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(src, "run/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := readTreeEntries(t, src)
	desc, err := Describe(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		opt  CopyOptions
	}{{"all", CopyOptions{}}, {"no symlinks", CopyOptions{NoSymlinks: true}}} {
		t.Run(tt.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "copy")
			cs, err := CopyTree(context.Background(), src, dst, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			wantEnts := want
			wantCS := CopyStats{Files: desc.Files - 1, Dirs: desc.Dirs, Symlinks: desc.Symlinks, HardLinks: 1, Special: 1,
				Bytes: desc.Bytes - uint64(fileSize(t, filepath.Join(src, "etc/passwd")))}
			if tt.opt.NoSymlinks {
				wantEnts = slices.DeleteFunc(slices.Clone(want), func(e treeEntry) bool { return e.Target != "" })
				wantCS.Symlinks, wantCS.SkippedSymlinks = 0, desc.Symlinks
			}
			if cs != wantCS {
				t.Errorf("CopyStats = %+v, want %+v", cs, wantCS)
			}
			got := readTreeEntries(t, dst)
			if treeHash(got) != treeHash(wantEnts) {
				for i := range min(len(got), len(wantEnts)) {
					if got[i] != wantEnts[i] {
						t.Fatalf("first difference: got %+v, want %+v", got[i], wantEnts[i])
					}
				}
				t.Fatalf("copied tree has %d entries, source %d", len(got), len(wantEnts))
			}
			var a, b unix.Stat_t
			unix.Stat(filepath.Join(dst, "etc/passwd"), &a)
			unix.Stat(filepath.Join(dst, "etc/passwd-link"), &b)
			if a.Ino != b.Ino {
				t.Error("hard link was not preserved")
			}
			sfi, _ := os.Stat(src)
			dfi, _ := os.Stat(dst)
			if sfi.Mode() != dfi.Mode() || !sfi.ModTime().Equal(dfi.ModTime()) {
				t.Errorf("root: mode %v mtime %v, want %v %v", dfi.Mode(), dfi.ModTime(), sfi.Mode(), sfi.ModTime())
			}
			if _, err := CopyTree(context.Background(), src, dst, tt.opt); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Errorf("copy onto an existing destination: err = %v, want 'already exists'", err)
			}
		})
	}
}

func fileSize(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestCopyTreeFull(t *testing.T) {
	mnt := mountTmpfs(t, "1m")
	src, _ := generate(t, Spec{Seed: 4, TargetBytes: 4 << 20})
	cs, err := CopyTree(context.Background(), src, filepath.Join(mnt, "dst"), CopyOptions{})
	if !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("err = %v, want ENOSPC", err)
	}
	if !strings.Contains(err.Error(), mnt+"/dst/") || !strings.Contains(err.Error(), "full") {
		t.Errorf("error %q does not name the file under %s or say the filesystem is full", err, mnt)
	}
	if cs.Bytes == 0 || cs.Bytes > 1<<20 {
		t.Errorf("copied %d bytes before failing, want between 1 and 1 MiB", cs.Bytes)
	}
}

func TestReadTree(t *testing.T) {
	dir, st := generate(t, Spec{Seed: 6, TargetBytes: 8 << 20})
	// A file that is not in Stats' count of bytes via a symlink must not be followed.
	if err := os.Symlink("/usr", filepath.Join(dir, "outside")); err != nil {
		t.Fatal(err)
	}
	rs, err := ReadTree(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Files != st.Files || rs.Bytes != st.Bytes {
		t.Errorf("ReadTree = %+v, want %d files, %d bytes", rs, st.Files, st.Bytes)
	}
	if _, err := ReadTree(context.Background(), filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("ReadTree of a missing dir: err = %v, want one naming it", err)
	}
}

// countdownCtx is cancelled after Err has been called n times: it cancels in the middle of
// an operation deterministically.
type countdownCtx struct {
	context.Context
	n atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func TestCancel(t *testing.T) {
	src, _ := generate(t, Spec{Seed: 8, TargetBytes: 16 << 20})
	video := filepath.Join(t.TempDir(), "video")
	tests := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"Generate", func(ctx context.Context) error {
			_, err := Generate(ctx, t.TempDir(), Spec{Seed: 1, TargetBytes: 16 << 20})
			return err
		}},
		{"CopyTree", func(ctx context.Context) error {
			_, err := CopyTree(ctx, src, filepath.Join(t.TempDir(), "d"), CopyOptions{})
			return err
		}},
		{"ReadTree", func(ctx context.Context) error { _, err := ReadTree(ctx, src); return err }},
		{"WriteVideo", func(ctx context.Context) error { return WriteVideo(ctx, video, 64<<20, 1) }},
		{"Describe", func(ctx context.Context) error { _, err := Describe(ctx, src); return err }},
	}
	for _, tt := range tests {
		for _, after := range []int64{0, 50} {
			t.Run(fmt.Sprintf("%s/after %d checks", tt.name, after), func(t *testing.T) {
				ctx := &countdownCtx{Context: context.Background()}
				ctx.n.Store(after)
				start := time.Now()
				err := tt.run(ctx)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want context.Canceled", err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("took %v to stop", d)
				}
			})
		}
	}
	// A real cancellation from another goroutine.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Millisecond, cancel)
	_, err := Generate(ctx, t.TempDir(), Spec{Seed: 1, TargetBytes: 256 << 20})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Generate with cancel: err = %v", err)
	}
}

// NoModes (vfat, which refuses a chmod to the sticky bit of /tmp) leaves the target's own
// permission bits; without it they are copied.
func TestCopyTreeNoModes(t *testing.T) {
	src := t.TempDir()
	sticky := filepath.Join(src, "tmp")
	if err := os.Mkdir(sticky, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil { // os.Chmod ignores a raw 0o1000
		t.Fatal(err)
	}
	for _, noModes := range []bool{false, true} {
		dst := filepath.Join(t.TempDir(), "copy")
		if _, err := CopyTree(context.Background(), src, dst, CopyOptions{NoModes: noModes}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(dst, "tmp"))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode()&os.ModeSticky != 0; got == noModes {
			t.Errorf("NoModes=%v: sticky bit copied = %v", noModes, got)
		}
	}
}
