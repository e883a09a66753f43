package trace

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/flash"
)

func TestFindTracefs(t *testing.T) {
	tests := []struct {
		name, mountinfo, want string
	}{
		{"none", "22 1 0:21 / /proc rw - proc proc rw\n", ""},
		{"standard", "36 25 0:12 / /sys/kernel/debug/tracing rw - tracefs tracefs rw\n37 25 0:12 / /sys/kernel/tracing rw - tracefs tracefs rw\n", "/sys/kernel/tracing"},
		{"elsewhere", "36 25 0:12 / /mnt/my\\040trace rw,nosuid shared:5 - tracefs nodev rw\n", "/mnt/my trace"},
		{"debugfs is not tracefs", "30 25 0:7 / /sys/kernel/debug rw - debugfs debugfs rw\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "mountinfo")
			if err := os.WriteFile(f, []byte(tt.mountinfo), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := findTracefs(f)
			if err != nil || got != tt.want {
				t.Errorf("findTracefs = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		d    devInfo
		want string
	}{
		{devInfo{diskMajor: 7, diskMinor: 3}, "dev == 7340035"},
		{devInfo{diskMajor: 179, diskMinor: 0, start: 2048, sectors: 4096}, "dev == 187695104 && ((sector >= 2048 && sector < 6144) || nr_sector == 0)"},
	}
	for _, tt := range tests {
		if got := tt.d.filter(); got != tt.want {
			t.Errorf("filter(%+v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestAvailableNotRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		// As root, the same test runs again as nobody (setpriv, util-linux), from a copy of
		// this test binary that nobody may run.
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("as root, this test runs itself as nobody with setpriv (Debian package util-linux), which is missing")
		}
		dir := t.TempDir()
		os.Chmod(dir, 0o755)
		self, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "trace.test")
		if err := os.WriteFile(bin, self, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
			"-test.run=^TestAvailableNotRoot$", "-test.v").CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestAvailableNotRoot")) {
			t.Errorf("as nobody: %v\n%s", err, out)
		}
		return
	}
	err := Available()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "root") {
		t.Errorf("Available() = %v, want ErrUnavailable naming root", err)
	}
}

// loopDevice attaches a sparse image of size bytes with direct I/O and detaches it at the
// end of the test.
func loopDevice(t *testing.T, size int64) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command("losetup", "--find", "--show", "--direct-io=on", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup -d %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: tracefs and loop devices (run with sudo)")
	}
	if err := Available(); err != nil {
		t.Skipf("no block tracing here: %v", err)
	}
}

// checkInstanceGone fails when the capture's tracefs instance is still there.
func checkInstanceGone(t *testing.T, c *Capture) {
	t.Helper()
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("trace instance %s still exists after Stop (%v)", c.dir, err)
	}
}

func TestCaptureDirectWrites(t *testing.T) {
	needRoot(t)
	dev := loopDevice(t, 128<<20)
	// A second device written at the same time must not show up.
	other := loopDevice(t, 16<<20)
	c, err := Start(filepath.Base(dev))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(dev, os.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	o, err := os.OpenFile(other, os.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	// O_DIRECT needs an aligned buffer: mmap gives a page-aligned one.
	buf, err := unix.Mmap(-1, 0, 1<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(buf)
	for i := range buf {
		buf[i] = byte(i)
	}
	for i := int64(0); i < 8; i++ {
		if _, err := f.WriteAt(buf, i<<20); err != nil {
			t.Fatal(err)
		}
		if _, err := o.WriteAt(buf[:64<<10], 8<<20+i<<16); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	o.Close()
	tr, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	checkInstanceGone(t, c)
	if tr.Lost != 0 {
		t.Errorf("%d events lost", tr.Lost)
	}
	covered := make([]bool, 8<<20/SectorSize)
	var writes, nbytes, flushes uint64
	for _, r := range tr.Requests {
		switch r.Op {
		case OpWrite:
			writes++
			nbytes += r.Len()
			if r.Sector+r.Sectors > uint64(len(covered)) {
				t.Errorf("write at sectors %d+%d: beyond the 8 MiB written (the other device's writes start at 8 MiB)", r.Sector, r.Sectors)
				continue
			}
			for s := r.Sector; s < r.Sector+r.Sectors; s++ {
				covered[s] = true
			}
			if !r.Done || r.Latency <= 0 {
				t.Errorf("write %+v has no completion", r)
			}
		case OpFlush:
			flushes++
		default:
			// Nothing else touches the device (no udev probing of a raw loop device is
			// expected, but allow reads by probers: they are not writes).
			if r.Op != OpRead {
				t.Errorf("unexpected request %+v", r)
			}
		}
	}
	if writes < 8 || nbytes < 8<<20 {
		t.Errorf("%d writes of %d bytes, want >= 8 writes of >= 8 MiB", writes, nbytes)
	}
	for s, ok := range covered {
		if !ok {
			t.Fatalf("sector %d of the 8 MiB written is in no write request", s)
		}
	}
	if flushes == 0 {
		t.Errorf("no flush request after fsync (loop devices have a write cache)")
	}
	s := Summarize(tr, 16<<10, 4<<20)
	t.Logf("summary: %+v", s)
	var b bytes.Buffer
	if _, err := tr.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests in %d bytes", len(tr.Requests), b.Len())
}

func TestCaptureExt4(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 not installed (apt install e2fsprogs)")
	}
	for _, v := range []struct {
		name string
		args []string
	}{{"ext4", nil}, {"ext4-nojournal", []string{"-O", "^has_journal"}}} {
		t.Run(v.name, func(t *testing.T) {
			dev := loopDevice(t, 128<<20)
			c, err := Start(filepath.Base(dev))
			if err != nil {
				t.Fatal(err)
			}
			stopped := false
			defer func() {
				if !stopped {
					c.Stop()
				}
			}()
			run := func(name string, args ...string) {
				t.Helper()
				if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
					t.Fatalf("%s %v: %v: %s", name, args, err, out)
				}
			}
			run("mkfs.ext4", append(append([]string{"-q", "-F"}, v.args...), dev)...)
			mnt := t.TempDir()
			if err := unix.Mount(dev, mnt, "ext4", 0, ""); err != nil {
				t.Fatal(err)
			}
			mounted := true
			defer func() {
				if mounted {
					unix.Unmount(mnt, 0)
				}
			}()
			// A small workload: 200 files of 4 KiB, each made durable.
			data := bytes.Repeat([]byte("fsbench!"), 512)
			for i := 0; i < 200; i++ {
				f, err := os.Create(filepath.Join(mnt, "f"+strconv.Itoa(i)))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Write(data); err != nil {
					t.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			if err := unix.Unmount(mnt, 0); err != nil {
				t.Fatal(err)
			}
			mounted = false
			tr, err := c.Stop()
			stopped = true
			if err != nil {
				t.Fatal(err)
			}
			checkInstanceGone(t, c)
			s := Summarize(tr, 16<<10, 4<<20)
			t.Logf("%s: %d requests, write %d req %d bytes, read %d bytes, discard %d bytes, flushes %d, preflush %d, fua %d, meta %d, busy %.1f ms, lost %d, unmatched %d",
				v.name, s.Requests, s.Write.Requests, s.Write.Bytes, s.Read.Bytes, s.Discard.Bytes, s.Flushes, s.Preflushes, s.FUA, s.Meta, float64(s.BusyNs)/1e6, s.Lost, s.UnmatchedCompl)
			for _, name := range []string{"sd-typical", "emmc"} {
				p := profile(t, name)
				c, err := Replay(tr, p, 128<<20)
				if err != nil {
					t.Fatalf("replaying the captured trace: %v", err)
				}
				years, err := flash.DayLifetime(p, 128<<20, Requests(tr), flash.Before{})
				if err != nil {
					t.Fatalf("lifetime of the captured trace: %v", err)
				}
				t.Logf("%s on %s: host %d B, flash %d B, WA %.2f, erases %d, modelled %.1f ms, %.0f years at 1 run a day",
					v.name, name, c.HostBytesWritten, c.FlashBytesWrite, c.WriteAmplification, c.BlocksErased, float64(c.BusyNs)/1e6, years)
			}
			if s.Meta == 0 {
				t.Errorf("no metadata requests in mkfs + mount + write + umount")
			}
			if s.Flushes == 0 {
				t.Errorf("no flush requests despite 200 fsyncs")
			}
			if s.Write.Bytes < 200*4096 {
				t.Errorf("%d bytes written, want at least the 800 KiB of file data", s.Write.Bytes)
			}
		})
	}
}
