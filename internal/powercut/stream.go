package powercut

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/fsbench/fsbench/internal/flash"
)

// File names of a recorded write stream, in the directory the recorder was given: the
// requests in order (fixed-size entries) and the data of the writes.
const (
	IndexFile = "stream.idx"
	DataFile  = "stream.data"
	BaseFile  = "base.img" // the card's content when recording started (the simcard server copies it)
)

// Record is one request the card received, in the order it received it. Reads are not
// recorded: they change nothing a power cut could lose.
type Record struct {
	Op       flash.Op
	Off, Len uint64
	// FUA: a write the card made durable before completing it (forced unit access). A loop
	// device never sends one (the kernel turns FUA into a write and a flush), a card that
	// receives FUA does.
	FUA bool
	// Data is where a write's data starts in the data file.
	Data uint64
	// Merge is the allocation unit the card merged (copied) because of this request (Len 0:
	// none), from the flash model: a cut during the request catches the merge in progress.
	Merge flash.Span
}

// recordSize is the size of an index entry: op and FUA (8 bytes, padded), off, len, data, merge.
const recordSize = 48

func (r Record) encode(b []byte) {
	clear(b[:8])
	b[0] = byte(r.Op)
	if r.FUA {
		b[1] = 1
	}
	binary.LittleEndian.PutUint64(b[8:], r.Off)
	binary.LittleEndian.PutUint64(b[16:], r.Len)
	binary.LittleEndian.PutUint64(b[24:], r.Data)
	binary.LittleEndian.PutUint64(b[32:], r.Merge.Off)
	binary.LittleEndian.PutUint64(b[40:], r.Merge.Len)
}

func decodeRecord(b []byte) Record {
	return Record{Op: flash.Op(b[0]), FUA: b[1] == 1, Off: binary.LittleEndian.Uint64(b[8:]), Len: binary.LittleEndian.Uint64(b[16:]),
		Data:  binary.LittleEndian.Uint64(b[24:]),
		Merge: flash.Span{Off: binary.LittleEndian.Uint64(b[32:]), Len: binary.LittleEndian.Uint64(b[40:])}}
}

// Recorder appends the requests a card receives to a stream on disk, outside the device
// under test. The data file is bounded: past Limit bytes the recorder stops recording (Full)
// instead of filling the disk, and the cuts are planned over what it holds. It goes on counting
// the requests, so that an acknowledgement given after the stream ended has a position past
// it, which no cut reaches: the stream cannot promise what it did not record.
type Recorder struct {
	idx, data *os.File
	n         uint64 // requests received: the card's request position
	recorded  uint64 // records written: n until the stream was full
	dataLen   uint64
	limit     uint64
	full      bool
	buf       [recordSize]byte
}

// NewRecorder creates (truncating) the stream files in dir; limit bounds the data file
// (0: 1 GiB).
func NewRecorder(dir string, limit uint64) (*Recorder, error) {
	if limit == 0 {
		limit = 1 << 30
	}
	idx, err := os.OpenFile(filepath.Join(dir, IndexFile), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write stream index: %w", err)
	}
	data, err := os.OpenFile(filepath.Join(dir, DataFile), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		idx.Close()
		return nil, fmt.Errorf("write stream data: %w", err)
	}
	return &Recorder{idx: idx, data: data, limit: limit}, nil
}

// Add appends one request; data is a write's content. Reads are ignored. Once the data
// limit is reached nothing more is recorded (but still counted) and Full reports it.
func (w *Recorder) Add(r Record, data []byte) error {
	if r.Op == flash.OpRead {
		return nil
	}
	w.n++
	if w.full {
		return nil
	}
	if r.Op == flash.OpWrite {
		if w.dataLen+r.Len > w.limit {
			w.full = true
			return nil
		}
		if _, err := w.data.WriteAt(data[:r.Len], int64(w.dataLen)); err != nil {
			return fmt.Errorf("record write data: %w", err)
		}
		r.Data = w.dataLen
		w.dataLen += r.Len
	}
	r.encode(w.buf[:])
	if _, err := w.idx.WriteAt(w.buf[:], int64(w.recorded*recordSize)); err != nil {
		return fmt.Errorf("record request: %w", err)
	}
	w.recorded++
	return nil
}

// Len is how many requests the card received since recording started: its request position.
func (w *Recorder) Len() uint64 { return w.n }

// Recorded is how many requests the stream holds: Len, or less once the stream was full.
func (w *Recorder) Recorded() uint64 { return w.recorded }

// Full reports whether the data limit stopped the recording.
func (w *Recorder) Full() bool { return w.full }

// Close closes the stream files.
func (w *Recorder) Close() error { return errors.Join(w.idx.Close(), w.data.Close()) }

// Stream is a recorded write stream, read back.
type Stream struct {
	Records []Record
	Data    io.ReaderAt
	closer  io.Closer
}

// OpenStream reads a stream's index and opens its data.
func OpenStream(dir string) (*Stream, error) {
	b, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		return nil, fmt.Errorf("read write stream: %w", err)
	}
	s := &Stream{}
	for off := 0; off+recordSize <= len(b); off += recordSize {
		s.Records = append(s.Records, decodeRecord(b[off:off+recordSize]))
	}
	f, err := os.Open(filepath.Join(dir, DataFile))
	if err != nil {
		return nil, fmt.Errorf("open write stream data: %w", err)
	}
	s.Data, s.closer = f, f
	return s, nil
}

// Close closes the data file.
func (s *Stream) Close() error {
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}

// Writes counts the data writes among records [from, to).
func (s *Stream) Writes(from, to int) int {
	n := 0
	for _, r := range s.Records[from:to] {
		if r.Op == flash.OpWrite {
			n++
		}
	}
	return n
}
