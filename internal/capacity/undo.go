package capacity

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsbench/fsbench/internal/procid"
)

// DefaultUndoDir is where the probe keeps its undo logs. Not /run (a tmpfs, where the other
// ledgers live): a log must survive a power loss of the host too, since the card keeps the
// probe's blocks through it.
const DefaultUndoDir = "/var/lib/fsbench/undo"

// An undo log holds every block the probe is about to overwrite, as it was, written and
// synced before the block is: after a crash, a SIGKILL or a power loss, replaying it in
// reverse puts the card back byte for byte, whatever the card's wrap or cache did with the
// probe's blocks (the oldest copy of any flash block is written last).
//
// Format: the line "fsbench-undo 1", a line of JSON (undoMeta), then records: a 24-byte
// header (magic "UNDO", CRC-32 of the rest of the record, offset, length, batch number) and
// the data. The records of a batch were all read before any of them was overwritten. A record cut short by a crash was never followed by its write, since writes
// wait for the log's fsync; it is ignored.
const (
	undoMagicLine = "fsbench-undo 1\n"
	undoExt       = ".undo"
	recMagic      = "UNDO"
	recHeader     = 24
)

type undoMeta struct {
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"` // /proc/<pid>/stat field 22: with the pid, the process
	BootID    string    `json:"boot_id,omitempty"`
	Created   time.Time `json:"created"`
	Nonce     uint64    `json:"nonce"` // the run's stamp nonce: blocks holding it are the probe's own
	BlockSize uint64    `json:"block_size"`
	Device    DeviceID  `json:"device"`
}

type record struct {
	off   uint64
	data  []byte
	batch uint32
	// copy: the block was written back with data (the volume written past a cache), so the
	// end of a probe that was not interrupted need not write it again; after a crash every
	// record is replayed, which puts back a block the crash tore. Not in the file: replay
	// after a crash writes all.
	copy bool
}

// undoLog is an undo log being written.
type undoLog struct {
	f    *os.File
	path string
	dir  string
	n    int
}

// createUndo creates the log in dir (made if missing, 0700) and syncs it and its directory
// before returning, so that it exists before the first block is overwritten.
func createUndo(dir string, meta undoMeta) (*undoLog, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("undo log: %w", err)
	}
	p := filepath.Join(dir, fmt.Sprintf("%d-%016x%s", meta.PID, meta.Nonce, undoExt))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("undo log: %w", err)
	}
	j, _ := json.Marshal(meta)
	if _, err = f.Write(append([]byte(undoMagicLine), append(j, '\n')...)); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		f.Close()
		os.Remove(p)
		return nil, fmt.Errorf("undo log %s: %w", p, err)
	}
	return &undoLog{f: f, path: p, dir: dir}, nil
}

// save appends records and syncs the log: only then may their blocks be overwritten.
func (u *undoLog) save(recs []record) error {
	var buf []byte
	for _, r := range recs {
		h := make([]byte, recHeader)
		copy(h, recMagic)
		binary.LittleEndian.PutUint64(h[8:], r.off)
		binary.LittleEndian.PutUint32(h[16:], uint32(len(r.data)))
		binary.LittleEndian.PutUint32(h[20:], r.batch)
		c := crc32.NewIEEE()
		c.Write(h[8:])
		c.Write(r.data)
		binary.LittleEndian.PutUint32(h[4:], c.Sum32())
		buf = append(append(buf, h...), r.data...)
	}
	if _, err := u.f.Write(buf); err != nil {
		return fmt.Errorf("undo log %s: %w", u.path, err)
	}
	if err := u.f.Sync(); err != nil {
		return fmt.Errorf("undo log %s: %w", u.path, err)
	}
	u.n += len(recs)
	return nil
}

// remove deletes the log once the card is restored.
func (u *undoLog) remove() error {
	u.f.Close()
	if err := os.Remove(u.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("undo log: %w", err)
	}
	return syncDir(u.dir)
}

// readUndo reads a log: its metadata and its complete records.
func readUndo(p string) (undoMeta, []record, error) {
	var meta undoMeta
	f, err := os.Open(p)
	if err != nil {
		return meta, nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	line, err := br.ReadString('\n')
	if err != nil || line != undoMagicLine {
		return meta, nil, fmt.Errorf("%s is not an fsbench undo log (first line %q)", p, strings.TrimSpace(line))
	}
	j, err := br.ReadBytes('\n')
	if err != nil {
		return meta, nil, fmt.Errorf("%s: header cut short: %w", p, err)
	}
	if err := json.Unmarshal(j, &meta); err != nil {
		return meta, nil, fmt.Errorf("%s: header: %w", p, err)
	}
	var recs []record
	h := make([]byte, recHeader)
	for {
		if _, err := io.ReadFull(br, h); err != nil {
			break // the end, or a header cut short by a crash: its block was never written
		}
		if string(h[:4]) != recMagic {
			return meta, recs, fmt.Errorf("%s: record %d: bad magic", p, len(recs)+1)
		}
		n := binary.LittleEndian.Uint32(h[16:])
		if n == 0 || n > 1<<20 {
			return meta, recs, fmt.Errorf("%s: record %d: length %d", p, len(recs)+1, n)
		}
		data := make([]byte, n)
		if _, err := io.ReadFull(br, data); err != nil {
			break // cut short: never written
		}
		c := crc32.NewIEEE()
		c.Write(h[8:])
		c.Write(data)
		if c.Sum32() != binary.LittleEndian.Uint32(h[4:]) {
			break // torn by a crash while it was appended: its batch was never written
		}
		recs = append(recs, record{off: binary.LittleEndian.Uint64(h[8:]), data: data, batch: binary.LittleEndian.Uint32(h[20:])})
	}
	return meta, recs, nil
}

// replay writes the records back in reverse order and syncs the device. With check, it first
// makes sure the device is the one the log was taken from: each sector of each block must hold
// either what the log saved or one of this run's stamps; otherwise nothing is written.
func replay(dev Device, meta undoMeta, recs []record, check bool, progress func(done int, r record)) error {
	if len(recs) == 0 {
		return nil
	}
	scratch := make([]byte, sectorSize)
	if check {
		bad := 0
		var first uint64
		for _, r := range recs {
			cur := alignedBuf(len(r.data))
			if _, err := dev.ReadAt(cur, int64(r.off)); err != nil {
				return fmt.Errorf("read %d bytes at %d: %w", len(r.data), r.off, err)
			}
			for s := 0; s+sectorSize <= len(cur); s += sectorSize {
				sec := cur[s : s+sectorSize]
				if string(sec) != string(r.data[s:s+sectorSize]) && !sectorIsOurs(sec, meta.Nonce, scratch) {
					if bad == 0 {
						first = r.off + uint64(s)
					}
					bad++
				}
			}
		}
		if bad > 0 {
			return fmt.Errorf("%d sectors (the first at byte %d) hold neither what the log saved nor the probe's blocks: this is not the card the log was taken from, or it was written since; nothing was restored", bad, first)
		}
	}
	order := replayOrder(recs)
	var failed []record
	var firstErr error
	for i, r := range order {
		buf := alignedBuf(len(r.data))
		copy(buf, r.data)
		if _, err := dev.WriteAt(buf, int64(r.off)); err != nil {
			// Go on with the others; a block the card refuses to write may never have
			// been overwritten (its write failed the same way): checked below.
			failed = append(failed, r)
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if progress != nil {
			progress(i+1, r)
		}
	}
	if err := dev.Sync(); err != nil {
		return err
	}
	for _, r := range failed {
		cur := alignedBuf(len(r.data))
		if _, err := dev.ReadAt(cur, int64(r.off)); err != nil || string(cur) != string(r.data) {
			return fmt.Errorf("restore %d bytes at %d: %w (the card refuses the write, and the block does not hold what it held)", len(r.data), r.off, firstErr)
		}
	}
	return nil
}

// replayOrder is the order the records are written back in. The rule that makes any card end
// as it was: the oldest saved copy of any flash block is written last, whatever addresses
// land on that block (a wrap makes two addresses one block). So batches go newest first; a
// record that repeats an older one (same offset and length: a region written again in a later
// round) is dropped, the older one standing for it; inside a batch, whose blocks were all saved
// before any was written and never land on one another (its addresses are below the wrap),
// offsets go up, which a card's allocation units take far faster than going down.
func replayOrder(recs []record) []record {
	type key struct {
		off uint64
		n   int
	}
	first := map[key]bool{}
	var keep []record
	for _, r := range recs {
		k := key{r.off, len(r.data)}
		if !first[k] {
			first[k] = true
			keep = append(keep, r)
		}
	}
	slices.SortStableFunc(keep, func(a, b record) int {
		if a.batch != b.batch {
			return cmp.Compare(b.batch, a.batch)
		}
		return cmp.Compare(a.off, b.off)
	})
	return keep
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// alive reports whether the process that wrote meta still runs (same boot, same pid and
// start time): its log is its own to replay.
func alive(meta undoMeta) bool {
	running, _ := procid.ID{PID: meta.PID, StartTime: meta.StartTime, BootID: meta.BootID}.Running()
	return running
}

// RestorePending replays the undo logs in dir whose probe is gone (killed, crashed, or the
// host lost power), restoring the cards they were taken from, and removes them; only, when not
// nil, picks the logs to consider. A log whose device is absent or does not match is kept and
// reported, never replayed elsewhere. It returns a line per action.
func RestorePending(ctx context.Context, dir string, only func(DeviceID) bool) ([]string, error) {
	ents, err := procid.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("undo logs: %w", err)
	}
	var actions []string
	var errs []error
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), undoExt) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		meta, recs, err := readUndo(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("undo log %s: %w; inspect it, then remove it by hand", p, err))
			continue
		}
		if alive(meta) || (only != nil && !only(meta.Device)) {
			continue
		}
		act, err := restoreTaken(ctx, p, meta, recs)
		if err != nil {
			errs = append(errs, fmt.Errorf("undo log %s (kept, for a later fsbench cleanup): %w", p, err))
			continue
		}
		actions = append(actions, act)
	}
	return actions, errors.Join(errs...)
}

// undoLockWait is how long a restore waits for another fsbench restoring the same log.
var undoLockWait = 2 * time.Minute

// restoreTaken restores a dead probe's log while holding it: "fsbench cleanup" and a probe
// starting on the same card can find it at once, and the second to open the card would fail
// on the first's exclusive claim (EBUSY).
func restoreTaken(ctx context.Context, p string, meta undoMeta, recs []record) (string, error) {
	release, o, err := procid.TakeOver(p, undoLockWait)
	defer release()
	switch {
	case err != nil:
		return "", err
	case o == procid.Busy:
		return fmt.Sprintf("left undo log %s to the fsbench restoring it (still at it after %v)", p, undoLockWait), nil
	case o == procid.Gone:
		return fmt.Sprintf("undo log %s was restored by another fsbench meanwhile", p), nil
	}
	if err := restoreLog(ctx, p, meta, recs); err != nil {
		return "", err
	}
	return fmt.Sprintf("restored %d blocks of %s that an interrupted capacity check had overwritten (undo log %s)", len(recs), meta.Device.Path, p), nil
}

// restoreLog finds the log's device, checks it and replays the log, then removes the log.
func restoreLog(ctx context.Context, p string, meta undoMeta, recs []record) error {
	path, err := findDevice(meta.Device)
	if err != nil {
		return err
	}
	if len(recs) > 0 {
		t, err := OpenTarget(ctx, path)
		if err != nil {
			return err
		}
		defer t.Close()
		if t.Size != meta.Device.Size {
			return fmt.Errorf("%s has %d bytes, the card the log was taken from %d: not that card", path, t.Size, meta.Device.Size)
		}
		if fp := meta.Device.Fingerprint; fp != "" && t.ID.Fingerprint != fp {
			return fmt.Errorf("%s is %s, the log was taken from %s: not that card", path, orUnknown(t.ID.Fingerprint), fp)
		}
		if err := replay(t.Dev, meta, recs, true, nil); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := os.Remove(p); err != nil {
		return err
	}
	return syncDir(filepath.Dir(p))
}

// findDevice locates the device of a log: its path if that is still a device of its size,
// else one of its stable names.
func findDevice(id DeviceID) (string, error) {
	for _, c := range append([]string{id.Path}, id.ByID...) {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		if id.FileIno != 0 {
			var st fileStat
			if statFile(real, &st) == nil && st.dev == id.FileDev && st.ino == id.FileIno {
				return real, nil
			}
			continue
		}
		return real, nil
	}
	return "", fmt.Errorf("the device %s (%s) is not here: insert the card and run fsbench cleanup again", id.Path, orUnknown(id.Fingerprint))
}

func orUnknown(s string) string {
	if s == "" {
		return "unidentified"
	}
	return s
}
