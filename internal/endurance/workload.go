package endurance

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/catalog"
)

// The workloads: a day of a device's writes.
const (
	// WorkloadBootlin is the Bootlin study's write tests, as a default run measures them:
	// the dataset copied in 5 times, read_remove_write, remove, the video copied in 5 times. The
	// wear line's lifetime is computed from exactly these tests.
	WorkloadBootlin = "bootlin"
	// WorkloadLogging is a logging device's day: log files appended line by line, made durable
	// every 4 KiB, rotated and compressed at the end of the day.
	WorkloadLogging = "logging"
	// WorkloadUpdate is an update day: a share of the installed packages replaced the way dpkg
	// does it (each file written beside the old one, fsync'ed, renamed over it).
	WorkloadUpdate = "update"
)

// Workloads lists the workloads, in the order the documentation gives them.
var Workloads = []string{WorkloadBootlin, WorkloadLogging, WorkloadUpdate}

// Default day sizes of the workloads that have one.
const (
	DefaultLoggingDay = 32 << 20
	DefaultUpdateDay  = 64 << 20
)

// NewWorkload returns the named workload; dayBytes sizes the logging and update days (0: their
// defaults).
func NewWorkload(name string, dayBytes uint64) (Workload, error) {
	switch name {
	case WorkloadBootlin:
		return bootlin{}, nil
	case WorkloadLogging:
		return logging{day: orDefault(dayBytes, DefaultLoggingDay)}, nil
	case WorkloadUpdate:
		return update{day: orDefault(dayBytes, DefaultUpdateDay)}, nil
	}
	return nil, fmt.Errorf("unknown endurance workload %q (known: %s)", name, strings.Join(Workloads, ", "))
}

func orDefault(v, d uint64) uint64 {
	if v == 0 {
		return d
	}
	return v
}

// ---- bootlin: the write tests of a default run ----

type bootlin struct{}

func (bootlin) Name() string { return WorkloadBootlin }

// The engine's names for what its write tests leave on the filesystem (internal/suite).
func copyDir(i int) string   { return fmt.Sprintf("copy-%d", i) }
func videoName(i int) string { return fmt.Sprintf("video-%d.bin", i) }

// Day runs the engine's remove, write, read_remove_write, remove and video_write tests, as a
// default run does (and the wear line's lifetime is computed from). After read_remove_write it
// verifies the dataset's copies it left before the removal takes them; the videos stay
// promised at the end of the day.
func (bootlin) Day(ctx context.Context, env Env, n int, m *Manifest) (Day, error) {
	var d Day
	tree, err := treeHashes(env.Source)
	if err != nil {
		return d, err
	}
	run := func(test string) error {
		ms, err := env.RunTest(ctx, test)
		for _, x := range ms {
			d.Measurements = append(d.Measurements, x)
			if x.LogicalBytes > 0 {
				d.Logical += x.LogicalBytes
				d.Seconds += x.WallSeconds
			}
		}
		return err
	}
	// The previous day's videos go first, as the remove test empties a filesystem.
	if err := run(catalog.Remove); err != nil {
		return d, err
	}
	clear(m.Files)
	if err := run(catalog.Write); err != nil {
		return d, err
	}
	for i := 1; i <= env.Copies; i++ {
		putTree(m, copyDir(i), tree)
	}
	if err := run(catalog.ReadRemoveWrite); err != nil {
		return d, err
	}
	for i := 1; i <= env.Copies; i++ {
		m.RemoveUnder(copyDir(i))
		putTree(m, copyDir(i+env.Copies), tree)
	}
	// The copies are read back now, before the removal takes them: from the card, their
	// cached pages dropped first (Manifest.Verify).
	d.Verified = m.Verify(env.Dir)
	if err := run(catalog.Remove); err != nil {
		return d, err
	}
	clear(m.Files)
	if err := run(catalog.VideoWrite); err != nil {
		return d, err
	}
	video, err := fileHash(env.Video)
	if err != nil {
		return d, err
	}
	for i := 1; i <= env.VideoCopies; i++ {
		m.PutHash(videoName(i), video.Size, video.Hash)
	}
	return d, nil
}

// Resume empties the filesystem's promises: the day begins by removing everything.
func (bootlin) Resume(ctx context.Context, env Env, m *Manifest) error { return nil }

func putTree(m *Manifest, dir string, tree map[string]Entry) {
	for rel, e := range tree {
		m.PutHash(filepath.Join(dir, rel), e.Size, e.Hash)
	}
}

// treeHashes are the regular files of the dataset's tree (the copies' promised content), by
// relative path, computed once per tree.
func treeHashes(root string) (map[string]Entry, error) {
	treeMu.Lock()
	defer treeMu.Unlock()
	if t, ok := trees[root]; ok {
		return t, nil
	}
	t := map[string]Entry{}
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		e, err := fileHash(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		t[rel] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hashing the dataset %s: %w", root, err)
	}
	trees[root] = t
	return t, nil
}

var (
	treeMu sync.Mutex
	trees  = map[string]map[string]Entry{}
)

func fileHash(p string) (Entry, error) {
	f, err := os.Open(p)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return Entry{Size: n, Hash: hex.EncodeToString(h.Sum(nil))}, err
}

// ---- logging: log files appended, synced every 4 KiB, rotated daily ----

type logging struct{ day uint64 }

func (logging) Name() string { return WorkloadLogging }

// The logging day's files: four logs, each appended in lines and made durable every syncEvery
// bytes (as a logging daemon that syncs its journal), rotated at the end of the day: the day's
// log to .1, yesterday's .1 compressed to .2.gz, the oldest of keepDays compressed logs
// deleted.
var logNames = []string{"syslog", "daemon.log", "kern.log", "app.log"}

const (
	logDir    = "log"
	syncEvery = 4 << 10
	keepDays  = 7
)

// Day appends the day's lines to the four logs, fdatasync'ing each every 4 KiB, then rotates.
func (w logging) Day(ctx context.Context, env Env, n int, m *Manifest) (Day, error) {
	var d Day
	dir := filepath.Join(env.Dir, logDir)
	if err := mkdirSync(dir); err != nil {
		return d, err
	}
	var written uint64
	meas, err := env.Timed(catalog.Day, 0, func() error {
		files := make([]*os.File, len(logNames))
		defer func() {
			for _, f := range files {
				if f != nil {
					f.Close()
				}
			}
		}()
		for i, name := range logNames {
			f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				return err
			}
			files[i] = f
		}
		rng := rand.New(rand.NewPCG(env.Seed, uint64(n)))
		pending := make([][]byte, len(logNames))
		for line := 0; written < w.day; line++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			i := rng.IntN(len(logNames))
			text := logLine(rng, n, line, logNames[i])
			if _, err := files[i].Write(text); err != nil {
				return err
			}
			written += uint64(len(text))
			pending[i] = append(pending[i], text...)
			if len(pending[i]) >= syncEvery {
				if err := unix.Fdatasync(int(files[i].Fd())); err != nil {
					return fmt.Errorf("fdatasync %s: %w", logNames[i], err)
				}
				if err := m.Append(filepath.Join(logDir, logNames[i]), pending[i]); err != nil {
					return err
				}
				pending[i] = pending[i][:0]
			}
		}
		for i, f := range files {
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return fmt.Errorf("fdatasync %s: %w", logNames[i], err)
			}
			if err := m.Append(filepath.Join(logDir, logNames[i]), pending[i]); err != nil {
				return err
			}
		}
		return w.rotate(dir, m)
	})
	meas.LogicalBytes = written
	d.Measurements = append(d.Measurements, meas)
	d.Logical, d.Seconds = written, meas.WallSeconds
	return d, err
}

// logLine is one line of a log: a timestamp of day n, the host, a daemon and a message with
// numbers, as text logs are (they compress about 3 to 1).
func logLine(rng *rand.Rand, day, line int, name string) []byte {
	words := []string{"connection", "from", "accepted", "closed", "timeout", "retry", "sensor", "value", "state", "changed", "to", "ok", "warning", "queue", "length"}
	var b bytes.Buffer
	s := line % 86400
	fmt.Fprintf(&b, "day%04d %02d:%02d:%02d board %s[%d]:", day, s/3600, s/60%60, s%60, strings.TrimSuffix(name, ".log"), 100+rng.IntN(900))
	for range 4 + rng.IntN(12) {
		if rng.IntN(3) == 0 {
			fmt.Fprintf(&b, " %d", rng.IntN(100000))
		} else {
			b.WriteString(" " + words[rng.IntN(len(words))])
		}
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// rotate renames each log to .1 (its content promised as it was), compresses yesterday's .1
// to .2.gz (written, fsync'ed, then the .1 removed), shifts the older .gz and deletes the
// oldest, and syncs the directory.
func (logging) rotate(dir string, m *Manifest) error {
	for _, name := range logNames {
		rel := func(s string) string { return filepath.Join(logDir, s) }
		// The oldest goes; the others move up.
		for k := keepDays; k >= 2; k-- {
			from := fmt.Sprintf("%s.%d.gz", name, k)
			if k == keepDays {
				if err := removeIfExists(filepath.Join(dir, from)); err != nil {
					return err
				}
				m.Remove(rel(from))
				continue
			}
			to := fmt.Sprintf("%s.%d.gz", name, k+1)
			if err := renameIfExists(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
				return err
			}
			m.Rename(rel(from), rel(to))
		}
		one := filepath.Join(dir, name+".1")
		if data, err := os.ReadFile(one); err == nil {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(data)
			zw.Close()
			gz := name + ".2.gz"
			if err := writeSync(filepath.Join(dir, gz), z.Bytes()); err != nil {
				return err
			}
			m.Put(rel(gz), z.Bytes())
			if err := os.Remove(one); err != nil {
				return err
			}
			m.Remove(rel(name + ".1"))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := renameIfExists(filepath.Join(dir, name), one); err != nil {
			return err
		}
		m.Rename(rel(name), rel(name+".1"))
		if e, ok := m.Files[rel(name+".1")]; ok {
			e.Running = nil // a rotated log is appended no more
			m.Files[rel(name+".1")] = e
		}
	}
	return syncDir(dir)
}

// Resume cuts each log back to what was promised: what a killed day appended after its last
// sync was never promised, and the day appends after it.
func (logging) Resume(ctx context.Context, env Env, m *Manifest) error {
	for _, name := range logNames {
		rel := filepath.Join(logDir, name)
		p := filepath.Join(env.Dir, rel)
		e, ok := m.Files[rel]
		if !ok {
			if err := removeIfExists(p); err != nil {
				return err
			}
			continue
		}
		if st, err := os.Stat(p); err == nil && st.Size() > e.Size {
			if err := os.Truncate(p, e.Size); err != nil {
				return err
			}
		}
	}
	return nil
}

// ---- update: packages replaced the dpkg way ----

type update struct{ day uint64 }

func (update) Name() string { return WorkloadUpdate }

// The update workload's tree: packages of pkgFiles files each, their sizes drawn so that a
// package holds about pkgBytes; the tree holds treeDays days of updates, and a day replaces
// a 1/treeDays share of the packages, in turn.
const (
	pkgDir   = "usr"
	pkgFiles = 16
	pkgBytes = 2 << 20
	treeDays = 4
)

// packages is how many packages the tree holds for a day of dayBytes.
func (w update) packages() int { return max(treeDays, int(w.day*treeDays/pkgBytes)) }

// Day installs the tree on day 1 (every package, version 1), and on later days replaces every
// treeDays-th package (version n), each file written to NAME.dpkg-new, fsync'ed, then all of
// the package's files renamed over the old ones and the directory fsync'ed, as dpkg does.
func (w update) Day(ctx context.Context, env Env, n int, m *Manifest) (Day, error) {
	var d Day
	var logical uint64
	meas, err := env.Timed(catalog.Day, 0, func() error {
		for p := 0; p < w.packages(); p++ {
			if n > 1 && p%treeDays != (n-2)%treeDays {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := w.install(env, p, n, m)
			logical += b
			if err != nil {
				return err
			}
		}
		return nil
	})
	meas.LogicalBytes = logical
	d.Measurements = append(d.Measurements, meas)
	d.Logical, d.Seconds = logical, meas.WallSeconds
	return d, err
}

// pkgFile is file f of package p at version v: its path (relative) and content.
func (w update) pkgFile(seed uint64, p, f, v int) (string, []byte) {
	rng := rand.New(rand.NewPCG(seed^uint64(p)<<20^uint64(f), uint64(v)))
	size := 1024 + rng.IntN(2*pkgBytes/pkgFiles)
	b := make([]byte, size)
	var key [32]byte
	for i := range 8 {
		key[i] = byte(rng.Uint64())
	}
	rand.NewChaCha8(key).Read(b)
	return filepath.Join(pkgDir, fmt.Sprintf("pkg%04d", p), fmt.Sprintf("file%02d", f)), b
}

// install writes package p at version v the dpkg way and records it.
func (w update) install(env Env, p, v int, m *Manifest) (uint64, error) {
	var written uint64
	dir := filepath.Join(env.Dir, pkgDir, fmt.Sprintf("pkg%04d", p))
	if err := mkdirSync(dir); err != nil {
		return 0, err
	}
	type file struct {
		rel  string
		data []byte
	}
	var files []file
	for f := range pkgFiles {
		rel, data := w.pkgFile(env.Seed, p, f, v)
		if err := writeSync(filepath.Join(env.Dir, rel)+".dpkg-new", data); err != nil {
			return written, err
		}
		written += uint64(len(data))
		files = append(files, file{rel, data})
	}
	for _, f := range files {
		if err := os.Rename(filepath.Join(env.Dir, f.rel)+".dpkg-new", filepath.Join(env.Dir, f.rel)); err != nil {
			return written, err
		}
	}
	if err := syncDir(dir); err != nil {
		return written, err
	}
	for _, f := range files {
		m.Put(f.rel, f.data)
		e := m.Files[f.rel]
		e.Version = v
		m.Files[f.rel] = e
	}
	return written, nil
}

// Resume removes what a killed day left half done: its .dpkg-new files, and a package whose
// files are not all the promised version is installed again at that version.
func (w update) Resume(ctx context.Context, env Env, m *Manifest) error {
	root := filepath.Join(env.Dir, pkgDir)
	var stale []string
	filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".dpkg-new") {
			stale = append(stale, p)
		}
		return nil
	})
	for _, p := range stale {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	for p := 0; p < w.packages(); p++ {
		rel, _ := w.pkgFile(env.Seed, p, 0, 1)
		e, ok := m.Files[rel]
		if !ok || w.installed(env, p, e.Version) {
			continue
		}
		// A package the killed day left half replaced: the promised version again.
		if _, err := w.install(env, p, e.Version, m); err != nil {
			return err
		}
	}
	return nil
}

// installed reports whether every file of package p is the promised version v on disk.
func (w update) installed(env Env, p, v int) bool {
	for f := range pkgFiles {
		rel, data := w.pkgFile(env.Seed, p, f, v)
		got, err := os.ReadFile(filepath.Join(env.Dir, rel))
		if err != nil || !bytes.Equal(got, data) {
			return false
		}
	}
	return true
}

// ---- durable file operations ----

func writeSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// mkdirSync makes dir and its missing parents, each made durable with its parent.
func mkdirSync(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := mkdirSync(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return errors.Join(syncDir(dir), syncDir(filepath.Dir(dir)))
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func renameIfExists(from, to string) error {
	if err := os.Rename(from, to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
