// Package advise turns a probe result (internal/probe) into settings for a flash device:
// partition alignment, mkfs options per filesystem, mount options and the I/O scheduler.
// Every item names the measurement it comes from, and the commands can be pasted.
//
// The geometry rules follow the published practice the project's methods.md lists: align
// partitions and filesystem structures to the allocation unit (AU, what flashbench -a finds)
// so that the card's FTL sees whole AUs written in order (Bergmann, "Optimizing Linux with
// cheap flash drives", LWN 2011), and give ext4 the page and AU as a RAID stride and stripe
// (the Dreamplug tuning, seeds/002).
package advise

import (
	"fmt"
	"io"
	"strings"

	"github.com/fsbench/fsbench/internal/bytesize"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/probe"
)

// Filesystem block size the advice assumes: 4 KiB, the page size of every common CPU, which
// ext4, f2fs, nilfs2 and btrfs use by default.
const fsBlock = 4096

// f2fsSegment is F2FS's fixed segment size (2 MiB: 512 blocks of 4 KiB).
const f2fsSegment = 2 << 20

// fallbackAU is used when the probe found no AU: 4 MiB, the commonest AU among the cards in
// flashbench's survey; every smaller power of two divides it, so aligning to it is safe for
// those too.
const fallbackAU = 4 << 20

// Geometry is what the advice is computed from, with where each figure came from.
type Geometry struct {
	AU, Page         uint64
	AUFrom, PageFrom string // the measurement (or the fallback) behind each figure
	Size             uint64 // device size in bytes
	Device           string // /dev path, for the commands
	Rotational       string // queue/rotational as the kernel reports it
	Scheduler        string // queue/scheduler, e.g. "[none] mq-deadline"
	DiscardMax       string // queue/discard_max_bytes ("0": no discard)
	DiscardWorks     string // from the probe's write tests
	USB              bool
	FATArea          uint64
	OpenAUs          uint64
	// Cautions say which figures the advice rests on without being sure of them (a
	// low-confidence or lower-bound estimate, or an assumed value): every command built
	// from them must be read with that in mind.
	Cautions []string
}

// FromProbe extracts the geometry from a probe result. The page size comes from the write
// sweep when it ran (it measures what a write costs, which is what mkfs options are about),
// else from the alignment test.
func FromProbe(r *probe.Result) Geometry {
	g := Geometry{Size: r.SizeBytes, Device: r.Device, USB: r.USB.Through, DiscardWorks: r.DiscardWorks,
		FATArea: r.Estimates.FATArea.Value, OpenAUs: r.Estimates.OpenAUs.Value}
	if id := r.Identity; id != nil {
		g.Device = id.Path
		g.Rotational = id.Queue["rotational"]
		g.Scheduler = id.Queue["scheduler"]
		g.DiscardMax = id.Queue["discard_max_bytes"]
	}
	if e := r.Estimates.AU; e.Value > 0 && e.Confidence != probe.None {
		g.AU, g.AUFrom = e.Value, fmt.Sprintf("alignment test: AU %s, %s confidence", bytesize.Format(e.Value), e.Confidence)
		if e.AtLeast {
			g.AUFrom = fmt.Sprintf("alignment test: AU at least %s, %s confidence", bytesize.Format(e.Value), e.Confidence)
		}
		if e.Confidence == probe.Low || e.AtLeast {
			g.Cautions = append(g.Cautions, fmt.Sprintf("the AU of %s is a low-confidence estimate (%s): the partition start, stripe-width, f2fs sections and nilfs2 segments below rest on it. "+
				"Probe again on a quiet machine, or check with flashbench -a, before partitioning a card you keep", bytesize.Format(e.Value), e.Evidence))
		}
	} else {
		g.AU, g.AUFrom = fallbackAU, "no AU found by the alignment test: assumed 4 MiB (the commonest; safe for smaller AUs)"
		g.Cautions = append(g.Cautions, "no AU was measured: the advice assumes 4 MiB, the commonest AU")
	}
	switch {
	case r.Estimates.Page.Value > 0 && r.Estimates.Page.Confidence != probe.None:
		g.Page, g.PageFrom = r.Estimates.Page.Value, fmt.Sprintf("write sweep: page %s, %s confidence", bytesize.Format(r.Estimates.Page.Value), r.Estimates.Page.Confidence)
	case r.Estimates.ReadPage.Value > 0 && r.Estimates.ReadPage.Confidence != probe.None:
		g.Page, g.PageFrom = r.Estimates.ReadPage.Value, fmt.Sprintf("alignment test: page %s, %s confidence", bytesize.Format(r.Estimates.ReadPage.Value), r.Estimates.ReadPage.Confidence)
	default:
		g.Page, g.PageFrom = fsBlock, "no page size found: assumed 4 KiB (one filesystem block)"
	}
	if strings.Contains(g.PageFrom, probe.Low+" confidence") {
		g.Cautions = append(g.Cautions, fmt.Sprintf("the page of %s is a low-confidence estimate: ext4's stride rests on it", bytesize.Format(g.Page)))
	}
	return g
}

// Ext4Stripe returns ext4's RAID hints for the geometry: stride = page / block (at least 1),
// stripe-width = AU / block.
//
// mke2fs(8) defines both in filesystem blocks: stride is the chunk written to one disk, and
// stripe_width "the number of blocks in a RAID stripe", typically stride × data disks. Here
// the "chunk" is a flash page and the "stripe" an AU, so stripe-width = AU / block. The
// Dreamplug tuning (seeds/002, methods.md §4) computed stripe-width = erase block /
// (stride × block) = 8 MiB / 8 KiB = 1024 for its card; that counts strides, not blocks,
// and is half the AU whenever stride = 2. fsbench uses mke2fs's unit.
func Ext4Stripe(page, au uint64) (stride, stripeWidth uint64) {
	stride = max(1, page/fsBlock)
	stripeWidth = max(stride, au/fsBlock)
	return stride, stripeWidth
}

// F2FSSections returns mkfs.f2fs -s (segments per section): a section, the unit F2FS's
// cleaner frees, should be one AU so that cleaning empties whole AUs. F2FS segments are
// 2 MiB, so AUs under 2 MiB get one segment per section (a segment then spans whole AUs).
func F2FSSections(au uint64) uint64 { return max(1, au/f2fsSegment) }

// NILFSBlocksPerSegment returns mkfs.nilfs2 -B: a log segment of one AU (at least 2048
// blocks, nilfs2's default of 8 MiB, when the AU is smaller: a segment of several whole AUs
// is still aligned, and short segments raise nilfs2's per-segment overhead).
func NILFSBlocksPerSegment(au uint64) uint64 { return max(2048, au/fsBlock) }

// Item is one piece of advice.
type Item struct {
	Topic    string   `json:"topic"`
	Advice   string   `json:"advice"`
	Commands []string `json:"commands,omitempty"`
	From     string   `json:"from"` // the measurement behind it
}

// Advise computes the advice for a geometry.
func Advise(g Geometry) []Item {
	dev := g.Device
	if dev == "" {
		dev = "/dev/DEVICE"
	}
	sectors := func(b uint64) uint64 { return b / 512 }
	// At least 1 MiB (room for a bootloader, and fdisk's default), beyond the FAT area when
	// there is one (see that item), rounded up to an AU boundary.
	start := g.AU
	for start < 1<<20 || start < g.FATArea {
		start += g.AU
	}
	size := (g.Size - start) / g.AU * g.AU
	var items []Item
	items = append(items, Item{
		Topic: "partition",
		Advice: fmt.Sprintf("start the partition on an AU boundary (%s = sector %d) and make its size a multiple of the AU (%s = %d sectors), so that every AU the filesystem writes is a whole AU of the card",
			bytesize.Format(start), sectors(start), bytesize.Format(g.AU), sectors(g.AU)),
		Commands: []string{fmt.Sprintf("echo 'start=%d, size=%d, type=83' | sfdisk %s", sectors(start), sectors(size), dev)},
		From:     g.AUFrom,
	})
	if g.FATArea > 0 {
		items = append(items, Item{
			Topic: "partition",
			Advice: fmt.Sprintf("the first %s take small random writes much faster (the card's FAT area, made for the FAT of its factory vfat format): a small vfat boot partition placed there benefits from it; the Linux filesystem does best on whole AUs beyond it, hence the start above",
				bytesize.Format(g.FATArea)),
			From: "FAT-area test",
		})
	}
	// The kernel names partitions NAMEp1 when the disk's name ends in a digit (mmcblk0p1,
	// loop0p1, nvme0n1p1), NAME1 otherwise (sda1).
	part := dev + "1"
	if c := dev[len(dev)-1]; c >= '0' && c <= '9' {
		part = dev + "p1"
	}
	stride, sw := Ext4Stripe(g.Page, g.AU)
	items = append(items, Item{
		Topic: "ext4",
		Advice: fmt.Sprintf("4 KiB blocks; stride = page / block = %s / 4 KiB = %d; stripe-width = AU / block = %s / 4 KiB = %d (mke2fs counts both in blocks; the Dreamplug tuning divided by the stride too, which halves it)",
			bytesize.Format(g.Page), stride, bytesize.Format(g.AU), sw),
		Commands: []string{fmt.Sprintf("mkfs.ext4 -b 4096 -E stride=%d,stripe-width=%d %s", stride, sw, part)},
		From:     g.PageFrom + "; " + g.AUFrom,
	})
	items = append(items, Item{
		Topic: "ext4 without journal",
		Advice: "-O ^has_journal: every metadata change is written once instead of twice (journal, then home), fewer small writes scattered over AUs, less wear: the Dreamplug and Pandora studies measured it faster on cards. " +
			"The price: after a power cut or a card pulled while mounted, nothing replays; fsck must repair and recent changes can be lost. Use it for read-mostly or replaceable data, keep the journal where a power cut is likely",
		Commands: []string{fmt.Sprintf("mkfs.ext4 -O ^has_journal -b 4096 -E stride=%d,stripe-width=%d %s", stride, sw, part)},
		From:     g.PageFrom + "; " + g.AUFrom,
	})
	secs := F2FSSections(g.AU)
	items = append(items, Item{
		Topic: "f2fs",
		Advice: fmt.Sprintf("segments are 2 MiB; -s %d segments per section makes a section %s (one AU, or whole AUs), the unit the cleaner empties; -z 1 section per zone",
			secs, bytesize.Format(secs*f2fsSegment)),
		Commands: []string{fmt.Sprintf("mkfs.f2fs -s %d -z 1 %s", secs, part)},
		From:     g.AUFrom,
	})
	bps := NILFSBlocksPerSegment(g.AU)
	items = append(items, Item{
		Topic:    "nilfs2",
		Advice:   fmt.Sprintf("-B %d blocks per segment: a log segment of %s, whole AUs written in order", bps, bytesize.Format(bps*fsBlock)),
		Commands: []string{fmt.Sprintf("mkfs.nilfs2 -b 4096 -B %d %s", bps, part)},
		From:     g.AUFrom,
	})
	btrfsAdv := "-m single: one copy of the metadata; the default DUP on a single device writes it twice to the same flash, where the FTL may put both copies in one erase block, doubling metadata writes for little safety"
	btrfsMount := "noatime"
	if g.Rotational == "1" {
		btrfsAdv += "; the kernel says this device is rotational, so btrfs will not enable its ssd allocation by itself: mount with -o ssd"
		btrfsMount = "noatime,ssd"
	}
	items = append(items, Item{
		Topic: "btrfs", Advice: btrfsAdv,
		Commands: []string{fmt.Sprintf("mkfs.btrfs -m single %s", part), fmt.Sprintf("mount -o %s %s /mnt", btrfsMount, part)},
		From:     "device type (queue/rotational=" + orDash(g.Rotational) + ")",
	})
	items = append(items, Item{
		Topic: "mount options",
		Advice: "noatime: no inode write for reads (relatime still writes one per file per day, and when atime < mtime; only mutt-like tools need atime). " +
			"No dirsync unless the card is pulled while mounted: it makes every create/rename/delete a synchronous write of a few KiB, each costing the card a page program and often an AU merge",
		Commands: []string{fmt.Sprintf("mount -o noatime %s /mnt", part), fmt.Sprintf("# /etc/fstab: %s  /mnt  ext4  defaults,noatime  0  2", part)},
		From:     "fsbench's mount-option variants (relatime, noatime, noatime,dirsync); the card's write cost (write sweep, open-AU test)",
	})
	items = append(items, discardItem(g, part))
	items = append(items, schedulerItem(g))
	if g.USB || g.Rotational == "1" {
		name := strings.TrimPrefix(dev, "/dev/")
		items = append(items, Item{
			Topic:    "rotational flag",
			Advice:   "the kernel reports this flash device as rotational (USB mass storage always does): schedulers, btrfs and readahead then treat it as a disk; set it to 0",
			Commands: []string{fmt.Sprintf("echo 0 > /sys/block/%s/queue/rotational", name), fmt.Sprintf(`# /etc/udev/rules.d/60-flash.rules: ACTION=="add|change", KERNEL=="%s", ATTR{queue/rotational}="0"`, name)},
			From:     "identity: queue/rotational=" + orDash(g.Rotational) + ", USB path " + yesNo(g.USB),
		})
	}
	return items
}

func discardItem(g Geometry, part string) Item {
	it := Item{Topic: "discard", From: "identity: queue/discard_max_bytes=" + orDash(g.DiscardMax)}
	if g.DiscardWorks != "" {
		it.From += "; write tests: BLKDISCARD " + g.DiscardWorks
	}
	if g.DiscardMax == "0" || strings.HasPrefix(g.DiscardWorks, "no") {
		it.Advice = "the device does not take discards (common behind USB readers): neither -o discard nor fstrim will do anything; leave free space unwritten (a partition smaller than the card) to help the FTL"
		return it
	}
	it.Advice = "periodic fstrim rather than -o discard: online discard sends a discard with every delete, and card controllers execute them synchronously and slowly, stalling writes; a weekly fstrim tells the card the same in one batch when nobody waits"
	it.Commands = []string{"systemctl enable --now fstrim.timer", "fstrim -v /mnt"}
	return it
}

func schedulerItem(g Geometry) Item {
	name := strings.TrimPrefix(g.Device, "/dev/")
	if name == "" {
		name = "DEVICE"
	}
	return Item{
		Topic: "I/O scheduler",
		Advice: "none: the card has no seek time to optimise and its FTL reorders internally; mq-deadline instead when interactive reads stall behind long write bursts (slow cards at a few MB/s), since it gives reads a deadline. " +
			"Currently: " + orDash(g.Scheduler),
		Commands: []string{fmt.Sprintf("echo none > /sys/block/%s/queue/scheduler", name),
			fmt.Sprintf(`# /etc/udev/rules.d/60-flash.rules: ACTION=="add|change", KERNEL=="%s", ATTR{queue/scheduler}="none"`, name)},
		From: "identity: queue/scheduler, queue/rotational=" + orDash(g.Rotational),
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Write prints the advice: the geometry it rests on, then each item with its commands.
func Write(w io.Writer, g Geometry, items []Item) error {
	var b strings.Builder
	fmt.Fprintf(&b, "geometry: AU %s (%s)\n          page %s (%s)\n\n", bytesize.Format(g.AU), g.AUFrom, bytesize.Format(g.Page), g.PageFrom)
	for _, c := range g.Cautions {
		fmt.Fprintf(&b, "caution: %s\n\n", c)
	}
	for _, it := range items {
		fmt.Fprintf(&b, "%s: %s\n", it.Topic, it.Advice)
		fmt.Fprintf(&b, "  from: %s\n", it.From)
		for _, c := range it.Commands {
			fmt.Fprintf(&b, "    %s\n", c)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TunedFromFile returns the tuned variants for the probe result at path (a probe.json or the
// directory holding it) and the cautions they rest on: what run --tuned adds.
func TunedFromFile(path string) ([]plan.Variant, []string, error) {
	pr, err := probe.Load(path)
	if err != nil {
		return nil, nil, err
	}
	g := FromProbe(pr)
	return TunedVariants(g), g.Cautions, nil
}

// TunedVariants returns the variants fsbench run should add to compare the advice against the
// defaults: ext4 with stride/stripe-width (with and without journal), f2fs with AU sections,
// nilfs2 with AU segments and btrfs with single metadata, all mounted noatime.
func TunedVariants(g Geometry) []plan.Variant {
	stride, sw := Ext4Stripe(g.Page, g.AU)
	e := fmt.Sprintf("stride=%d,stripe-width=%d", stride, sw)
	btrfsMount := "noatime"
	if g.Rotational == "1" {
		btrfsMount = "noatime,ssd"
	}
	return []plan.Variant{
		{Name: "ext4-tuned", FS: "ext4", MkfsArgs: []string{"-b", "4096", "-E", e}, MountOptions: "noatime"},
		{Name: "ext4-tuned-nojournal", FS: "ext4", MkfsArgs: []string{"-O", "^has_journal", "-b", "4096", "-E", e}, MountOptions: "noatime"},
		{Name: "f2fs-tuned", FS: "f2fs", MkfsArgs: []string{"-s", fmt.Sprint(F2FSSections(g.AU)), "-z", "1"}, MountOptions: "noatime"},
		{Name: "nilfs2-tuned", FS: "nilfs2", MkfsArgs: []string{"-b", "4096", "-B", fmt.Sprint(NILFSBlocksPerSegment(g.AU))}, MountOptions: "noatime"},
		{Name: "btrfs-tuned", FS: "btrfs", MkfsArgs: []string{"-m", "single"}, MountOptions: btrfsMount},
	}
}
