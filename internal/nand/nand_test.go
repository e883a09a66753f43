package nand

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestModprobeArgs(t *testing.T) {
	tests := []struct {
		name    string
		t       Timings
		part    uint64
		want    string
		wantErr string
	}{
		{"8M with delays", DefaultTimings, 8 << 20,
			"nandsim id_bytes=0x20,0xaa,0x00,0x15 parts=64 do_delays=1 access_delay=25 programm_delay=200 erase_delay=2 output_cycle=40 input_cycle=50", ""},
		{"252M without delays", Timings{}, 252 << 20, "nandsim id_bytes=0x20,0xaa,0x00,0x15 parts=2016 do_delays=0", ""},
		{"whole chip: no partition table", Timings{}, 256 << 20, "nandsim id_bytes=0x20,0xaa,0x00,0x15 do_delays=0", ""},
		{"not whole erase blocks", Timings{}, 8<<20 + 4096, "", "whole number of 128 KiB erase blocks"},
		{"larger than the chip", Timings{}, 512 << 20, "", "does not fit the 256 MiB chip"},
		{"too small for UBI", Timings{}, 1 << 20, "", "at least 16 erase blocks"},
		{"zero", Timings{}, 0, "", "whole number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ModprobeArgs(DefaultChip, tc.t, tc.part)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

// TestBEBPer1024 checks that every partition keeps the bad-block reserve a chip of its own size
// would get by default (20 per 1024 blocks, rounded up by the kernel).
func TestBEBPer1024(t *testing.T) {
	for _, tc := range []struct {
		part uint64
		want int
	}{
		{8 << 20, 1}, {32 << 20, 3}, {128 << 20, 10}, {252 << 20, 20}, {256 << 20, 20},
	} {
		got := BEBPer1024(DefaultChip, tc.part)
		if got != tc.want {
			t.Errorf("%d MiB: %d, want %d", tc.part>>20, got, tc.want)
		}
		// The kernel reserves ceil(chip blocks × b / 1024) blocks: at most ~2 % of the partition
		// plus one block of rounding, never 40 blocks of a small partition.
		chipBlocks := DefaultChip.Size / DefaultChip.EraseSize
		reserved := (chipBlocks*uint64(got) + 1023) / 1024
		partBlocks := tc.part / DefaultChip.EraseSize
		if reserved > partBlocks*25/1000+2 {
			t.Errorf("%d MiB: %d of %d blocks reserved", tc.part>>20, reserved, partBlocks)
		}
	}
}

type call struct {
	name string
	args []string
}

type fakeRunner struct {
	calls []call
	fail  map[string]error
	// onCall lets a test make sysfs look as the real command would leave it.
	onCall func(name string, args []string)
}

func (f *fakeRunner) run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.calls = append(f.calls, call{name, args})
	if f.onCall != nil {
		f.onCall(name, args)
	}
	if err := f.fail[name]; err != nil {
		return []byte(name + ": it went wrong"), err
	}
	return nil, nil
}

func (f *fakeRunner) lines() []string {
	var out []string
	for _, c := range f.calls {
		out = append(out, strings.TrimSpace(c.name+" "+strings.Join(c.args, " ")))
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeSysfs points the package at a sysfs tree that behaves like the kernel's for the commands
// the fake runner receives.
func fakeSysfs(t *testing.T, f *fakeRunner) string {
	root := t.TempDir()
	old := sysfsRoot
	sysfsRoot = root
	t.Cleanup(func() { sysfsRoot = old })
	f.onCall = func(name string, args []string) {
		switch name {
		case "modprobe":
			// Another MTD device (a board's own NOR, say) comes first: the partition is found by name.
			writeFile(t, filepath.Join(root, "class/mtd/mtd0/name"), "spi-nor")
			writeFile(t, filepath.Join(root, "class/mtd/mtd1/name"), PartitionName)
			writeFile(t, filepath.Join(root, "class/mtd/mtd1ro/name"), PartitionName)
			writeFile(t, filepath.Join(root, "class/mtd/mtd1/size"), "8388608")
		case "ubiattach":
			for k, v := range map[string]string{"eraseblock_size": "129024", "min_io_size": "2048", "total_eraseblocks": "64",
				"avail_eraseblocks": "58", "reserved_for_bad": "2"} {
				writeFile(t, filepath.Join(root, "class/ubi/ubi0", k), v)
			}
		case "ubimkvol":
			writeFile(t, filepath.Join(root, "class/ubi/ubi0_0/reserved_ebs"), "58")
			writeFile(t, filepath.Join(root, "class/ubi/ubi0_0/usable_eb_size"), "129024")
		}
	}
	return root
}

// TestUBIFSPreparation follows the commands a ubifs preparation runs and the geometry it reads
// back: the image's LEB size and count come from the kernel, not from assumptions.
func TestUBIFSPreparation(t *testing.T) {
	f := &fakeRunner{}
	fakeSysfs(t, f)
	ctx := context.Background()
	sim, err := Load(ctx, f.run, DefaultChip, Timings{}, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	if sim.MTD != 1 || sim.Dev != "/dev/mtd1" {
		t.Fatalf("partition found at %d %s, want mtd1", sim.MTD, sim.Dev)
	}
	if err := sim.Format(ctx); err != nil {
		t.Fatal(err)
	}
	u, err := sim.Attach(ctx, 0, BEBPer1024(DefaultChip, 8<<20))
	if err != nil {
		t.Fatal(err)
	}
	if u.LEBSize != 129024 || u.MinIO != 2048 || u.TotalPEBs != 64 || u.ReservedBad != 2 || u.AvailLEBs != 58 {
		t.Errorf("geometry %+v", u)
	}
	vol, err := u.MakeVolume(ctx, "fsbench", 0)
	if err != nil {
		t.Fatal(err)
	}
	if vol.Dev != "/dev/ubi0_0" || vol.ReservedLEBs != 58 || vol.MountSource() != "ubi0:fsbench" {
		t.Errorf("volume %+v, mount source %s", vol, vol.MountSource())
	}
	img := "/tmp/x.img"
	f.calls = append(f.calls, call{"mkfs.ubifs", UBIFSImageArgs(u, vol, "/src", img, []string{"-x", "zlib"})})
	if err := vol.Update(ctx, img); err != nil {
		t.Fatal(err)
	}
	if err := u.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sim.Unload(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"modprobe nandsim id_bytes=0x20,0xaa,0x00,0x15 parts=64 do_delays=0",
		"ubiformat -q -y /dev/mtd1",
		"ubiattach -m 1 -d 0 -b 1",
		"ubimkvol /dev/ubi0 -N fsbench -m -n 0",
		"mkfs.ubifs -r /src -o /tmp/x.img -m 2048 -e 129024 -c 58 -x zlib",
		"ubiupdatevol /dev/ubi0_0 /tmp/x.img",
		"ubidetach -d 0",
		"rmmod nandsim",
	}
	if diff := cmp.Diff(want, f.lines()); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

func TestJFFS2Preparation(t *testing.T) {
	f := &fakeRunner{}
	fakeSysfs(t, f)
	ctx := context.Background()
	sim, err := Load(ctx, f.run, DefaultChip, Timings{}, 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Erase(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteImage(ctx, "/tmp/j.img"); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(JFFS2ImageArgs(DefaultChip, "/src", "/tmp/j.img", []string{"-x", "lzo"}), " ")
	if got != "-r /src -o /tmp/j.img -e 131072 -n -x lzo" {
		t.Errorf("mkfs.jffs2 %s", got)
	}
	want := []string{
		"modprobe nandsim id_bytes=0x20,0xaa,0x00,0x15 parts=64 do_delays=0",
		"flash_erase -q /dev/mtd1 0 0",
		"nandwrite -q -p --skip-all-ffs /dev/mtd1 /tmp/j.img",
	}
	if diff := cmp.Diff(want, f.lines()); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

// TestLoadRefusesAndReports checks the refusals and the error messages a user acts on.
func TestLoadRefusesAndReports(t *testing.T) {
	ctx := context.Background()
	t.Run("nandsim already loaded", func(t *testing.T) {
		f := &fakeRunner{}
		root := fakeSysfs(t, f)
		writeFile(t, filepath.Join(root, "module/nandsim/initstate"), "live")
		_, err := Load(ctx, f.run, DefaultChip, Timings{}, 8<<20)
		if err == nil || !strings.Contains(err.Error(), "rmmod nandsim") || len(f.calls) != 0 {
			t.Errorf("err = %v after %v", err, f.lines())
		}
	})
	t.Run("modprobe fails", func(t *testing.T) {
		f := &fakeRunner{fail: map[string]error{"modprobe": errors.New("exit status 1")}}
		fakeSysfs(t, f)
		_, err := Load(ctx, f.run, DefaultChip, Timings{}, 8<<20)
		if err == nil || !strings.Contains(err.Error(), "modprobe nandsim") || !strings.Contains(err.Error(), "it went wrong") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("tool missing", func(t *testing.T) {
		f := &fakeRunner{fail: map[string]error{"ubiformat": errors.New(`exec: "ubiformat": executable file not found in $PATH`)}}
		fakeSysfs(t, f)
		sim, err := Load(ctx, f.run, DefaultChip, Timings{}, 8<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := sim.Format(ctx); err == nil || !strings.Contains(err.Error(), "install the Debian package mtd-utils") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no partition appears", func(t *testing.T) {
		f := &fakeRunner{}
		root := t.TempDir()
		old := sysfsRoot
		sysfsRoot = root
		defer func() { sysfsRoot = old }()
		_, err := Load(ctx, f.run, DefaultChip, Timings{}, 8<<20)
		if err == nil || !strings.Contains(err.Error(), "dmesg") {
			t.Errorf("err = %v", err)
		}
		// The module it loaded is unloaded again.
		if l := f.lines(); len(l) != 2 || l[1] != "rmmod nandsim" {
			t.Errorf("commands %v", l)
		}
	})
}
