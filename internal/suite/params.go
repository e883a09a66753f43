package suite

import (
	"fmt"
	"time"

	"github.com/fsbench/fsbench/internal/plan"
)

// The sizes of the bonnie, smallfiles, randio and powercut suites, whose tests this package
// still runs: each suite's package registers its own (internal/suites/NAME), which the
// configuration sets in the suite's table ([bonnie] files = 2048) and results.json records.

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
	FileSize  uint64        `json:"file_size_bytes"` // bytes of the test file (capped to 40 % of the free space)
	SeqBlock  uint64        `json:"seq_block_bytes"` // bytes per sequential write (512 KiB)
	RandBlock uint64        `json:"rand_block_bytes"`
	Runtime   plan.Duration `json:"runtime"` // how long each random test runs
	MaxOps    int           `json:"max_ops"` // stop a random test after this many requests even before Runtime
	Seed      uint64        `json:"seed"`
}

// Check refuses sizes bonnie++ could not run with.
func (p *BonnieParams) Check() error {
	switch {
	case p.ChunkSize == 0:
		return fmt.Errorf("chunk_bytes must be at least 1")
	case p.Files < 1 || p.Dirs < 1:
		return fmt.Errorf("files and dirs must be at least 1 (files %d, dirs %d)", p.Files, p.Dirs)
	case p.Dirs > p.Files:
		return fmt.Errorf("dirs (%d) must not be more than files (%d): each directory holds at least one file", p.Dirs, p.Files)
	case p.Seekers < 1:
		return fmt.Errorf("seekers must be at least 1")
	}
	return nil
}

// Check refuses sizes the smallfiles tests could not run with.
func (p *SmallfilesParams) Check() error {
	if p.Block == 0 || p.Blocks < 1 || p.Files < 1 || p.FileBytes == 0 {
		return fmt.Errorf("block_bytes, blocks, files and file_bytes must be at least 1")
	}
	return nil
}

// Check refuses sizes the randio tests could not run with.
func (p *RandioParams) Check() error {
	if p.FileSize == 0 || p.SeqBlock == 0 || p.RandBlock == 0 || p.Runtime.Duration <= 0 || p.MaxOps < 1 {
		return fmt.Errorf("file_size_bytes, seq_block_bytes, rand_block_bytes, runtime and max_ops must be more than 0")
	}
	return nil
}

// Check refuses a powercut run without cuts or work.
func (p *PowerCutParams) Check() error {
	if p.Cuts < 1 || p.Ops < 1 {
		return fmt.Errorf("cuts and ops must be at least 1 (cuts %d, ops %d)", p.Cuts, p.Ops)
	}
	return nil
}

// DefaultBonnie are bonnie++'s defaults (1.97).
func DefaultBonnie() *BonnieParams {
	return &BonnieParams{ChunkSize: 8192, Seeks: 8192, Seekers: 3, Files: 16 * 1024, Dirs: 1, Seed: 1}
}

// DefaultSmallfiles are the Dreamplug tests' sizes.
func DefaultSmallfiles() *SmallfilesParams {
	return &SmallfilesParams{Block: 16 << 10, Blocks: 10000, Files: 1000, FileBytes: 160 << 10}
}

// DefaultRandio are the SD application-class jobs' sizes (256 MiB file, 10 s per random job).
func DefaultRandio() *RandioParams {
	return &RandioParams{FileSize: 256 << 20, SeqBlock: 512 << 10, RandBlock: 4 << 10,
		Runtime: plan.Duration{Duration: 10 * time.Second}, MaxOps: 1 << 20, Seed: 1}
}

// DefaultPowerCut are the powercut test's sizes.
func DefaultPowerCut() *PowerCutParams { return &PowerCutParams{Cuts: 50, Ops: 300, Seed: 1} }

// paramsOf returns the run's sizes of suite, or its defaults when the run has none (a test's
// Env without them).
func paramsOf[T any](r *rep, suite string, def func() *T) *T {
	if p, ok := r.env.Params.Get(suite).(*T); ok {
		return p
	}
	return def()
}

func (r *rep) bonnieParams() *BonnieParams { return paramsOf(r, "bonnie", DefaultBonnie) }
func (r *rep) smallfilesParams() *SmallfilesParams {
	return paramsOf(r, "smallfiles", DefaultSmallfiles)
}
func (r *rep) randioParams() *RandioParams { return paramsOf(r, "randio", DefaultRandio) }
func (r *rep) powerCutParams() *PowerCutParams {
	return paramsOf(r, plan.PowerCutSuite, DefaultPowerCut)
}
