package blockdev

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// readSeed returns the content of a file of the fake sysfs tree in testdata, "" if absent.
func readSeed(f *testing.F, path string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "sysfs", path))
	if err != nil && !os.IsNotExist(err) {
		f.Fatal(err)
	}
	return string(b)
}

// FuzzIdentify writes a disk and its partition into a fake sysfs tree with the fuzzed
// attribute contents and checks what Identify reads: a size is accepted exactly when it is a
// number of 512-byte sectors whose bytes fit a uint64, and SizeBytes is that number of
// bytes; attributes are kept without their surrounding blanks; the loop state is read as the
// kernel writes it ("1" for on); a partition has its own size and its disk's queue and
// device attributes. Seeds are the attributes of the devices in testdata/sysfs.
func FuzzIdentify(f *testing.F) {
	mmc := "devices/platform/fe320000.mmc/mmc_host/mmc1/mmc1_59b4/"
	sda := "devices/pci0000_00/0000_00_1f.2/ata1/host0/target0_0_0/0_0_0_0/"
	loop := "devices/virtual/block/loop3/"
	f.Add(readSeed(f, mmc+"block/mmcblk0/size"), readSeed(f, mmc+"block/mmcblk0/mmcblk0p2/size"),
		readSeed(f, mmc+"block/mmcblk0/queue/scheduler"), readSeed(f, mmc+"name"), "", "")
	f.Add(readSeed(f, sda+"block/sda/size"), readSeed(f, sda+"block/sda/sda1/size"),
		readSeed(f, sda+"block/sda/queue/scheduler"), readSeed(f, sda+"model"), "", "")
	f.Add(readSeed(f, loop+"size"), "2048\n", readSeed(f, loop+"queue/scheduler"), "",
		readSeed(f, loop+"loop/backing_file"), readSeed(f, loop+"loop/dio"))
	f.Add("36028797018963967\n", "1", " x ", "\n", "/a b \n", " 1 ")
	f.Add("-1", "0x10", "", "", "\n", "0")

	sysfs, disk, part := fakeDisk(f)

	f.Fuzz(func(t *testing.T, size, partSize, scheduler, model, backing, dio string) {
		write := func(path, s string) {
			if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(filepath.Join(disk, "size"), size)
		write(filepath.Join(part, "size"), partSize)
		write(filepath.Join(disk, "queue", "scheduler"), scheduler)
		write(filepath.Join(disk, "device", "model"), model)
		write(filepath.Join(disk, "loop", "backing_file"), backing)
		write(filepath.Join(disk, "loop", "dio"), dio)

		for _, dev := range []struct{ name, size string }{{"disk0", size}, {"disk0p1", partSize}} {
			id, err := Identify(sysfs, dev.name)
			sectors, perr := strconv.ParseUint(strings.TrimSpace(dev.size), 10, 64)
			fits := perr == nil && sectors <= math.MaxUint64/SectorSize
			if (err == nil) != fits {
				t.Fatalf("Identify(%s) with size %q: error %v", dev.name, dev.size, err)
			}
			if err != nil {
				continue
			}
			if id.Name != dev.name || id.Path != "/dev/"+dev.name {
				t.Fatalf("Identify(%s): name %q, path %q", dev.name, id.Name, id.Path)
			}
			if id.SizeBytes/SectorSize != sectors || id.SizeBytes%SectorSize != 0 {
				t.Fatalf("Identify(%s): size %q read as %d bytes", dev.name, dev.size, id.SizeBytes)
			}
			if got, want := id.Queue["scheduler"], strings.TrimSpace(scheduler); got != want {
				t.Fatalf("Identify(%s): scheduler %q read as %q", dev.name, scheduler, got)
			}
			if got, want := id.Device["model"], strings.TrimSpace(model); got != want {
				t.Fatalf("Identify(%s): model %q read as %q", dev.name, model, got)
			}
			if id.Loop == nil || id.Loop.BackingFile != strings.TrimRight(backing, "\n") ||
				id.Loop.DirectIO != (strings.TrimSpace(dio) == "1") || id.Loop.Autoclear {
				t.Fatalf("Identify(%s): loop %+v from backing_file %q, dio %q", dev.name, id.Loop, backing, dio)
			}
		}
	})
}

// fakeDisk lays out a sysfs tree with a disk "disk0" (queue/, device/ and loop/ directories,
// no attribute files) and its partition "disk0p1", both listed in class/block, and returns
// the tree's root and the two devices' directories.
func fakeDisk(tb testing.TB) (sysfs, disk, part string) {
	sysfs = tb.TempDir()
	disk = filepath.Join(sysfs, "devices", "virtual", "block", "disk0")
	part = filepath.Join(disk, "disk0p1")
	for _, d := range []string{filepath.Join(sysfs, "class", "block"), filepath.Join(disk, "queue"),
		filepath.Join(disk, "device"), filepath.Join(disk, "loop"), part} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for name, dir := range map[string]string{"disk0": disk, "disk0p1": part} {
		target, err := filepath.Rel(filepath.Join(sysfs, "class", "block"), dir)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(sysfs, "class", "block", name)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(part, "partition"), []byte("1\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	return sysfs, disk, part
}

// TestIdentifySize checks the size attribute: 512-byte sectors, refused when not a number
// or when the bytes would not fit 64 bits (they wrapped to a small size before).
func TestIdentifySize(t *testing.T) {
	sysfs, disk, _ := fakeDisk(t)
	tests := []struct {
		size    string
		want    uint64
		wantErr string
	}{
		{"2097152\n", 1 << 30, ""},
		{" 0 ", 0, ""},
		{"36028797018963967\n", 1<<64 - 512, ""},
		{"36028797018963968\n", 0, "do not fit 64 bits"},
		{"18446744073709551615", 0, "do not fit 64 bits"},
		{"-1", 0, "invalid syntax"},
		{"", 0, "invalid syntax"},
	}
	for _, tt := range tests {
		if err := os.WriteFile(filepath.Join(disk, "size"), []byte(tt.size), 0o644); err != nil {
			t.Fatal(err)
		}
		id, err := Identify(sysfs, "disk0")
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("size %q: error %v, want one saying %q", tt.size, err, tt.wantErr)
		case tt.wantErr == "" && err != nil:
			t.Errorf("size %q: %v", tt.size, err)
		case tt.wantErr == "" && id.SizeBytes != tt.want:
			t.Errorf("size %q: %d bytes, want %d", tt.size, id.SizeBytes, tt.want)
		}
	}
}
