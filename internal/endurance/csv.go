package endurance

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"time"
)

// csvLog is the card's rounds.csv: a row at the end of every round, and while a round runs
// every Runner.Progress, so that a run of days says where it is (and a reader of the file can
// chart it) without waiting for results.json. Appended, one row per write: a killed run keeps
// every row it wrote.
type csvLog struct {
	f *os.File
	w *csv.Writer
}

var csvHeader = []string{"time", "round", "phase", "logical_bytes", "device_bytes", "card_bytes", "mbps",
	"bad_blocks", "spare_left", "health", "io_errors", "wrong_files", "note"}

func openCSV(path string) (*csvLog, error) {
	st, err := os.Stat(path)
	fresh := err != nil || st.Size() == 0
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("the card's round log: %w", err)
	}
	c := &csvLog{f: f, w: csv.NewWriter(f)}
	if fresh {
		c.w.Write(csvHeader)
		c.w.Flush()
	}
	return c, nil
}

// row appends one row; a row that cannot be written is lost, the run goes on.
func (c *csvLog) row(at time.Time, round int, phase string, st *State, mbps float64, note string) {
	var bad, spare uint64
	health := ""
	if s := st.Result.Series; len(s) > 0 {
		last := s[len(s)-1]
		bad, spare, health = last.BadBlocks, last.SpareLeft, last.Health
	}
	c.w.Write([]string{at.UTC().Format(time.RFC3339), strconv.Itoa(round), phase,
		strconv.FormatUint(st.Logical, 10), strconv.FormatUint(st.Device, 10), strconv.FormatUint(st.CardBytes, 10),
		strconv.FormatFloat(mbps, 'g', 4, 64), strconv.FormatUint(bad, 10), strconv.FormatUint(spare, 10), health,
		strconv.Itoa(st.Result.IOErrors), strconv.Itoa(st.Result.Wrong), note})
	c.w.Flush()
}

func (c *csvLog) close() error { return c.f.Close() }
