//go:build !(arm || 386 || mips || mipsle)

package simcard

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/flash"
)

// rootNode is the mount's directory: card and stats. While the server calibrates the FUSE
// round trip at start-up (calib set), it holds a hidden calibration file instead of card, so
// that nobody (target.StartSimcard waits for card to appear) uses the card before then.
type rootNode struct {
	fs.Inode
	card  *Card
	calib *calibNode
	order *orderedFS // the requests' kernel ids, for the card's order (order_fuse.go)
}

var (
	_ fs.NodeOnAdder  = (*rootNode)(nil)
	_ fs.NodeStatfser = (*rootNode)(nil)
	_ fs.NodeStatfser = (*cardNode)(nil)
	_ fs.NodeStatfser = (*cutNode)(nil)
)

// statfs is what statfs(2) says of the card's mount, asked of its directory, the card file or
// the cut file: the card's bytes in 512-byte blocks, all of them used. It matters to a loop
// device over the card: the loop driver takes its discard granularity from f_bsize (Linux's
// loop_config_discard), and go-fuse answers a node without Statfs with zeros. Linux 6.18 (this
// machine) raises a granularity of 0 to the physical block size, 512, but Debian 12's 6.1 (the
// QEMU guest, the emulated boards) keeps it and refuses every discard ("loop0: Error:
// discard_granularity is 0."): f2fs's and btrfs's discards never reached the card served in a
// guest. 512 is the sector the card takes requests in, and the granularity the host's loop
// devices had already.
func statfs(c *Card, out *fuse.StatfsOut) syscall.Errno {
	const sector = 512
	out.Bsize, out.Frsize, out.NameLen = sector, sector, 255
	out.Blocks = c.Size() / sector
	out.Files = 8
	return 0
}

func (r *rootNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return statfs(r.card, out)
}

func (n *cardNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return statfs(n.card, out)
}

func (n *cutNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return statfs(n.card, out)
}

func (r *rootNode) OnAdd(ctx context.Context) {
	stats := r.NewPersistentInode(ctx, &statsNode{card: r.card}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 3})
	r.AddChild(StatsFile, stats, false)
	if r.calib != nil {
		r.AddChild(CalibrationFile, r.NewPersistentInode(ctx, r.calib, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 4}), false)
		return
	}
	r.addCard(ctx)
}

// addCard serves the card file.
func (r *rootNode) addCard(ctx context.Context) {
	card := r.NewPersistentInode(ctx, &cardNode{card: r.card, order: r.order}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 2})
	r.AddChild(CardFile, card, false)
	r.AddChild(PowerCutFile, r.NewPersistentInode(ctx, &powerCutNode{card: r.card}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 5}), false)
	r.AddChild(CutFile, r.NewPersistentInode(ctx, &cutNode{card: r.card}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 6}), false)
	r.AddChild(WearFile, r.NewPersistentInode(ctx, &wearNode{card: r.card}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 7}), false)
	r.addDevice(ctx)
}

// endCalibration replaces the calibration file by the card file.
func (r *rootNode) endCalibration(ctx context.Context) {
	r.RmChild(CalibrationFile)
	r.addCard(ctx)
}

// calibNode is the hidden calibration file served before the card file (see calibrate.go).
// A read spends CalibrationHold in the handler and returns the time it spent there in its
// first 8 bytes; it touches neither the model nor the backing file. A write delivers an
// external calibrator's CalibrationMessage to Serve.
type calibNode struct {
	fs.Inode
	msgs chan string
}

var (
	_ fs.NodeOpener    = (*calibNode)(nil)
	_ fs.NodeReader    = (*calibNode)(nil)
	_ fs.NodeWriter    = (*calibNode)(nil)
	_ fs.NodeGetattrer = (*calibNode)(nil)
	_ fs.NodeSetattrer = (*calibNode)(nil)
)

func (n *calibNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (n *calibNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o600
	out.Size = calibSize
	out.Nlink = 1
	return 0
}

// Setattr ignores truncation (a shell's > redirection truncates before it writes).
func (n *calibNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, f, out)
}

func (n *calibNode) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	arrival := time.Now()
	clear(dest)
	waitUntil(arrival.Add(CalibrationHold))
	if len(dest) >= 8 {
		binary.LittleEndian.PutUint64(dest, uint64(time.Since(arrival)))
	}
	return fuse.ReadResultData(dest), 0
}

func (n *calibNode) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	select {
	case n.msgs <- string(data):
		return uint32(len(data)), 0
	default:
		return 0, syscall.EBUSY // one message only
	}
}

// cardNode is the card file.
type cardNode struct {
	fs.Inode
	card  *Card
	order *orderedFS
}

var (
	_ fs.NodeOpener    = (*cardNode)(nil)
	_ fs.NodeReader    = (*cardNode)(nil)
	_ fs.NodeWriter    = (*cardNode)(nil)
	_ fs.NodeGetattrer = (*cardNode)(nil)
	_ fs.NodeSetattrer = (*cardNode)(nil)
	_ fs.NodeFsyncer   = (*cardNode)(nil)
	_ fs.NodeAllocater = (*cardNode)(nil)
)

// Open sets FOPEN_DIRECT_IO: every read and write then reaches this server with the caller's
// offset and size, instead of being absorbed (and reshaped into page-sized readahead and
// writeback) by the kernel page cache, which would hide the model. PARALLEL_DIRECT_WRITES
// lets concurrent writes arrive concurrently; the Card serialises them itself.
func (n *cardNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES, 0
}

func (n *cardNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o600
	out.Size = n.card.Size()
	out.Blksize = uint32(n.card.model.Profile().PageSize)
	out.Blocks = out.Size / 512
	out.Nlink = 1
	return 0
}

// Setattr ignores size changes the way a block device ignores O_TRUNC: dd of=DIR/card
// (without conv=notrunc) truncates its output first, and the card must survive that with its
// size and data intact. Mode and time changes are ignored too.
func (n *cardNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, f, out)
}

// The handlers below take the arrival time first, before anything else: the card's clock
// starts from it (see Card.DoAt), so the less of the server's own path lies before it, the
// less of it is added to what a tool sees.

func (n *cardNode) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	arrival := time.Now()
	k, err := n.card.DoAtInOrder(n.order.requestID(ctx), arrival, flash.Request{Op: flash.OpRead, Off: uint64(off), Len: uint64(len(dest))}, dest)
	if err != nil {
		return nil, cardErrno(err)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

func (n *cardNode) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	arrival := time.Now()
	if uint64(off)+uint64(len(data)) > n.card.Size() {
		return 0, syscall.ENOSPC // past the end of the card
	}
	k, err := n.card.DoAtInOrder(n.order.requestID(ctx), arrival, flash.Request{Op: flash.OpWrite, Off: uint64(off), Len: uint64(len(data))}, data)
	if err != nil {
		return uint32(k), cardErrno(err)
	}
	return uint32(k), 0
}

// Fsync is the card's cache flush: a loop device turns REQ_PREFLUSH (and FUA) into
// vfs_fsync on its backing file, which reaches here.
func (n *cardNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	arrival := time.Now()
	if _, err := n.card.DoAtInOrder(n.order.requestID(ctx), arrival, flash.Request{Op: flash.OpFlush}, nil); err != nil {
		return cardErrno(err)
	}
	return 0
}

// Allocate receives discards: a loop device turns REQ_OP_DISCARD into
// fallocate(PUNCH_HOLE|KEEP_SIZE) and REQ_OP_WRITE_ZEROES into ZERO_RANGE or PUNCH_HOLE.
// Zeroing a range is modelled as a discard too, which is how SD cards implement it (erase).
func (n *cardNode) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	arrival := time.Now()
	if mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) == 0 {
		return 0 // plain preallocation: the card is fully allocated already
	}
	if off >= n.card.Size() {
		return 0
	}
	size = min(size, n.card.Size()-off)
	if _, err := n.card.DoAtInOrder(n.order.requestID(ctx), arrival, flash.Request{Op: flash.OpDiscard, Off: off, Len: size}, nil); err != nil {
		return cardErrno(err)
	}
	return 0
}

// statsNode is the stats file: each open takes a snapshot, so a reader sees one consistent
// JSON document however it splits its reads.
type statsNode struct {
	fs.Inode
	card *Card
}

var (
	_ fs.NodeOpener    = (*statsNode)(nil)
	_ fs.NodeGetattrer = (*statsNode)(nil)
)

type statsHandle struct{ data []byte }

var _ fs.FileReader = (*statsHandle)(nil)

func (h *statsHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= int64(len(h.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(h.data[off:min(int64(len(h.data)), off+int64(len(dest)))]), 0
}

func (n *statsNode) snapshot() []byte {
	var b bytes.Buffer
	_ = WriteStats(&b, n.card.Stats()) // encoding a plain struct to memory cannot fail
	return b.Bytes()
}

// Open uses direct I/O so that the kernel does not cache an old snapshot, nor cut the read at
// the size Getattr reported a moment earlier.
func (n *statsNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, 0, syscall.EACCES
	}
	return &statsHandle{data: n.snapshot()}, fuse.FOPEN_DIRECT_IO, 0
}

func (n *statsNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(len(n.snapshot()))
	out.Nlink = 1
	return 0
}

// powerCutNode is the powercut file: written, a command (Card.PowerCutCommand); read, the
// status at open (one consistent JSON document, as the stats file).
type powerCutNode struct {
	fs.Inode
	card *Card
}

var (
	_ fs.NodeOpener    = (*powerCutNode)(nil)
	_ fs.NodeWriter    = (*powerCutNode)(nil)
	_ fs.NodeGetattrer = (*powerCutNode)(nil)
	_ fs.NodeSetattrer = (*powerCutNode)(nil)
)

func (n *powerCutNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, fuse.FOPEN_DIRECT_IO, 0
	}
	return &statsHandle{data: n.card.powerCutJSON()}, fuse.FOPEN_DIRECT_IO, 0
}

// Write runs a command; a failed one returns EINVAL and its error reads in the status.
func (n *powerCutNode) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if err := n.card.PowerCutCommand(string(data)); err != nil {
		return 0, syscall.EINVAL
	}
	return uint32(len(data)), 0
}

func (n *powerCutNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o600
	out.Size = 1 << 20 // larger than any status: direct I/O reads stop at its real end
	out.Nlink = 1
	return 0
}

// Setattr ignores truncation (a shell's > redirection truncates before it writes).
func (n *powerCutNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, f, out)
}

// cutNode is the card after the last built cut: fsck and mounts run on a loop device over
// it. No model and no waiting: the cut's check is not a benchmark of the card.
type cutNode struct {
	fs.Inode
	card *Card
}

var (
	_ fs.NodeOpener    = (*cutNode)(nil)
	_ fs.NodeReader    = (*cutNode)(nil)
	_ fs.NodeWriter    = (*cutNode)(nil)
	_ fs.NodeGetattrer = (*cutNode)(nil)
	_ fs.NodeSetattrer = (*cutNode)(nil)
	_ fs.NodeFsyncer   = (*cutNode)(nil)
	_ fs.NodeAllocater = (*cutNode)(nil)
)

func (n *cutNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_PARALLEL_DIRECT_WRITES, 0
}

func (n *cutNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o600
	out.Size = n.card.model.Size()
	out.Blocks = out.Size / 512
	out.Nlink = 1
	return 0
}

func (n *cutNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, f, out)
}

func (n *cutNode) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	k, err := n.card.cutIO(dest, off, false)
	if err != nil {
		return nil, syscall.EIO
	}
	return fuse.ReadResultData(dest[:k]), 0
}

func (n *cutNode) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	k, err := n.card.cutIO(data, off, true)
	if err != nil {
		return uint32(k), syscall.EIO
	}
	return uint32(k), 0
}

func (n *cutNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno { return 0 }

// Allocate zeroes discarded ranges, as the card does.
func (n *cutNode) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	if mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) == 0 || off >= n.card.model.Size() {
		return 0
	}
	size = min(size, n.card.model.Size()-off)
	zero := make([]byte, min(size, 1<<20))
	for done := uint64(0); done < size; {
		k := min(size-done, uint64(len(zero)))
		if _, err := n.card.cutIO(zero[:k], int64(off+done), true); err != nil {
			return syscall.EIO
		}
		done += k
	}
	return 0
}

// cardErrno is the errno a card request's error is answered with: a worn card's refusal is
// EIO, what a filesystem sees from a card whose command failed (a loop device turns any
// error into an I/O error, so EROFS would reach it as EIO too).
func cardErrno(err error) syscall.Errno {
	if errors.Is(err, flash.ErrReadOnly) || errors.Is(err, flash.ErrDead) {
		return syscall.EIO
	}
	return fs.ToErrno(err)
}

// wearNode is the wear file: written, a command (Card.WearCommand); read, the card's
// WearStatus at open.
type wearNode struct {
	fs.Inode
	card *Card
}

var (
	_ fs.NodeOpener    = (*wearNode)(nil)
	_ fs.NodeWriter    = (*wearNode)(nil)
	_ fs.NodeGetattrer = (*wearNode)(nil)
	_ fs.NodeSetattrer = (*wearNode)(nil)
)

func (n *wearNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, fuse.FOPEN_DIRECT_IO, 0
	}
	return &statsHandle{data: n.card.wearJSON()}, fuse.FOPEN_DIRECT_IO, 0
}

// Write runs a command; a failed one returns EINVAL and its error reads in the status.
func (n *wearNode) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if err := n.card.WearCommand(string(data)); err != nil {
		return 0, syscall.EINVAL
	}
	return uint32(len(data)), 0
}

func (n *wearNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o600
	out.Size = 1 << 20 // larger than any status: direct I/O reads stop at its real end
	out.Nlink = 1
	return 0
}

// Setattr ignores truncation (a shell's > redirection truncates before it writes).
func (n *wearNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, f, out)
}
