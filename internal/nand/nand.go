// Package nand drives a simulated raw NAND chip (the kernel's nandsim) and the MTD and UBI
// tools around it: load the chip with a partition of a chosen size, erase it, write an image,
// format and attach UBI, make and fill volumes, expose a volume as a block device (ubiblock).
// The free-electrons suite runs jffs2, ubifs and squashfs-on-UBI on it, as the 2010 study did
// on its boards' NAND.
//
// Every step runs the mtd-utils program a user would run (flash_erase, nandwrite, ubiformat,
// ubiattach, ubimkvol, ubiupdatevol, ubiblock, ubidetach), through an fs.Runner so that tests
// can check the command lines; sizes are read back from sysfs rather than assumed. Each runs in
// a jail (fs.Confined) whose /dev holds the one device it works on: the MTD partition, UBI's
// control device, the UBI device or its volume.
package nand

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/fs"
)

// Chip is the geometry of the simulated NAND chip.
type Chip struct {
	// IDBytes are what the chip answers to READ ID; nandsim derives the geometry from them.
	IDBytes   []byte
	Size      uint64 // bytes
	PageSize  uint64 // bytes
	EraseSize uint64 // bytes (one erase block)
	OOBSize   uint64 // spare bytes per page
	Name      string // for reports
}

// DefaultChip is a 256 MiB SLC NAND with 2 KiB pages and 128 KiB erase blocks (ST/Numonyx
// NAND02G, READ ID 20 aa 00 15), the class of chip on the 2010 study's boards: its 252 MB
// partition left 4 MB of a 256 MB chip to the bootloader and kernel. Every partition size is
// carved from the start of this one chip, as on those boards.
//
// nandsim's overridesize (to make a chip exactly the partition's size) is not used: with 2 KiB
// pages it confuses the NAND core's address cycles on 6.1 and every block reads as bad.
var DefaultChip = Chip{
	IDBytes: []byte{0x20, 0xaa, 0x00, 0x15}, Size: 256 << 20, PageSize: 2048, EraseSize: 128 << 10, OOBSize: 64,
	Name: "256 MiB SLC NAND, 2 KiB pages, 128 KiB erase blocks (nandsim, ID 20 aa 00 15)",
}

// Timings are nandsim's busy-wait delays, applied only when Enabled (its do_delays).
type Timings struct {
	Enabled   bool
	AccessUs  uint // page read: cell array to page register (tR)
	ProgramUs uint // page program (tPROG)
	EraseMs   uint // block erase (tBERS)
	// OutputNs and InputNs are per bus word (a byte: the bus is 8 bits wide): reading a page
	// out of the register and loading one in.
	OutputNs uint
	InputNs  uint
}

// DefaultTimings are nandsim's own defaults, which match the datasheets of 2 KiB-page SLC chips
// of that time: tR 25 µs, tPROG 200 µs, tBERS 2 ms, 40 ns per byte out and 50 ns per byte in.
// A page read thus costs 25 + 2112 × 0.04 ≈ 110 µs (about 19 MB/s) and a page program 200 +
// 2112 × 0.05 ≈ 306 µs (about 6.7 MB/s); an erase block is 2 ms.
var DefaultTimings = Timings{Enabled: true, AccessUs: 25, ProgramUs: 200, EraseMs: 2, OutputNs: 40, InputNs: 50}

// ubiCtrl is UBI's control device, which ubiattach and ubidetach give MTD and UBI numbers to: the
// one device in their jail (it names MTD devices by number, which no jail can narrow; no word of
// a configuration reaches these tools).
const ubiCtrl = "/dev/ubi_ctrl"

// sysfsRoot is where sysfs is mounted; tests point it at a fake tree.
var sysfsRoot = "/sys"

// PartitionName is what nandsim calls its first partition in /proc/mtd and sysfs.
const PartitionName = "NAND simulator partition 0"

// ModprobeArgs are the nandsim module parameters for a chip whose first partition is partBytes
// (a whole number of erase blocks, at most the chip) and, if that leaves any, a second partition
// with the rest. Nothing is ever written to the second one.
func ModprobeArgs(chip Chip, t Timings, partBytes uint64) ([]string, error) {
	if err := CheckPartition(chip, partBytes); err != nil {
		return nil, err
	}
	ids := make([]string, len(chip.IDBytes))
	for i, b := range chip.IDBytes {
		ids[i] = fmt.Sprintf("0x%02x", b)
	}
	args := []string{"nandsim", "id_bytes=" + strings.Join(ids, ",")}
	if partBytes < chip.Size {
		args = append(args, "parts="+strconv.FormatUint(partBytes/chip.EraseSize, 10))
	}
	d := 0
	if t.Enabled {
		d = 1
	}
	args = append(args, "do_delays="+strconv.Itoa(d))
	if t.Enabled {
		args = append(args,
			"access_delay="+strconv.FormatUint(uint64(t.AccessUs), 10),
			"programm_delay="+strconv.FormatUint(uint64(t.ProgramUs), 10), // sic: nandsim's spelling
			"erase_delay="+strconv.FormatUint(uint64(t.EraseMs), 10),
			"output_cycle="+strconv.FormatUint(uint64(t.OutputNs), 10),
			"input_cycle="+strconv.FormatUint(uint64(t.InputNs), 10))
	}
	return args, nil
}

// CheckPartition says whether a partition of partBytes fits the chip in whole erase blocks.
func CheckPartition(chip Chip, partBytes uint64) error {
	switch {
	case chip.EraseSize == 0 || chip.Size == 0:
		return errors.New("nand: chip geometry not set")
	case partBytes == 0 || partBytes%chip.EraseSize != 0:
		return fmt.Errorf("partition of %d bytes: must be a whole number of %d KiB erase blocks", partBytes, chip.EraseSize>>10)
	case partBytes > chip.Size:
		return fmt.Errorf("partition of %s does not fit the %s chip", bytesize.Format(partBytes), bytesize.Format(chip.Size))
	case partBytes/chip.EraseSize < 16:
		return fmt.Errorf("partition of %s: at least 16 erase blocks are needed (UBI alone reserves 4 to 6)", bytesize.Format(partBytes))
	}
	return nil
}

// Sim is a loaded nandsim and its first partition.
type Sim struct {
	MTD            int    // number of the partition's MTD device
	Dev            string // its character device, /dev/mtdN
	PartitionBytes uint64
	Chip           Chip
	Timings        Timings
	run            fs.Runner
	sysfs          string
}

// Load loads nandsim with the chip and a first partition of partBytes. It refuses when nandsim
// is already loaded: that chip belongs to someone else, and its data would be lost.
func Load(ctx context.Context, run fs.Runner, chip Chip, t Timings, partBytes uint64) (*Sim, error) {
	args, err := ModprobeArgs(chip, t, partBytes)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(sysfsRoot, "module/nandsim")); err == nil {
		return nil, errors.New("nandsim is already loaded, by something other than this run: its simulated chip may hold data; unload it (rmmod nandsim) and run again")
	}
	if out, err := run(ctx, "modprobe", args...); err != nil {
		return nil, cmdError(ctx, "modprobe", args, err, out)
	}
	s := &Sim{PartitionBytes: partBytes, Chip: chip, Timings: t, run: run, sysfs: sysfsRoot}
	n, err := findMTD(s.sysfs, PartitionName)
	if err != nil {
		s.Unload(ctx)
		return nil, err
	}
	s.MTD, s.Dev = n, "/dev/mtd"+strconv.Itoa(n)
	size, err := readUint(filepath.Join(s.sysfs, "class/mtd", "mtd"+strconv.Itoa(n), "size"))
	if err == nil && size != partBytes {
		err = fmt.Errorf("nandsim made a partition of %d bytes, not %d", size, partBytes)
	}
	if err != nil {
		s.Unload(ctx)
		return nil, err
	}
	return s, nil
}

// Unload removes nandsim, and its data with it. The caller must have unmounted and detached
// everything on it first.
func (s *Sim) Unload(ctx context.Context) error {
	if out, err := s.run(ctx, "rmmod", "nandsim"); err != nil {
		return cmdError(ctx, "rmmod", []string{"nandsim"}, err, out)
	}
	return nil
}

// findMTD returns the number of the MTD device called name.
func findMTD(sysfs, name string) (int, error) {
	dirs, err := filepath.Glob(filepath.Join(sysfs, "class/mtd/mtd*/name"))
	if err != nil {
		return 0, err
	}
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil || strings.TrimSpace(string(b)) != name {
			continue
		}
		dev := filepath.Base(filepath.Dir(p))
		if strings.HasSuffix(dev, "ro") {
			continue
		}
		return strconv.Atoi(strings.TrimPrefix(dev, "mtd"))
	}
	return 0, fmt.Errorf("no MTD device called %q after loading nandsim (see dmesg)", name)
}

// Erase erases the whole partition: every block reads back as 0xff.
func (s *Sim) Erase(ctx context.Context) error {
	return s.tool(fs.Confined(ctx, []string{s.Dev}, nil), "flash_erase", "-q", s.Dev, "0", "0")
}

// WriteImage writes a raw image (jffs2) to the start of the erased partition. Pages that are
// all 0xff are skipped, as an erased page already reads so and NAND pages are written once per
// erase: jffs2 would find them programmed and unusable.
func (s *Sim) WriteImage(ctx context.Context, img string) error {
	return s.tool(fs.Confined(ctx, []string{s.Dev}, []string{img}), "nandwrite", "-q", "-p", "--skip-all-ffs", s.Dev, img)
}

func (s *Sim) tool(ctx context.Context, name string, args ...string) error {
	if out, err := s.run(ctx, name, args...); err != nil {
		return cmdError(ctx, name, args, err, out)
	}
	return nil
}

// JFFS2ImageArgs are mkfs.jffs2's arguments for an image of src made for this chip: erase
// block size (data nodes keep mkfs.jffs2's default of 4 KiB, the kernel's page size, which is
// also what jffs2 writes), no cleanmarkers (on NAND they live in the OOB area, which nandwrite does not
// write; jffs2 writes them itself when it first erases a block) and the variant's extra
// arguments (e.g. compression options), which come last so that they can override.
func JFFS2ImageArgs(chip Chip, src, img string, extra []string) []string {
	args := []string{"-r", src, "-o", img, "-e", strconv.FormatUint(chip.EraseSize, 10), "-n"}
	return append(args, extra...)
}

// BEBPer1024 is ubiattach's --max-beb-per1024 that reserves for bad blocks what the kernel's
// default (CONFIG_MTD_UBI_BEB_LIMIT, 20 per 1024) reserves on a chip of the partition's own
// size. Since Linux 3.7 UBI computes the reserve from the size of the whole chip, not of the
// partition: 40 blocks of a 256 MiB chip, which would leave an 8 MiB partition (64 blocks) 20
// blocks for data. In 2010 (2.6.36) the reserve was 1 % of the partition; scaling the limit
// keeps every partition size comparable, as the study's were.
func BEBPer1024(chip Chip, partBytes uint64) int {
	const kernelDefault = 20
	n := (kernelDefault*partBytes + chip.Size - 1) / chip.Size // ceiling
	return int(max(n, 1))
}

// UBI is an attached UBI device, with its geometry as the kernel reports it.
type UBI struct {
	Num          int    // ubiN
	MTD          int    // the MTD device it is attached to
	LEBSize      uint64 // logical erase block: the erase block less UBI's headers
	MinIO        uint64 // smallest write (the page)
	TotalPEBs    int    // physical erase blocks
	AvailLEBs    int    // free for volumes
	ReservedBad  int    // kept for bad-block handling
	BEBPer1024   int    // the --max-beb-per1024 it was attached with
	run          fs.Runner
	sysfs        string
	volumesAdded []int
}

// Format erases the partition keeping UBI's erase counters (none yet: a fresh chip).
func (s *Sim) Format(ctx context.Context) error {
	return s.tool(fs.Confined(ctx, []string{s.Dev}, nil), "ubiformat", "-q", "-y", s.Dev)
}

// Attach attaches UBI to the partition as ubi<num> (the ubi module must be loaded).
func (s *Sim) Attach(ctx context.Context, num, bebPer1024 int) (*UBI, error) {
	args := []string{"-m", strconv.Itoa(s.MTD), "-d", strconv.Itoa(num), "-b", strconv.Itoa(bebPer1024)}
	if err := s.tool(fs.Confined(ctx, []string{ubiCtrl}, nil), "ubiattach", args...); err != nil {
		return nil, err
	}
	u := &UBI{Num: num, MTD: s.MTD, BEBPer1024: bebPer1024, run: s.run, sysfs: s.sysfs}
	if err := u.readGeometry(); err != nil {
		u.Detach(ctx)
		return nil, err
	}
	return u, nil
}

func (u *UBI) dir() string { return filepath.Join(u.sysfs, "class/ubi", "ubi"+strconv.Itoa(u.Num)) }

func (u *UBI) readGeometry() error {
	for _, f := range []struct {
		name string
		dst  any
	}{
		{"eraseblock_size", &u.LEBSize}, {"min_io_size", &u.MinIO}, {"total_eraseblocks", &u.TotalPEBs},
		{"avail_eraseblocks", &u.AvailLEBs}, {"reserved_for_bad", &u.ReservedBad},
	} {
		v, err := readUint(filepath.Join(u.dir(), f.name))
		if err != nil {
			return fmt.Errorf("reading UBI's geometry: %w", err)
		}
		switch d := f.dst.(type) {
		case *uint64:
			*d = v
		case *int:
			*d = int(v)
		}
	}
	return nil
}

// Detach detaches the UBI device (its volumes must not be mounted or exposed as blocks).
func (u *UBI) Detach(ctx context.Context) error {
	args := []string{"-d", strconv.Itoa(u.Num)}
	if out, err := u.run(fs.Confined(ctx, []string{ubiCtrl}, nil), "ubidetach", args...); err != nil {
		return cmdError(ctx, "ubidetach", args, err, out)
	}
	return nil
}

// Volume is a UBI volume.
type Volume struct {
	UBI          int
	ID           int
	Name         string
	Dev          string // /dev/ubiN_M
	ReservedLEBs int
	LEBSize      uint64 // usable bytes per LEB
	run          fs.Runner
}

// MakeVolume makes a dynamic volume of size bytes, or of all the free space when size is 0.
func (u *UBI) MakeVolume(ctx context.Context, name string, size uint64) (*Volume, error) {
	args := []string{"/dev/ubi" + strconv.Itoa(u.Num), "-N", name}
	if size == 0 {
		args = append(args, "-m")
	} else {
		args = append(args, "-s", strconv.FormatUint(size, 10))
	}
	id := 0
	for slices.Contains(u.volumesAdded, id) {
		id++
	}
	args = append(args, "-n", strconv.Itoa(id))
	if out, err := u.run(fs.Confined(ctx, []string{args[0]}, nil), "ubimkvol", args...); err != nil {
		return nil, cmdError(ctx, "ubimkvol", args, err, out)
	}
	u.volumesAdded = append(u.volumesAdded, id)
	v := &Volume{UBI: u.Num, ID: id, Name: name, Dev: fmt.Sprintf("/dev/ubi%d_%d", u.Num, id), run: u.run}
	vdir := filepath.Join(u.sysfs, "class/ubi", fmt.Sprintf("ubi%d_%d", u.Num, id))
	n, err := readUint(filepath.Join(vdir, "reserved_ebs"))
	if err != nil {
		return nil, fmt.Errorf("reading the new volume's size: %w", err)
	}
	leb, err := readUint(filepath.Join(vdir, "usable_eb_size"))
	if err != nil {
		return nil, fmt.Errorf("reading the new volume's LEB size: %w", err)
	}
	v.ReservedLEBs, v.LEBSize = int(n), leb
	return v, nil
}

// OpenVolume names an existing volume of this device (one made before a detach and attach).
func (u *UBI) OpenVolume(id int, name string) *Volume {
	v := &Volume{UBI: u.Num, ID: id, Name: name, Dev: fmt.Sprintf("/dev/ubi%d_%d", u.Num, id), run: u.run}
	vdir := filepath.Join(u.sysfs, "class/ubi", fmt.Sprintf("ubi%d_%d", u.Num, id))
	if n, err := readUint(filepath.Join(vdir, "reserved_ebs")); err == nil {
		v.ReservedLEBs = int(n)
	}
	if n, err := readUint(filepath.Join(vdir, "usable_eb_size")); err == nil {
		v.LEBSize = n
	}
	return v
}

// Update replaces the volume's content with an image (ubiupdatevol).
func (v *Volume) Update(ctx context.Context, img string) error {
	args := []string{v.Dev, img}
	if out, err := v.run(fs.Confined(ctx, []string{v.Dev}, []string{img}), "ubiupdatevol", args...); err != nil {
		return cmdError(ctx, "ubiupdatevol", args, err, out)
	}
	return nil
}

// MountSource is the mount(2) source naming this volume for ubifs: "ubiN:NAME".
func (v *Volume) MountSource() string { return fmt.Sprintf("ubi%d:%s", v.UBI, v.Name) }

// CreateBlock exposes the volume as a read-only block device (ubiblock) and returns its path.
func (v *Volume) CreateBlock(ctx context.Context) (string, error) {
	args := []string{"-c", v.Dev}
	if out, err := v.run(fs.Confined(ctx, []string{v.Dev}, nil), "ubiblock", args...); err != nil {
		return "", cmdError(ctx, "ubiblock", args, err, out)
	}
	return fmt.Sprintf("/dev/ubiblock%d_%d", v.UBI, v.ID), nil
}

// RemoveBlock removes the block device CreateBlock made.
func (v *Volume) RemoveBlock(ctx context.Context) error {
	args := []string{"-r", v.Dev}
	if out, err := v.run(fs.Confined(ctx, []string{v.Dev}, nil), "ubiblock", args...); err != nil {
		return cmdError(ctx, "ubiblock", args, err, out)
	}
	return nil
}

// UBIFSImageArgs are mkfs.ubifs's arguments for an image of src that fills vol: page size,
// LEB size and the volume's LEB count, then the variant's extra arguments (e.g. -x zlib).
func UBIFSImageArgs(u *UBI, vol *Volume, src, img string, extra []string) []string {
	args := []string{"-r", src, "-o", img, "-m", strconv.FormatUint(u.MinIO, 10),
		"-e", strconv.FormatUint(vol.LEBSize, 10), "-c", strconv.Itoa(vol.ReservedLEBs)}
	return append(args, extra...)
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// cmdError says which command failed and what it printed; on a cancelled context, that.
func cmdError(ctx context.Context, name string, args []string, err error, out []byte) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), ctx.Err())
	}
	msg := strings.TrimSpace(string(out))
	if len(msg) > 600 {
		msg = msg[len(msg)-600:]
	}
	if errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "executable file not found") {
		return fmt.Errorf("%s not found: install the Debian package mtd-utils: %w", name, err)
	}
	if msg != "" {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
}
