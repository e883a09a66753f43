// Package powercut measures how a filesystem survives losing power: a workload that knows what
// the filesystem promised it (every operation that returned from fsync, fdatasync or syncfs is
// acknowledged, and its state recorded in a manifest kept off the device), and the check of a
// filesystem after a cut against that manifest: every acknowledged file present with the
// acknowledged content or a later one, an atomic rename giving the old or the new file and
// never a mix, and what was lost that nobody was promised counted as expected loss.
//
// The cuts themselves (what a card loses when the power goes: its volatile cache, the page
// being programmed, the allocation unit being merged) are the flash model's business; this
// package only needs, for each acknowledgement, the position in the card's request stream at
// which it was given (Workload.Ack).
package powercut

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Op kinds of the workload.
const (
	OpCreate    = "create"    // a new small file, fsync'ed with its directory (a new directory with its parent)
	OpAppend    = "append"    // data appended to a file, fdatasync'ed
	OpOverwrite = "overwrite" // a region of a file rewritten in place, fsync'ed
	OpReplace   = "replace"   // the atomic-replace pattern: write tmp, fsync, rename over, fsync dir
	OpDelete    = "delete"    // unlink, fsync dir
	OpLarge     = "large"     // a large sequential write, not synced (its loss is expected)
	OpSyncfs    = "syncfs"    // syncfs: acknowledges everything written before it
	OpUnsynced  = "unsynced"  // a small write nobody syncs: never acknowledged
)

// Spec says how much work to do.
type Spec struct {
	Seed uint64
	// Ops is the number of operations (default 400).
	Ops int
	// Files bounds how many files exist at once (default 48).
	Files int
	// LargeBytes is the size of the large sequential writes (default 4 MiB).
	LargeBytes int
}

func (s Spec) withDefaults() Spec {
	if s.Ops == 0 {
		s.Ops = 400
	}
	if s.Files == 0 {
		s.Files = 48
	}
	if s.LargeBytes == 0 {
		s.LargeBytes = 4 << 20
	}
	return s
}

// Version is one state of a file that the workload wrote.
type Version struct {
	// Hash is the sha256 of the whole content (hex); "" for a deleted file.
	Hash string `json:"hash,omitempty"`
	Size int64  `json:"size"`
	// Deleted: the file was removed.
	Deleted bool `json:"deleted,omitempty"`
	// Ack is the card's request position at which this version was acknowledged (the fsync
	// that made it durable had returned); 0 when it never was.
	Ack uint64 `json:"ack,omitempty"`
	// Started is the card's request position before the operation began writing it.
	Started uint64 `json:"started"`
	// At is when the operation ended, since the workload started (for the unsynced work lost).
	At time.Duration `json:"at_ns"`
	// Op made it; Atomic marks a version written by the atomic-replace pattern, which must
	// appear whole or not at all.
	Op     string `json:"op"`
	Atomic bool   `json:"atomic,omitempty"`
	// Blocks are the sha256 of each 4 KiB block, so that a file caught between two versions
	// (an overwrite in flight) can be checked block by block.
	Blocks []string `json:"blocks,omitempty"`
}

// File is the history of one path.
type File struct {
	Path     string    `json:"path"` // relative to the workload's directory
	Versions []Version `json:"versions"`
}

// Manifest is what the workload was promised: every file's versions, in order, with their
// acknowledgements. It lives off the device under test.
type Manifest struct {
	Seed  uint64  `json:"seed"`
	Files []*File `json:"files"`
	// Acks are the card's request positions of every acknowledgement, in order, with their
	// times: a cut between two of them loses the work since the first.
	Acks []Ack `json:"acks"`
	// End is the card's request position when the workload ended.
	End uint64 `json:"end"`
}

// Ack is one acknowledgement: the position in the card's request stream and the time.
type Ack struct {
	Pos uint64        `json:"pos"`
	At  time.Duration `json:"at_ns"`
}

// Workload runs the operations in dir (on the filesystem under test).
type Workload struct {
	Spec Spec
	// Pos returns the card's request position now: how many requests it has received. It is
	// read after each sync returns (the acknowledgement) and before each operation starts.
	Pos func() (uint64, error)
	// Observer, when set, is told of each operation before it writes and when it is
	// acknowledged: a live power cut's host learns the promises from it (live.go).
	Observer Observer
}

// Observer follows a workload operation by operation, off the device (a live power cut's host).
type Observer interface {
	// Intent is called before operation n writes anything, with the file (empty for a syncfs)
	// and the version it will leave (its Ack, Started and At unset). The operation starts
	// when it returns: an observer that must know what may be in flight before it can be,
	// returns only once it knows.
	Intent(n int, path string, v Version) error
	// Acked is called when operation n's fsync, fdatasync or syncfs returned: a syncfs
	// acknowledges every version written before it.
	Acked(n int) error
}

// blockSize is the granularity at which a file caught between versions is checked.
const blockSize = 4096

// Run performs the workload and returns its manifest. The content of every write is derived
// from the seed and the operation, so that a run is reproducible.
func (w Workload) Run(ctx context.Context, dir string) (*Manifest, error) {
	spec := w.Spec.withDefaults()
	r := &workloadRun{w: w, dir: dir, rng: rand.New(rand.NewPCG(spec.Seed, 0x706f776572637574)),
		m: &Manifest{Seed: spec.Seed}, files: map[string]*File{}, start: time.Now()}
	for i := 0; i < spec.Ops; i++ {
		if err := ctx.Err(); err != nil {
			return r.m, err
		}
		if err := r.step(spec); err != nil {
			return r.m, err
		}
	}
	end, err := r.pos()
	r.m.End = end
	return r.m, err
}

// workloadRun is a workload in progress: the random stream, the manifest so far and the files
// that exist now.
type workloadRun struct {
	w     Workload
	dir   string
	rng   *rand.Rand
	m     *Manifest
	files map[string]*File
	live  []string // paths that exist now
	next  int      // the number of the next file created
	ops   int      // the number of the next operation
	start time.Time
}

// pos is the card's request position now (0 without a Pos).
func (r *workloadRun) pos() (uint64, error) {
	if r.w.Pos == nil {
		return 0, nil
	}
	return r.w.Pos()
}

// history is the manifest's entry of path, made on first use.
func (r *workloadRun) history(p string) *File {
	f, ok := r.files[p]
	if !ok {
		f = &File{Path: p}
		r.files[p] = f
		r.m.Files = append(r.m.Files, f)
	}
	return f
}

// ack records an acknowledgement at the card's position now, and returns that position.
func (r *workloadRun) ack() (uint64, error) {
	p, err := r.pos()
	if err != nil {
		return 0, err
	}
	r.m.Acks = append(r.m.Acks, Ack{Pos: p, At: time.Since(r.start)})
	return p, nil
}

// step performs one operation and records its version, acknowledged unless the operation
// is one that is not synced.
func (r *workloadRun) step(spec Spec) error {
	before, err := r.pos()
	if err != nil {
		return err
	}
	op := pickOp(r.rng, len(r.live), spec.Files)
	seed := r.rng.Uint64()
	n := r.ops
	r.ops++
	if op == OpSyncfs {
		if err := r.intent(n, "", Version{Op: OpSyncfs}); err != nil {
			return err
		}
		return r.syncfs(n)
	}
	w, done := r.plan(op, seed, spec)
	if !done {
		return nil
	}
	if err := r.intent(n, w.path, w.v); err != nil {
		return err
	}
	if err := w.do(); err != nil {
		return err
	}
	v := w.v
	v.Started = before
	v.At = time.Since(r.start)
	if op != OpLarge && op != OpUnsynced {
		if v.Ack, err = r.ack(); err != nil {
			return err
		}
		if err := r.acked(n); err != nil {
			return err
		}
	}
	f := r.history(w.path)
	f.Versions = append(f.Versions, v)
	return nil
}

// intent tells the observer, if any, what operation n is about to write, and waits until it
// may.
func (r *workloadRun) intent(n int, path string, v Version) error {
	if r.w.Observer == nil {
		return nil
	}
	return r.w.Observer.Intent(n, path, v)
}

// acked tells the observer, if any, that operation n's synchronisation returned.
func (r *workloadRun) acked(n int) error {
	if r.w.Observer == nil {
		return nil
	}
	return r.w.Observer.Acked(n)
}

// pendingWrite is an operation on one file, planned: the file, the version it will leave, and
// the writes that make it.
type pendingWrite struct {
	path string
	v    Version
	do   func() error
}

// plan chooses what op, which changes one file, will write and returns it; done is false when
// there is nothing to do (an overwrite of an empty file). The version is known before anything
// is written, so that an observer off the device can be told what may be in flight.
func (r *workloadRun) plan(op string, seed uint64, spec Spec) (w pendingWrite, done bool) {
	rng, dir := r.rng, r.dir
	switch op {
	case OpCreate, OpLarge, OpUnsynced:
		w.path = fmt.Sprintf("d%d/f%04d", r.next%4, r.next)
		r.next++
		size := 1024 + rng.IntN(63*1024)
		if op == OpLarge {
			size = spec.LargeBytes
		}
		data := content(seed, size)
		full := filepath.Join(dir, w.path)
		w.do = func() error { return writeNew(full, data, op == OpCreate) }
		w.v = version(data, op)
		r.live = append(r.live, w.path)
	case OpAppend:
		w.path = r.live[rng.IntN(len(r.live))]
		prev := current(r.history(w.path))
		data := append(readExpected(dir, w.path, prev), content(seed, 4096+rng.IntN(28*1024))...)
		full := filepath.Join(dir, w.path)
		w.do = func() error { return appendFile(full, data[prev.Size:]) }
		w.v = version(data, op)
	case OpOverwrite:
		w.path = r.live[rng.IntN(len(r.live))]
		prev := current(r.history(w.path))
		data := readExpected(dir, w.path, prev)
		if len(data) == 0 {
			return w, false
		}
		off := rng.IntN(len(data))
		n := min(len(data)-off, 4096+rng.IntN(16*1024))
		patch := content(seed, n)
		copy(data[off:], patch)
		full := filepath.Join(dir, w.path)
		w.do = func() error { return overwrite(full, int64(off), patch) }
		w.v = version(data, op)
	case OpReplace:
		w.path = r.live[rng.IntN(len(r.live))]
		data := content(seed, 1024+rng.IntN(31*1024))
		full := filepath.Join(dir, w.path)
		w.do = func() error { return replace(full, data) }
		w.v = version(data, op)
		w.v.Atomic = true
	case OpDelete:
		k := rng.IntN(len(r.live))
		w.path = r.live[k]
		full := filepath.Join(dir, w.path)
		w.do = func() error { return remove(full) }
		r.live = append(r.live[:k], r.live[k+1:]...)
		w.v = Version{Deleted: true, Op: op}
	}
	return w, true
}

// syncfs syncs the whole filesystem: everything written before it is durable now, so every
// version not acknowledged yet is acknowledged by it.
func (r *workloadRun) syncfs(n int) error {
	if err := syncfs(r.dir); err != nil {
		return err
	}
	p, err := r.ack()
	if err != nil {
		return err
	}
	if err := r.acked(n); err != nil {
		return err
	}
	for _, f := range r.m.Files {
		for j := range f.Versions {
			if f.Versions[j].Ack == 0 {
				f.Versions[j].Ack = p
			}
		}
	}
	return nil
}

// pickOp chooses the next operation: creates until there are files to work on, then a mix
// where the cheap cards' worst cases (small synced writes, renames, deletes) dominate.
func pickOp(rng *rand.Rand, live, maxFiles int) string {
	if live < 4 {
		return OpCreate
	}
	r := rng.IntN(100)
	switch {
	case r < 18 && live < maxFiles:
		return OpCreate
	case r < 36:
		return OpAppend
	case r < 52:
		return OpOverwrite
	case r < 70:
		return OpReplace
	case r < 80 && live > 8:
		return OpDelete
	case r < 85:
		return OpLarge
	case r < 93:
		return OpUnsynced
	default:
		return OpSyncfs
	}
}

// content is n deterministic bytes for an operation's seed: incompressible, so that
// compressing filesystems cannot shrink a torn write into something that looks whole.
func content(seed uint64, n int) []byte {
	out := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 0x636f6e74656e74))
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(out[i:], r.Uint64())
	}
	for i := n &^ 7; i < n; i++ {
		out[i] = byte(r.Uint64())
	}
	return out
}

func version(data []byte, op string) Version {
	v := Version{Hash: hash(data), Size: int64(len(data)), Op: op}
	for off := 0; off < len(data); off += blockSize {
		v.Blocks = append(v.Blocks, hash(data[off:min(off+blockSize, len(data))]))
	}
	return v
}

func hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:16])
}

// current is a file's latest version.
func current(f *File) Version {
	if len(f.Versions) == 0 {
		return Version{Deleted: true}
	}
	return f.Versions[len(f.Versions)-1]
}

// readExpected reads the file as the workload last wrote it (from the page cache: it is what
// the next version is built on).
func readExpected(dir, path string, prev Version) []byte {
	b, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil || int64(len(b)) != prev.Size {
		return make([]byte, 0, prev.Size)
	}
	return b
}

func writeNew(path string, data []byte, sync bool) error {
	if err := mkdirDurable(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && sync {
		err = syncDir(filepath.Dir(path))
	}
	return err
}

// mkdirDurable creates dir (and its missing parents) as a careful application does: each new
// directory and the directory holding it are fsynced, so that a file acknowledged in it later
// cannot be lost with a directory entry nobody made durable (ext2 and vfat lose those).
func mkdirDurable(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := mkdirDurable(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return errors.Join(syncDir(dir), syncDir(parent))
}

func appendFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = unix.Fdatasync(int(f.Fd()))
	}
	return errors.Join(err, f.Close())
}

func overwrite(path string, off int64, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, off)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// replace is the atomic-replace pattern every careful program uses: write a temporary file,
// make it durable, rename it over the target, make the directory durable.
func replace(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func remove(path string) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

func syncfs(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
