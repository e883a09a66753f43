package catalog

// The names of the suites whose tests the engine and the report build on: bootlin's make the
// observation matrix, free-electrons' the raw-flash tables.
const (
	SuiteBootlin       = "bootlin"
	SuiteFreeElectrons = "free-electrons"
)

// Test names of the block setup and the bootlin suite, in the order they run.
const (
	Mkfs            = "mkfs"
	ModuleLoad      = "module_load"
	Mount           = "mount"
	MountMem        = "mount_mem"
	Write           = "write"
	UsedSpace       = "used_space"
	Read            = "read"
	ReadRemoveWrite = "read_remove_write"
	Remove          = "remove"
	VideoWrite      = "video_write"
	VideoRead       = "video_read"
)

// Test names of the free-electrons suite, in the order they run; mount_mem and used_space
// are shared with the bootlin suite.
const (
	InitTime       = "init_time"
	InitMem        = "init_mem"
	MountTime      = "mount_time"
	ReadTime       = "read_time"
	RemoveTime     = "remove_time"
	WriteTime      = "write_time"
	VideoWriteTime = "video_write_time"
)

// Percent is the unit of the powercut headline: the share of cuts a filesystem came through
// whole.
const Percent = "%"

// WriteTests are the bootlin tests that write data through the filesystem, in the order they
// run: a day of the wear line's "these write tests once a day", and the denominator of every
// amplification figure.
var WriteTests = []string{Write, ReadRemoveWrite, VideoWrite}

// Day is the name of a timed span that is a whole day of a device's writes (the endurance
// suite's logging and update workloads): like the write tests, its block requests' lifetime is
// the wear line's (day_lifetime_years). It is measured, never recorded as a test of its own.
const Day = "day_of_writes"

// Bootlin lists the tests of the bootlin suite, in the order they run (after Setup).
func Bootlin() []string {
	return []string{Write, UsedSpace, Read, ReadRemoveWrite, Remove, VideoWrite, VideoRead}
}

// FreeElectrons lists the tests of the free-electrons suite, in the order they run.
func FreeElectrons() []string {
	return []string{InitTime, InitMem, MountTime, MountMem, UsedSpace, ReadTime, RemoveTime, WriteTime, VideoWriteTime}
}

// throughputFigure is how the report shows a test that moves data: MB/s through the filesystem.
func throughputFigure(key, title, short, label string) *Figure {
	return &Figure{Key: key, Title: title, Short: short, Label: label, Unit: MBps, Better: HigherIsBetter, Quantity: Rate, From: FromThroughput}
}

// tests holds every test once.
var tests = []Test{
	// The block setup.
	{Name: Mkfs, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "mkfs",
		Doc:    "mkfs time; for read-only filesystems the image build time (image size in extra.image_bytes, time to write it to the device in extra.image_write_s)",
		Figure: &Figure{Key: Mkfs, Title: "mkfs (image build for read-only filesystems)", Short: "mkfs", Unit: Seconds, Better: LowerIsBetter, Quantity: Time, From: FromValue, Scale: 1}},
	{Name: ModuleLoad, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "module load",
		Doc:    "modprobe time when the filesystem is a module not yet loaded; otherwise n/a with the reason (built-in or already loaded)",
		Figure: &Figure{Key: ModuleLoad, Title: "module load", Short: "modload", Unit: "ms", Better: LowerIsBetter, Quantity: Time, From: FromValue, Scale: 1e3}},
	{Name: Mount, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "mount",
		Doc:    "mount(2) time, cold: sync and drop_caches first",
		Figure: &Figure{Key: Mount, Title: "mount time", Short: "mount", Label: "mount time", Unit: "ms", Better: LowerIsBetter, Quantity: Time, From: FromValue, Scale: 1e3}},
	{Name: MountMem, Unit: Bytes, Better: LowerIsBetter, Quantity: Amount, Title: "mount memory",
		Doc:    "kernel memory taken by the mount (see methods.mount_mem)",
		Figure: &Figure{Key: MountMem, Title: "kernel memory taken by the mount", Short: "mnt-mem", Unit: "KiB", Better: LowerIsBetter, Quantity: Amount, From: FromValue, Scale: 1.0 / 1024}},

	// The bootlin suite.
	{Name: Write, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "write",
		Doc:    "copy the rootfs dataset N times from RAM (tmpfs) into the filesystem, syncfs inside the timed part",
		Figure: throughputFigure(Write, "write (rootfs tree)", "write", "write")},
	{Name: UsedSpace, Unit: Bytes, Better: LowerIsBetter, Quantity: Amount, Title: "used space",
		Doc:      "used bytes as df shows (statfs) after storing the dataset; logical_bytes beside it",
		SuiteDoc: map[string]string{SuiteFreeElectrons: "used bytes as df shows (statfs) with the dataset stored; logical_bytes beside it"},
		// Space as a share of the data stored: read-write variants hold several copies of the
		// dataset and images one, so bytes alone would not compare.
		Figure: &Figure{Key: "space", Title: "space used (% of the data stored)", Short: "space", Label: "space", Unit: "% data", Better: LowerIsBetter, Quantity: Amount, From: FromExtra, Extra: "used_per_logical", Scale: 100}},
	{Name: Read, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "read",
		Doc:    "unmount, drop caches, mount, then read every byte of every file and syncfs (atime updates reach the device)",
		Figure: throughputFigure(Read, "read (rootfs tree)", "read", "read")},
	{Name: ReadRemoveWrite, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "read-remove-write",
		Doc:    "N times: remove the oldest copy, copy the oldest remaining one to a new one; syncfs",
		Figure: throughputFigure(ReadRemoveWrite, "read-write-delete", "rd-rm-wr", "read-write-delete")},
	{Name: Remove, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "remove",
		Doc:    "remove everything, syncfs",
		Figure: &Figure{Key: Remove, Title: "delete everything", Short: "delete", Label: "delete", Unit: Seconds, Better: LowerIsBetter, Quantity: Time, From: FromValue, Scale: 1}},
	{Name: VideoWrite, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "video write",
		Doc:    "copy an incompressible file N times, syncfs",
		Figure: throughputFigure(VideoWrite, "sequential write (video files)", "seq-wr", "seq write")},
	{Name: VideoRead, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "video read",
		Doc:    "unmount, drop caches, mount, read the video copies, syncfs",
		Figure: throughputFigure(VideoRead, "sequential read (video files)", "seq-rd", "seq read")},

	// The free-electrons suite (raw flash); mount_mem and used_space are above.
	{Name: InitTime, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "init time",
		Doc: "load the filesystem's driver and initialise it: modprobe jffs2; modprobe ubi, ubiattach, modprobe ubifs; for squashfs also ubiblock"},
	{Name: InitMem, Unit: Bytes, Better: LowerIsBetter, Quantity: Amount, Title: "init memory",
		Doc: "kernel memory taken by init_time (see methods.mount_mem)"},
	{Name: MountTime, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "mount time",
		Doc: "mount(2) of the prepared filesystem (holding the dataset), caches dropped first"},
	{Name: ReadTime, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "read time",
		Doc: "drop caches, read every byte of every file"},
	{Name: RemoveTime, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "remove time",
		Doc: "remove every file, syncfs"},
	{Name: WriteTime, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "write time",
		Doc: "copy the (compressible) dataset from RAM into the emptied filesystem, syncfs"},
	{Name: VideoWriteTime, Unit: Seconds, Better: LowerIsBetter, Quantity: Time, Title: "video write time",
		Doc: "remove that copy (not timed), then write the incompressible video file, syncfs"},
}
