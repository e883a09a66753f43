package plan

import "time"

// SuiteParams are the sizes of the bonnie, smallfiles and randio tests. They are part of the
// configuration (TOML tables [bonnie], [smallfiles], [randio]) and recorded with it in
// results.json, so that a run is described entirely by its file.
type SuiteParams struct {
	Bonnie     BonnieParams     `json:"bonnie"`
	Smallfiles SmallfilesParams `json:"smallfiles"`
	Randio     RandioParams     `json:"randio"`
	PowerCut   PowerCutParams   `json:"powercut,omitzero"`
}

// PowerCutParams are the sizes of the powercut test.
type PowerCutParams struct {
	Cuts int    `json:"cuts"` // power cuts per variant and repetition (--cuts; default 50)
	Ops  int    `json:"ops"`  // operations of the workload (default 300)
	Seed uint64 `json:"seed"` // seeds the workload, the cut points and what each cut loses
	// MergeLoss adds the merge-loss fault to a card profile that does not have it (--fault
	// merge-loss): a cut during an AU merge damages that AU.
	MergeLoss bool `json:"merge_loss,omitempty"`
}

// BonnieParams are the sizes of the bonnie tests. The zero FileSize means bonnie++'s rule:
// twice the RAM, so that the page cache cannot hold the file. The Pandora study used Files
// 102400, Dirs 100 and a 1 GiB file.
type BonnieParams struct {
	FileSize  uint64 `json:"file_size_bytes,omitempty"` // bytes of the block I/O file; 0 = 2 × RAM (capped to the device)
	ChunkSize uint64 `json:"chunk_bytes"`               // bytes per read or write (bonnie++ -s SIZE:CHUNK, default 8192)
	Seeks     int    `json:"seeks"`                     // random seeks in total (bonnie++ 1.97: 8192)
	Seekers   int    `json:"seekers"`                   // processes sharing them (bonnie++ 1.97: 3; 2.00: 5)
	Files     int    `json:"files"`                     // files of the create tests (bonnie++ -n 16: 16 × 1024)
	Dirs      int    `json:"dirs"`                      // directories they are spread over (bonnie++ default 1; Pandora 100)
	Seed      uint64 `json:"seed"`                      // random seed of the seeks and of the random-order tests
}

// SmallfilesParams are the sizes of the smallfiles tests (the Dreamplug write-up's). The counts
// are scaled down when they do not fit in 40 % of the free space.
type SmallfilesParams struct {
	Block     uint64 `json:"block_bytes"` // bytes per write of the large file (dd bs=16k)
	Blocks    int    `json:"blocks"`      // writes of the large file (dd count=10000)
	Files     int    `json:"files"`       // small files (1000)
	FileBytes uint64 `json:"file_bytes"`  // bytes per small file (160 KiB)
}

// RandioParams are the sizes of the randio tests.
type RandioParams struct {
	FileSize  uint64   `json:"file_size_bytes"` // bytes of the test file (capped to 40 % of the free space)
	SeqBlock  uint64   `json:"seq_block_bytes"` // bytes per sequential write (512 KiB)
	RandBlock uint64   `json:"rand_block_bytes"`
	Runtime   Duration `json:"runtime"` // how long each random test runs
	MaxOps    int      `json:"max_ops"` // stop a random test after this many requests even before Runtime
	Seed      uint64   `json:"seed"`
	// Depth is the random tests' queue depth (0 or 1: one request at a time, pread/pwrite;
	// more: that many in flight, as fio's libaio iodepth; internal/iodepth).
	Depth int `json:"iodepth,omitempty"`
}

// DefaultSuiteParams are bonnie++'s defaults (1.97), the Dreamplug tests' sizes and the SD
// application-class jobs' (256 MiB file, 10 s per random job).
func DefaultSuiteParams() SuiteParams {
	return SuiteParams{
		Bonnie:     BonnieParams{ChunkSize: 8192, Seeks: 8192, Seekers: 3, Files: 16 * 1024, Dirs: 1, Seed: 1},
		Smallfiles: SmallfilesParams{Block: 16 << 10, Blocks: 10000, Files: 1000, FileBytes: 160 << 10},
		Randio: RandioParams{FileSize: 256 << 20, SeqBlock: 512 << 10, RandBlock: 4 << 10,
			Runtime: Duration{10 * time.Second}, MaxOps: 1 << 20, Seed: 1},
		PowerCut: PowerCutParams{Cuts: 50, Ops: 300, Seed: 1},
	}
}
