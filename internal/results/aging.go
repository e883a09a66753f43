package results

// Aging is what aging the filesystem did in one repetition of an aged variant (--age), before
// its measured tests: the churn's own figures, timed apart from the tests, and the layout the
// churn left.
type Aging struct {
	Variant string `json:"variant"`
	Rep     int    `json:"rep"`
	Warmup  bool   `json:"warmup,omitempty"`
	Status  string `json:"status"` // OK or Failed
	Error   string `json:"error,omitempty"`
	Spec    string `json:"spec"`
	// Seconds is the wall time of the whole aging, fill and churn.
	Seconds float64 `json:"seconds"`
	// FillBytes were written to reach the fullness, ChurnBytes after it.
	FillBytes  uint64 `json:"fill_bytes"`
	ChurnBytes uint64 `json:"churn_bytes"`
	// Files and TreeBytes are the aged tree's regular files and their logical size at the end.
	Files     int    `json:"files"`
	TreeBytes uint64 `json:"tree_bytes"`
	// Fsyncs counts fsync, fdatasync and syncfs calls.
	Fsyncs  int `json:"fsyncs"`
	Renames int `json:"renames"`
	Deletes int `json:"deletes"`
	// EndedEarly says why the churn stopped before its amount (the filesystem was full).
	EndedEarly string `json:"ended_early,omitempty"`
	// Trimmed says what was removed after the churn so that statfs shows the tests the room
	// the fullness leaves them (a filesystem whose metadata took more than reckoned).
	Trimmed string `json:"trimmed,omitempty"`
	// Reclaims counts the times the churn had the filesystem give back the space it held for
	// deleted data (nilfs2: a cleaner pass with no protection period), when it was full.
	Reclaims int `json:"reclaims,omitempty"`
	// Fullness is the share of the filesystem's capacity in use after the aging (statfs, as df
	// shows it; metadata included, so above the spec's fullness of file blocks).
	Fullness float64 `json:"fullness"`
	// ListingSHA256 is the digest of the aged tree's listing (names, sizes, hashes): the same
	// for every repetition and run with the same seed.
	ListingSHA256 string       `json:"listing_sha256,omitempty"`
	Layout        *AgingLayout `json:"layout,omitempty"`
	// MountSeconds is a cold mount of the aged filesystem; FsckSeconds its offline check
	// (check only, no repair), with the checker's verdict in Fsck.
	MountSeconds float64 `json:"mount_s,omitempty"`
	FsckSeconds  float64 `json:"fsck_s,omitempty"`
	Fsck         string  `json:"fsck,omitempty"`
	// FreeExtents and FreeExtentAvgBytes are the free space's fragmentation after the aging, as
	// the filesystem's own tool reports it offline (e2freefrag, xfs_db freesp); absent for the
	// others.
	FreeExtents        uint64  `json:"free_extents,omitempty"`
	FreeExtentAvgBytes float64 `json:"free_extent_avg_bytes,omitempty"`
	// What the simulated card did during the aging (simcard target only): the bytes the host
	// wrote to it, the bytes it programmed into flash (their ratio: the aging's write
	// amplification) and its erase-block erases.
	CardHostBytes  uint64  `json:"card_host_bytes_written,omitempty"`
	CardFlashBytes uint64  `json:"card_flash_bytes_written,omitempty"`
	CardWA         float64 `json:"card_write_amplification,omitempty"`
	CardErases     uint64  `json:"card_erases,omitempty"`
}

// AgingLayout is how the aged tree lies on the device, read with the FIEMAP ioctl.
type AgingLayout struct {
	Files int `json:"files"`
	// Mapped are the files with at least one extent (empty and inline files have none).
	Mapped  int `json:"mapped_files"`
	Extents int `json:"extents"`
	// ExtentsPerFile is the mean over the mapped files; Fragmented the share of them in more
	// than one extent; MaxExtents the most any file had.
	ExtentsPerFile float64 `json:"extents_per_file"`
	Fragmented     float64 `json:"fragmented_share"`
	MaxExtents     int     `json:"max_extents"`
	// Score is Conway et al.'s layout score (FAST 2017) for a scan in directory order: the
	// share of consecutive 4 KiB blocks that lie next to each other on the device.
	Score float64 `json:"layout_score"`
}
