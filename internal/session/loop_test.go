package session

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestAttachLoop(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name       string
		setFD      bool
		opt        LoopOptions
		wantMethod string
	}{
		{"configure", false, LoopOptions{}, MethodConfigure},
		{"configure/dio", false, LoopOptions{DirectIO: true}, MethodConfigure},
		{"configure/dio/4k", false, LoopOptions{DirectIO: true, BlockSize: 4096}, MethodConfigure},
		{"configure/readonly", false, LoopOptions{ReadOnly: true}, MethodConfigure},
		{"setfd", true, LoopOptions{}, MethodSetFD},
		{"setfd/dio", true, LoopOptions{DirectIO: true}, MethodSetFD},
		{"setfd/dio/4k", true, LoopOptions{DirectIO: true, BlockSize: 4096}, MethodSetFD},
		{"setfd/readonly", true, LoopOptions{ReadOnly: true}, MethodSetFD},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setForceSetFD(t, tt.setFD)
			img := newImage(t, t.TempDir(), 16<<20)
			// Something to read back through a read-only device.
			want := pattern(4096, 0x5a)
			f, err := os.OpenFile(img, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(want, 1<<20); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}

			l := attach(t, img, tt.opt)
			if l.Method != tt.wantMethod {
				t.Errorf("Method = %q, want %q", l.Method, tt.wantMethod)
			}
			if l.Path != "/dev/"+l.Name || l.Backing != img {
				t.Errorf("Loop = %+v, want Path /dev/%s and Backing %s", l, l.Name, img)
			}
			sys := func(attr string) string {
				b, err := os.ReadFile(filepath.Join(sysfsRoot, "block", l.Name, attr))
				if err != nil {
					t.Fatal(err)
				}
				return string(b[:len(b)-1])
			}
			if got := sys("loop/backing_file"); got != img {
				t.Errorf("sysfs backing_file = %q, want %q", got, img)
			}
			if got := sys("loop/autoclear"); got != "1" {
				t.Errorf("sysfs autoclear = %q, want 1", got)
			}
			if got, want := sys("loop/dio") == "1", l.DirectIO; got != want {
				t.Errorf("sysfs dio = %v but Loop.DirectIO = %v", got, want)
			}
			// The test image lives on the host's disk file system, which does O_DIRECT: the
			// kernel should have granted what was asked.
			if l.DirectIO != tt.opt.DirectIO {
				t.Errorf("DirectIO = %v, asked %v (backing: %s)", l.DirectIO, tt.opt.DirectIO, img)
			}
			bs := tt.opt.BlockSize
			if bs == 0 {
				bs = 512
			}
			if got := sys("queue/logical_block_size"); got != strconv.Itoa(int(bs)) {
				t.Errorf("logical_block_size = %s, want %d", got, bs)
			}
			wantRO := "0"
			if tt.opt.ReadOnly {
				wantRO = "1"
			}
			if got := sys("ro"); got != wantRO {
				t.Errorf("ro = %s, want %s", got, wantRO)
			}

			// Read through the device what was written to the image.
			if got := readAt(t, l.Path, 1<<20, len(want)); !equalBytes(got, want) {
				t.Error("data read through the loop device differs from the image's")
			}
			if tt.opt.ReadOnly {
				if f, err := os.OpenFile(l.Path, os.O_WRONLY, 0); err == nil {
					_, werr := f.WriteAt(want, 0)
					serr := f.Sync()
					f.Close()
					if werr == nil && serr == nil {
						t.Error("writing to a read-only loop device succeeded")
					}
				}
			} else {
				// Write through the device, read it from the image.
				data := pattern(8192, 0xc3)
				f, err := os.OpenFile(l.Path, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt(data, 4<<20); err != nil {
					t.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					t.Fatal(err)
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
				if got := readAt(t, img, 4<<20, len(data)); !equalBytes(got, data) {
					t.Error("data written through the loop device did not reach the image")
				}
			}

			if err := l.Detach(); err != nil {
				t.Fatalf("Detach: %v", err)
			}
			// /sys/block/loopN/loop is gone once the device is unbound (or, if another
			// process grabbed the number at once, names someone else's file).
			if boundTo(t, l.Name, img) {
				t.Errorf("/sys/block/%s/loop still names %s after Detach", l.Name, img)
			}
			if err := l.Detach(); err != nil {
				t.Errorf("second Detach: %v", err)
			}
		})
	}
}

// TestAttachLoopDirectIORefused asks for direct I/O where the kernel cannot give it: a loop
// with 512-byte blocks over a file on a file system whose device has 4 KiB sectors (here an
// outer loop device with 4 KiB blocks). The attach must succeed with DirectIO false.
func TestAttachLoopDirectIORefused(t *testing.T) {
	requireRoot(t)
	requireMkfsExt4(t)
	for _, setFD := range []bool{false, true} {
		t.Run("setfd="+strconv.FormatBool(setFD), func(t *testing.T) {
			dir := t.TempDir()
			outer := attach(t, newImage(t, dir, 64<<20), LoopOptions{BlockSize: 4096})
			mkfsExt4(t, outer.Path)
			mnt := filepath.Join(dir, "mnt")
			mountExt4(t, outer.Path, mnt)

			setForceSetFD(t, setFD)
			inner := attach(t, newImage(t, mnt, 8<<20), LoopOptions{DirectIO: true, BlockSize: 512})
			if inner.DirectIO {
				t.Errorf("DirectIO = true for a 512-byte loop over a 4 KiB-sector file system; the kernel should have refused")
			}
			b, err := os.ReadFile(filepath.Join(sysfsRoot, "block", inner.Name, "loop", "dio"))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != "0\n" {
				t.Errorf("sysfs dio = %q, want 0", b)
			}
			// Detach the inner loop before the outer file system is unmounted (cleanups run
			// last-in first-out, so this already holds; be explicit).
			if err := inner.Detach(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAttachLoopErrors(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	if _, err := AttachLoop(filepath.Join(dir, "missing.img"), LoopOptions{}); err == nil {
		t.Error("AttachLoop of a missing file succeeded")
	}
	if _, err := AttachLoop(dir, LoopOptions{}); err == nil {
		t.Error("AttachLoop of a directory succeeded")
	}
	img := newImage(t, dir, 1<<20)
	for _, bs := range []uint32{256, 1000, 4097} {
		if l, err := AttachLoop(img, LoopOptions{BlockSize: bs}); err == nil {
			l.Detach()
			t.Errorf("AttachLoop with block size %d succeeded", bs)
		}
	}
}
