package bonnie

import "fmt"

// Params are the sizes of the bonnie tests, its [bonnie] table in the configuration and
// results.json's config.params.bonnie. The zero FileSize means bonnie++'s rule: twice the RAM,
// so that the page cache cannot hold the file. The Pandora study used Files 102400, Dirs 100
// and a 1 GiB file.
type Params struct {
	FileSize  uint64 `json:"file_size_bytes,omitempty"` // bytes of the block I/O file; 0 = 2 × RAM (capped to the device)
	ChunkSize uint64 `json:"chunk_bytes"`               // bytes per read or write (bonnie++ -s SIZE:CHUNK, default 8192)
	Seeks     int    `json:"seeks"`                     // random seeks in total (bonnie++ 1.97: 8192)
	Seekers   int    `json:"seekers"`                   // processes sharing them (bonnie++ 1.97: 3; 2.00: 5)
	Files     int    `json:"files"`                     // files of the create tests (bonnie++ -n 16: 16 × 1024)
	Dirs      int    `json:"dirs"`                      // directories they are spread over (bonnie++ default 1; Pandora 100)
	Seed      uint64 `json:"seed"`                      // random seed of the seeks and of the random-order tests
}

// Default are bonnie++'s defaults (1.97).
func Default() *Params {
	return &Params{ChunkSize: 8192, Seeks: 8192, Seekers: 3, Files: 16 * 1024, Dirs: 1, Seed: 1}
}

// Check refuses sizes bonnie++ could not run with.
func (p *Params) Check() error {
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
