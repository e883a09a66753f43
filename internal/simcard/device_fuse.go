//go:build !(arm || 386 || mips || mipsle)

package simcard

import (
	"context"
	"sort"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// addDevice serves the device directory (DeviceDir: the card's registers and health, read as
// they are at open) and the reset file.
func (r *rootNode) addDevice(ctx context.Context) {
	dir := r.NewPersistentInode(ctx, &fs.Inode{}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: 7})
	r.AddChild(DeviceDir, dir, false)
	names := make([]string, 0, 16)
	for n := range r.card.deviceFiles() {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		dir.AddChild(n, dir.NewPersistentInode(ctx, &attrNode{card: r.card, name: n}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: uint64(100 + i)}), false)
	}
	r.AddChild(ResetFile, r.NewPersistentInode(ctx, &resetNode{card: r.card}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 8}), false)
}

// attrNode is one file of the device directory: each open takes a snapshot of its content.
type attrNode struct {
	fs.Inode
	card *Card
	name string
}

var (
	_ fs.NodeOpener    = (*attrNode)(nil)
	_ fs.NodeGetattrer = (*attrNode)(nil)
)

func (n *attrNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, 0, syscall.EACCES
	}
	return &statsHandle{data: n.card.deviceFiles()[n.name]}, fuse.FOPEN_DIRECT_IO, 0
}

func (n *attrNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = 4096 // as sysfs reports; direct I/O reads stop at the real end
	out.Nlink = 1
	return 0
}

// resetNode is the reset file: any write power-cycles the card (Card.Reset).
type resetNode struct {
	fs.Inode
	card *Card
}

var (
	_ fs.NodeOpener    = (*resetNode)(nil)
	_ fs.NodeWriter    = (*resetNode)(nil)
	_ fs.NodeGetattrer = (*resetNode)(nil)
	_ fs.NodeSetattrer = (*resetNode)(nil)
)

func (n *resetNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (n *resetNode) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n.card.Reset()
	return uint32(len(data)), 0
}

func (n *resetNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o200
	out.Nlink = 1
	return 0
}

// Setattr ignores truncation (a shell's > redirection truncates before it writes).
func (n *resetNode) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, f, out)
}
