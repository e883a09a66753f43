//go:build !(arm || 386 || mips || mipsle)

// go-fuse v2.12.1 does not compile for 32-bit Linux targets (its splice package assigns
// syscall.Splice's int result to an int64), so the FUSE server is built only for 64-bit
// ones; serve_nofuse.go says so on the others.

package simcard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/mountinfo"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FUSEAvailable reports whether this build can serve a card through FUSE.
const FUSEAvailable = true

// MaxQueue is how many requests FUSE lets reach the card server at once: more than the 32
// tasks of an SD or eMMC command queue, so that the card's own queue is the limit.
const MaxQueue = 64

// Serve mounts the card on cfg.Dir and serves it until ctx is cancelled, then unmounts and
// returns the final stats.
func Serve(ctx context.Context, cfg Config) (Stats, error) {
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return Stats{}, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return Stats{}, fmt.Errorf("mount point %s: not an existing directory: create it first", dir)
	}
	backing := cfg.Backing
	if backing == "" {
		tmp, err := os.MkdirTemp("", "fsbench-simcard-")
		if err != nil {
			return Stats{}, fmt.Errorf("temporary directory for the backing file: %w", err)
		}
		defer os.RemoveAll(tmp)
		backing = filepath.Join(tmp, "card.img")
	}
	card, err := NewCard(cfg.Profile, cfg.Size, backing, cfg.TimeScale)
	if err != nil {
		return Stats{}, err
	}
	defer card.Close()
	if sc := cfg.EnduranceScale; (sc != 0 && sc != 1) || cfg.WearSeed != 0 {
		if sc == 0 {
			sc = 1
		}
		if err := card.Renew(cfg.WearSeed, sc); err != nil {
			return Stats{}, err
		}
	}

	mode := cfg.PathOffset
	if mode == "" {
		mode = os.Getenv(PathOffsetEnv)
	}
	switch mode {
	case "", "auto":
		mode = "auto"
	case "off", "0":
		mode = "off"
	case "external":
	default:
		fixed, err := time.ParseDuration(mode)
		if err != nil || fixed < 0 {
			return Stats{}, fmt.Errorf("path offset %q: want auto, external, off or a duration such as 40us", mode)
		}
		card.SetPathOffset(fixed, "given")
	}
	root := &rootNode{card: card}
	if mode == "auto" || mode == "external" {
		root.calib = &calibNode{msgs: make(chan string, 1)}
	}
	server, err := mountCard(dir, root)
	if err != nil {
		return Stats{}, err
	}
	closeFUSEOnExec()
	if root.calib != nil {
		// Calibrated before the card file appears, so that no card request runs meanwhile.
		off, how, err := pathOffset(ctx, mode, dir, root.calib, logw)
		if err != nil {
			how = fmt.Sprintf("not calibrated: %v", err)
			fmt.Fprintf(logw, "simcard: %s; the card's clock starts requests at their arrival\n", how)
		}
		card.SetPathOffset(off, how)
		root.endCalibration(ctx)
	}
	fmt.Fprintf(logw, "simcard: serving %s %s card at %s (backing %s, time scale %g, endurance scale %g, path offset %v)\n",
		cfg.Profile.Name, bytesize.Format(cfg.Size), filepath.Join(dir, CardFile), backing, cfg.TimeScale,
		card.WearStatus().Scale, time.Duration(card.Stats().PathOffsetNs))

	done := make(chan struct{})
	go func() { server.Wait(); close(done) }()
	select {
	case <-done:
		return card.Stats(), fmt.Errorf("FUSE mount %s went away (unmounted from outside?)", dir)
	case <-ctx.Done():
	}
	uerr := unmount(server, dir, cfg.UnmountTimeout, logw)
	if uerr == nil {
		<-done
	}
	return card.Stats(), uerr
}

// mountCard mounts root on dir: fs.Mount, with the raw file system wrapped so that the card
// learns each request's kernel id (order_fuse.go).
func mountCard(dir string, root *rootNode) (*fuse.Server, error) {
	sec := time.Second
	opts := &fs.Options{
		EntryTimeout: &sec,
		AttrTimeout:  &sec,
		MountOptions: fuse.MountOptions{
			FsName: "fsbench-simcard",
			Name:   "simcard",
			// mount(2) directly: fsbench runs as root and Debian has no fusermount by
			// default; Strict so that Unmount reports EBUSY instead of trying fusermount.
			DirectMountStrict: true,
			// 1 MiB requests (the kernel caps at max_pages, 256 pages since 4.20): a loop
			// device splits its bios to the backing file's limits, and a real SD host
			// controller takes requests of that order too.
			MaxWrite: 1 << 20,
			// Loop devices attach from other processes (losetup, fsbench run) as root;
			// allow_other keeps the mount usable for them whoever mounted it.
			AllowOther: true,
		},
	}
	queueThrough(&opts.MountOptions)
	// root.order is set first: NewNodeFS adds the card's node (OnAdd) at once.
	root.order = &orderedFS{}
	root.order.RawFileSystem = fs.NewNodeFS(root, opts)
	server, err := fuse.NewServer(root.order, dir, &opts.MountOptions)
	if err == nil {
		go server.Serve()
		err = server.WaitMount()
	}
	if err != nil {
		return nil, fmt.Errorf("mount FUSE on %s: %w (needs root and /dev/fuse)", dir, err)
	}
	return server, nil
}

// queueThrough lets a queue of requests reach the card as a queue.
//
// A direct-I/O loop device submits each request to the card file as an asynchronous kiocb
// and goes on with the next. Without FUSE's asynchronous direct I/O the kernel completes such
// a kiocb synchronously, in the loop device's worker, so the card saw one request at a time
// whatever the host queued (measured: fio at iodepth 32 on the loop device, every request
// alone in the server, Stats.Concurrency). With it, FUSE sends them on as they come, up to
// max_background at once (the kernel's default, 12, is below the 32 of an SD or eMMC command
// queue and of fio's iodepth=32; MaxQueue is above it).
//
// For every card: one with a command queue (flash.Queue) overlaps them; one without still
// does one at a time (Card.schedule), but, as on a real host, whose driver prepares the next
// request while the card works on one, the host's own path is then hidden behind the card's
// work instead of added to it. Measured on sd-a1-modern (fio randread on the loop device, load
// average 4): depth 1 2010-2094 reads a second either way, depth 32 2078-2232 synchronously
// and 2499-2500, the card's own figure, asynchronously.
func queueThrough(o *fuse.MountOptions) {
	o.ExtraCapabilities |= fuse.CAP_ASYNC_DIO
	o.MaxBackground = MaxQueue
}

// unmount retries a busy unmount: while a loop device is attached over DIR/card the kernel
// holds the file open and umount(2) fails with EBUSY; detaching the loop device releases it.
// After the timeout it detaches lazily (MNT_DETACH) so that no mount point is left behind;
// the loop device's I/O then fails once this process exits.
func unmount(server *fuse.Server, dir string, timeout time.Duration, logw io.Writer) error {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	deadline := time.Now().Add(timeout)
	said := false
	for {
		err := server.Unmount()
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			_, lerr := mountinfo.Unmount(context.Background(), dir, mountinfo.UnmountOptions{Detach: true})
			return errors.Join(fmt.Errorf("unmount %s: %w; detached it lazily", dir, err), lerr)
		}
		if !said {
			fmt.Fprintf(logw, "simcard: %s is busy (a loop device over %s still attached? detach it with losetup -d); retrying for %v\n",
				dir, filepath.Join(dir, CardFile), timeout)
			said = true
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pathOffset calibrates the path offset: in "external" mode it waits for a client's
// CalibrationMessage on the calibration file (or "auto", or nothing within
// calibExternalWait), otherwise, or then, it measures the FUSE round trip itself.
func pathOffset(ctx context.Context, mode, dir string, n *calibNode, logw io.Writer) (time.Duration, string, error) {
	if mode == "external" {
		select {
		case msg := <-n.msgs:
			off, how, auto, err := parseCalibration(msg)
			if err != nil || !auto {
				return off, how, err
			}
		case <-time.After(calibExternalWait):
			fmt.Fprintf(logw, "simcard: no external calibration within %v; measuring the FUSE path\n", calibExternalWait)
		case <-ctx.Done():
			return 0, "", ctx.Err()
		}
	}
	rt, err := MeasureRoundTrip(filepath.Join(dir, CalibrationFile), "the FUSE file (a loop device's share is not included)")
	if err != nil {
		return 0, "", err
	}
	return rt.Offset(), rt.String(), nil
}

// closeFUSEOnExec marks this process's /dev/fuse descriptors close-on-exec. go-fuse opens
// /dev/fuse with syscall.Open, which (unlike os.OpenFile) does not set O_CLOEXEC, so every
// program started afterwards by the serving process inherited the connection. The kernel keeps
// a FUSE connection alive while any process holds its descriptor: when the server died, such a
// child kept the card "attached" with nobody answering, and every request to the loop device
// over it, and everything that waits for that device (sync, losetup -a, a mkfs of another loop
// device), hung in uninterruptible sleep instead of failing (seen: a test's shell workload held
// it; aborting the connection through fusectl freed the machine). The window between go-fuse's
// open and this call is short; the card server starts no program in it.
func closeFUSEOnExec() {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == "/dev/fuse" {
			syscall.CloseOnExec(fd)
		}
	}
}
