package catalog

// Suite names.
const (
	SuiteBootlin       = "bootlin"
	SuiteBonnie        = "bonnie"
	SuiteSmallFiles    = "smallfiles"
	SuiteRandIO        = "randio"
	SuiteFreeElectrons = "free-electrons"
	SuitePowerCut      = "powercut"
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

// Test names of the bonnie suite: bonnie++'s tests (Pandora SD-card study, 2012).
const (
	BonnieWrite      = "bonnie_write"
	BonnieRewrite    = "bonnie_rewrite"
	BonnieRead       = "bonnie_read"
	BonnieSeeks      = "bonnie_seeks"
	BonnieSeqCreate  = "bonnie_seq_create"
	BonnieSeqStat    = "bonnie_seq_stat"
	BonnieSeqDelete  = "bonnie_seq_delete"
	BonnieRandCreate = "bonnie_rand_create"
	BonnieRandStat   = "bonnie_rand_stat"
	BonnieRandDelete = "bonnie_rand_delete"
)

// Test names of the smallfiles suite: the two quick tests of the Dreamplug tuning (2012).
const (
	SmallLarge   = "smallfiles_large"
	SmallFsync   = "smallfiles_fsync"
	SmallDirsync = "smallfiles_dirsync"
)

// Test names of the randio suite: the jobs of the Raspberry Pi SD card test (pibenchmarks, fio).
const (
	RandSeqWrite = "randio_seq_write"
	RandWrite4K  = "randio_rand_write"
	RandRead4K   = "randio_rand_read"
)

// Test names of the powercut suite.
const (
	PowerCut = "powercut"
)

// Percent is the unit of the powercut headline: the share of cuts a filesystem came through
// whole.
const Percent = "%"

// suites lists every suite's own tests in the order they run: the only place that says which
// suite a test belongs to.
var suites = []Suite{
	{Name: SuiteBootlin, Title: `Bootlin's "Finding the Best Block Filesystem" (EOSS 2023), with the time and memory figures of Free Electrons' flash filesystem study (ELCE 2010)`,
		Tests: []string{Write, UsedSpace, Read, ReadRemoveWrite, Remove, VideoWrite, VideoRead}},
	{Name: SuiteBonnie, Title: "bonnie++'s tests (Pandora SD-card study)",
		Tests: []string{BonnieWrite, BonnieRewrite, BonnieRead, BonnieSeeks, BonnieSeqCreate, BonnieSeqStat, BonnieSeqDelete, BonnieRandCreate, BonnieRandStat, BonnieRandDelete}},
	{Name: SuiteSmallFiles, Title: "large file and small fsync'ed files (Dreamplug tuning)",
		Tests: []string{SmallLarge, SmallFsync, SmallDirsync}},
	{Name: SuiteRandIO, Title: "SD card application-class jobs (O_DIRECT, iodepth 1)",
		Tests: []string{RandSeqWrite, RandWrite4K, RandRead4K}},
	{Name: SuitePowerCut, Title: "power cuts on the simulated card: what each filesystem keeps of what it acknowledged",
		Tests: []string{PowerCut}},
	{Name: SuiteFreeElectrons, Title: "Free Electrons' flash filesystem study on raw NAND (ELCE 2010)", Flash: true,
		Tests: []string{InitTime, InitMem, MountTime, MountMem, UsedSpace, ReadTime, RemoveTime, WriteTime, VideoWriteTime}},
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

	// The bonnie suite: rates, as bonnie++ gives them.
	{Name: BonnieWrite, Unit: KiBps, Better: HigherIsBetter, Quantity: Rate, Title: "block write", BonnieField: "put_block",
		Doc: "bonnie++ block write: one file (2 × RAM, capped to the device) written in 8 KiB write(2) calls, syncfs inside the timed part; rate before the sync in extra.rate_before_sync"},
	{Name: BonnieRewrite, Unit: KiBps, Better: HigherIsBetter, Quantity: Rate, Title: "rewrite", BonnieField: "rewrite",
		Doc: "bonnie++ rewrite: read each chunk, change it, write it back in place; syncfs timed"},
	{Name: BonnieRead, Unit: KiBps, Better: HigherIsBetter, Quantity: Rate, Title: "block read", BonnieField: "get_block",
		Doc: "bonnie++ block read, cold: drop caches, then read the file in 8 KiB read(2) calls"},
	{Name: BonnieSeeks, Unit: SeeksPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "random seeks", BonnieField: "seeks",
		Doc: "bonnie++ random seeks, cold: 8192 seeks by 3 concurrent workers, each reading a chunk and rewriting 10 % of them; syncfs timed"},
	{Name: BonnieSeqCreate, Unit: FilesPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "sequential create", BonnieField: "seq_create",
		Doc: "bonnie++ sequential create: empty files in name order; syncfs timed (extra.rate_before_sync without it)"},
	{Name: BonnieSeqStat, Unit: FilesPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "sequential stat", BonnieField: "seq_stat",
		Doc: "bonnie++ sequential read: stat(2) each file in readdir order"},
	{Name: BonnieSeqDelete, Unit: FilesPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "sequential delete", BonnieField: "seq_del",
		Doc: "bonnie++ sequential delete: unlink each file in readdir order; syncfs timed"},
	{Name: BonnieRandCreate, Unit: FilesPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "random create", BonnieField: "ran_create",
		Doc: "bonnie++ random create: empty files in random order; syncfs timed"},
	{Name: BonnieRandStat, Unit: FilesPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "random stat", BonnieField: "ran_stat",
		Doc: "bonnie++ random read: stat(2) each file in random order"},
	{Name: BonnieRandDelete, Unit: FilesPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "random delete", BonnieField: "ran_del",
		Doc: "bonnie++ random delete: unlink each file in random order; syncfs timed"},

	// The smallfiles suite.
	{Name: SmallLarge, Unit: MBps, Better: HigherIsBetter, Quantity: Rate, Title: "large file write",
		Doc: "one large file written in 16 KiB blocks (as dd bs=16k count=10000), syncfs timed; incompressible data where dd wrote zeros"},
	{Name: SmallFsync, Unit: FilesPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "fsync'ed small files",
		Doc: "1000 files of 160 KiB, each fsync'ed before the next (the study ran sync after each); no process start-up timed"},
	{Name: SmallDirsync, Unit: FilesPerSec, Better: HigherIsBetter, Quantity: Rate, Title: "small files with directory fsync",
		Doc: "as smallfiles_fsync, with an fsync of the parent directory after each file, so that its name is durable too"},

	// The randio suite.
	{Name: RandSeqWrite, Unit: MBps, Better: HigherIsBetter, Quantity: Rate, Title: "512 KiB sequential write",
		Doc: "sequential write of one preallocated file in 512 KiB O_DIRECT writes, iodepth 1, fsync timed (fio rw=write bs=512k direct=1 end_fsync=1); A1/A2 need >= 10 MB/s"},
	{Name: RandWrite4K, Unit: IOPS, Better: HigherIsBetter, Quantity: Rate, Title: "4 KiB random write",
		Doc: "random 4 KiB O_DIRECT writes in that file, iodepth 1, for a fixed time (fio rw=randwrite bs=4k direct=1); A1 needs >= 500 IOPS, A2 >= 2000"},
	{Name: RandRead4K, Unit: IOPS, Better: HigherIsBetter, Quantity: Rate, Title: "4 KiB random read",
		Doc: "random 4 KiB O_DIRECT reads of that file, iodepth 1, for a fixed time (fio rw=randread bs=4k direct=1); A1 needs >= 1500 IOPS, A2 >= 4000"},

	// The powercut suite.
	{Name: PowerCut, Unit: Percent, Better: HigherIsBetter, Quantity: Amount, Title: "power-loss safety",
		Doc:    "a seeded workload of fsync'ed creates, appends, overwrites, atomic renames and deletes on the simulated card, its request stream recorded; then for each of --cuts power cuts (before and after flushes, and at random) the card after the cut by its profile's power-loss model: mount (recovery time), verify what was acknowledged, fsck, repair; headline: % of cuts the filesystem came through whole (mounted without repair, fsck clean, no acknowledged data lost)",
		Figure: &Figure{Key: "powerloss", Title: "power-loss safety (% of cuts survived whole)", Short: "pwr-safe", Label: "power-loss safety", Unit: Percent, Better: HigherIsBetter, Quantity: Amount, From: FromValue, Scale: 1}},

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

// AppClass is an SD Association application performance class (SD 5.1 / 6.0) as the randio
// suite checks it: the minimum headline figure of each randio test.
type AppClass struct {
	Name string
	// Min maps each randio test to the class's minimum, in the test's unit.
	Min map[string]float64
}

// AppClasses returns A1 and A2, lowest first; a card in A2 is in A1 too.
func AppClasses() []AppClass {
	return []AppClass{
		{Name: "A1", Min: map[string]float64{RandSeqWrite: 10, RandWrite4K: 500, RandRead4K: 1500}},
		{Name: "A2", Min: map[string]float64{RandSeqWrite: 10, RandWrite4K: 2000, RandRead4K: 4000}},
	}
}
