package device

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/fsbench/fsbench/internal/session"
	"github.com/fsbench/fsbench/internal/testkit/sessiontest"
	"golang.org/x/sys/unix"
)

// writeMBR writes a DOS partition table with one Linux partition from sector start, count
// sectors long. Done by hand because sfdisk (util-linux's fdisk package) is not always
// installed, and the format is simple: 4 entries of 16 bytes at offset 446, signature 55 AA.
func writeMBR(t *testing.T, img string, start, count uint32) {
	t.Helper()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mbr := make([]byte, 512)
	e := mbr[446:462]
	e[0] = 0x00                            // not bootable
	copy(e[1:4], []byte{0xfe, 0xff, 0xff}) // CHS start: "use LBA"
	e[4] = 0x83                            // Linux
	copy(e[5:8], []byte{0xfe, 0xff, 0xff})
	binary.LittleEndian.PutUint32(e[8:12], start)
	binary.LittleEndian.PutUint32(e[12:16], count)
	mbr[510], mbr[511] = 0x55, 0xaa
	if _, err := f.WriteAt(mbr, 0); err != nil {
		t.Fatal(err)
	}
}

// losetupPartscan attaches img with partition scanning (losetup -P: session.AttachLoop has no
// option for it) and detaches it when the test ends.
func losetupPartscan(t *testing.T, img string, start, count uint32) string {
	t.Helper()
	out, err := exec.Command("losetup", "-P", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup -P %s: %v\n%s", img, err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
			t.Errorf("cleanup: losetup -d %s: %v\n%s", dev, err, out)
		}
	})
	p1 := dev + "p1"
	if waitFor(p1, time.Second) {
		return dev
	}
	// No partition appeared: kernels built without partition table parsers
	// (CONFIG_MSDOS_PARTITION unset, as on some test VMs) ignore the MBR. BLKPG adds the
	// partition directly, the way partx does, and works on any kernel.
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	part := unix.BlkpgPartition{Start: int64(start) * 512, Length: int64(count) * 512, Pno: 1}
	arg := unix.BlkpgIoctlArg{Op: unix.BLKPG_ADD_PARTITION, Datalen: int32(unsafe.Sizeof(part)), Data: (*byte)(unsafe.Pointer(&part))}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKPG, uintptr(unsafe.Pointer(&arg))); errno != 0 {
		t.Skipf("cannot make a partition on %s: the kernel ignored the MBR and BLKPG_ADD_PARTITION failed: %v", dev, errno)
	}
	if !waitFor(p1, 2*time.Second) {
		t.Fatalf("%s did not appear after BLKPG_ADD_PARTITION", p1)
	}
	return dev
}

// waitFor waits until path exists: devtmpfs creates partition nodes asynchronously.
func waitFor(path string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
	}
	return false
}

func TestCheckDevice(t *testing.T) {
	sessiontest.RequireRoot(t)
	dir := t.TempDir()

	type setup func(t *testing.T) (path, destroy string)
	plainLoop := func(t *testing.T) string {
		img := filepath.Join(t.TempDir(), "plain.img")
		if err := session.CreateImage(img, 64<<20); err != nil {
			t.Fatal(err)
		}
		return sessiontest.Attach(t, img, session.LoopOptions{}).Path
	}
	cases := []struct {
		name  string
		setup setup
		want  string // "" = accepted; else a substring of the refusal
	}{
		{"valid loop device", func(t *testing.T) (string, string) {
			p := plainLoop(t)
			return p, p
		}, ""},
		{"no --destroy", func(t *testing.T) (string, string) {
			return plainLoop(t), ""
		}, "--destroy was not given"},
		{"wrong --destroy", func(t *testing.T) (string, string) {
			a, b := plainLoop(t), plainLoop(t)
			return a, b
		}, "name the same device twice"},
		{"symlink to the same device", func(t *testing.T) (string, string) {
			p := plainLoop(t)
			link := filepath.Join(t.TempDir(), "by-id-link")
			if err := os.Symlink(p, link); err != nil {
				t.Fatal(err)
			}
			return link, p
		}, ""},
		{"regular file", func(t *testing.T) (string, string) {
			img := filepath.Join(t.TempDir(), "file.img")
			if err := session.CreateImage(img, 1<<20); err != nil {
				t.Fatal(err)
			}
			return img, img
		}, "a regular file, not a block device"},
		{"missing", func(t *testing.T) (string, string) {
			p := filepath.Join(dir, "no-such-device")
			return p, p
		}, "no such file"},
		{"mounted", func(t *testing.T) (string, string) {
			p := plainLoop(t)
			sessiontest.MkfsExt4(t, p)
			sessiontest.MountExt4(t, p, filepath.Join(t.TempDir(), "mnt"))
			return p, p
		}, "it is mounted on"},
		{"holds a mounted partition", func(t *testing.T) (string, string) {
			sessiontest.RequireMkfsExt4(t)
			img := filepath.Join(t.TempDir(), "parted.img")
			if err := session.CreateImage(img, 64<<20); err != nil {
				t.Fatal(err)
			}
			writeMBR(t, img, 2048, 32768)
			dev := losetupPartscan(t, img, 2048, 32768)
			sessiontest.MkfsExt4(t, dev+"p1")
			sessiontest.MountExt4(t, dev+"p1", filepath.Join(t.TempDir(), "mnt"))
			return dev, dev
		}, "its partition "},
		{"held by device-mapper", func(t *testing.T) (string, string) {
			dmsetup, err := exec.LookPath("dmsetup")
			if err != nil {
				t.Skip("dmsetup (Debian: dmsetup) is not installed: cannot build a holder")
			}
			p := plainLoop(t)
			name := fmt.Sprintf("fsbench-test-%d", os.Getpid())
			table := fmt.Sprintf("0 %d linear %s 0", (64<<20)/512, p)
			if out, err := exec.Command(dmsetup, "create", name, "--table", table).CombinedOutput(); err != nil {
				t.Skipf("dmsetup create failed (no device-mapper in this kernel?): %v\n%s", err, out)
			}
			t.Cleanup(func() {
				if out, err := exec.Command(dmsetup, "remove", "--retry", name).CombinedOutput(); err != nil {
					t.Errorf("cleanup: dmsetup remove %s: %v\n%s", name, err, out)
				}
			})
			return p, p
		}, "LVM, RAID, dm-crypt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, destroy := c.setup(t)
			id, err := CheckDevice(path, destroy)
			if c.want == "" {
				if err != nil {
					t.Fatalf("CheckDevice(%s, %s): %v", path, destroy, err)
				}
				if id.SizeBytes != 64<<20 || id.Loop == nil {
					t.Errorf("identity %+v: want a 64 MiB loop device", id)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckDevice(%s, %s) accepted it; want a refusal containing %q", path, destroy, c.want)
			}
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Errorf("error %v is not a *RefusedError", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func TestCheckDeviceRoot(t *testing.T) {
	sessiontest.RequireRoot(t)
	root, ok, err := rootDev()
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("/ is not on a block device here (overlay, tmpfs, virtiofs): nothing to refuse")
	}
	name, err := sysfsName(root)
	if err != nil {
		t.Skipf("root device %s has no sysfs entry: %v", root, err)
	}
	disk, err := parentDisk(root)
	if err != nil {
		t.Fatal(err)
	}
	// CheckDevice only reads; it is safe to point it at the root device and its disk.
	for _, n := range []string{name, disk} {
		p := "/dev/" + n
		if _, err := os.Stat(p); err != nil {
			t.Skipf("no device node %s: %v", p, err)
		}
		_, err := CheckDevice(p, p)
		if err == nil {
			t.Fatalf("CheckDevice(%s) accepted the device holding /", p)
		}
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Errorf("CheckDevice(%s): %v is not a refusal", p, err)
		}
		t.Logf("%s: %v", p, err)
	}
}
