package suite

// The test names of the bonnie, smallfiles, randio and powercut suites, whose tests this
// package still runs; their catalog entries are their packages' (internal/suites/NAME).

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
