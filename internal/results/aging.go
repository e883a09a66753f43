package results

import "github.com/fsbench/fsbench/internal/aging"

// Aging is what aging the filesystem did in one repetition of an aged variant (--age), before
// its measured tests: the churn's own figures, timed apart from the tests, and the layout the
// churn left.
type Aging struct {
	Variant string `json:"variant"`
	Rep     int    `json:"rep"`
	Warmup  bool   `json:"warmup,omitempty"`
	Status  string `json:"status"` // OK or Failed
	Error   string `json:"error,omitempty"`
	aging.Result
	// Fullness is the share of the filesystem's capacity in use after the aging (statfs, as df
	// shows it; metadata included, so above the spec's fullness of file blocks).
	Fullness float64 `json:"fullness"`
	// ListingSHA256 is the digest of the aged tree's listing (names, sizes, hashes): the same
	// for every repetition and run with the same seed.
	ListingSHA256 string        `json:"listing_sha256,omitempty"`
	Layout        *aging.Layout `json:"layout,omitempty"`
	// MountSeconds is a cold mount of the aged filesystem; FsckSeconds its offline check
	// (check only, no repair), with the checker's verdict in Fsck.
	MountSeconds float64 `json:"mount_s,omitempty"`
	FsckSeconds  float64 `json:"fsck_s,omitempty"`
	Fsck         string  `json:"fsck,omitempty"`
	// What the simulated card did during the aging (simcard target only): the bytes the host
	// wrote to it, the bytes it programmed into flash (their ratio: the aging's write
	// amplification) and its erase-block erases.
	CardHostBytes  uint64  `json:"card_host_bytes_written,omitempty"`
	CardFlashBytes uint64  `json:"card_flash_bytes_written,omitempty"`
	CardWA         float64 `json:"card_write_amplification,omitempty"`
	CardErases     uint64  `json:"card_erases,omitempty"`
}
