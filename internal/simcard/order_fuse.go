//go:build !(arm || 386 || mips || mipsle)

package simcard

import (
	"context"
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// orderedFS hands the card nodes each I/O request's kernel id (its FUSE request's unique),
// which the node API does not pass on, so that the card takes them in the host's order
// (order.go). It keys the id by the request's cancel channel, which the node API does pass
// on (fuse.Context.Cancel) and which is the request's own while it is in the server.
type orderedFS struct {
	fuse.RawFileSystem
	ids sync.Map // <-chan struct{} → uint64
}

func (o *orderedFS) with(cancel <-chan struct{}, id uint64) func() {
	o.ids.Store(cancel, id)
	return func() { o.ids.Delete(cancel) }
}

// requestID is the kernel's id of the FUSE request ctx belongs to; 0 when unknown.
func (o *orderedFS) requestID(ctx context.Context) uint64 {
	if o == nil {
		return 0
	}
	c, ok := ctx.(*fuse.Context)
	if !ok {
		return 0
	}
	if id, ok := o.ids.Load(c.Cancel); ok {
		return id.(uint64)
	}
	return 0
}

func (o *orderedFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	defer o.with(cancel, in.Unique)()
	return o.RawFileSystem.Read(cancel, in, buf)
}

func (o *orderedFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	defer o.with(cancel, in.Unique)()
	return o.RawFileSystem.Write(cancel, in, data)
}

func (o *orderedFS) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	defer o.with(cancel, in.Unique)()
	return o.RawFileSystem.Writev(cancel, in, data)
}

func (o *orderedFS) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	defer o.with(cancel, in.Unique)()
	return o.RawFileSystem.Fsync(cancel, in)
}

func (o *orderedFS) Fallocate(cancel <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	defer o.with(cancel, in.Unique)()
	return o.RawFileSystem.Fallocate(cancel, in)
}
