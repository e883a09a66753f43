package trace

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// The binary format, version 1 (all integers varints as encoding/binary writes them):
//
//	magic     "fsbtrace"
//	version   uvarint (1)
//	device    uvarint length (< 256) + bytes
//	major     uvarint
//	minor     uvarint
//	start     varint Unix nanoseconds (0: unknown)
//	lost      uvarint
//	unmatched uvarint
//	count     uvarint
//	count × request:
//	  issue   uvarint nanoseconds since the previous request's issue (the first: since start)
//	  latency uvarint nanoseconds + 1 (0: no completion seen)
//	  sector  varint, minus the previous request's end sector (sequential I/O encodes as 0)
//	  sectors uvarint
//	  opflags uvarint, flags<<3 | op
//	crc32     4 bytes little-endian, IEEE CRC of every byte before it
//
// A sequential stream of 1 MiB writes costs about 8 bytes per request.
const (
	magic         = "fsbtrace"
	formatVersion = 1
	maxDeviceName = 255
)

// ErrFormat is wrapped by every error Read returns for input that is not a valid trace.
var ErrFormat = errors.New("not a valid fsbench trace")

// WriteTo writes t in the binary format. The requests must be in issue order (as Stop
// returns them).
func (t *Trace) WriteTo(w io.Writer) (int64, error) {
	if len(t.Device) > maxDeviceName {
		return 0, fmt.Errorf("device name of %d bytes: at most %d", len(t.Device), maxDeviceName)
	}
	var b []byte
	b = append(b, magic...)
	b = binary.AppendUvarint(b, formatVersion)
	b = binary.AppendUvarint(b, uint64(len(t.Device)))
	b = append(b, t.Device...)
	b = binary.AppendUvarint(b, uint64(t.Major))
	b = binary.AppendUvarint(b, uint64(t.Minor))
	var start int64
	if !t.Start.IsZero() {
		start = t.Start.UnixNano()
	}
	b = binary.AppendVarint(b, start)
	b = binary.AppendUvarint(b, t.Lost)
	b = binary.AppendUvarint(b, t.Unmatched)
	b = binary.AppendUvarint(b, uint64(len(t.Requests)))
	var prevIssue time.Duration
	var prevEnd uint64
	for i, r := range t.Requests {
		if err := r.check(); err != nil {
			return 0, fmt.Errorf("request %d: %w", i, err)
		}
		if r.Issue < prevIssue {
			return 0, fmt.Errorf("request %d issued at %v, before request %d at %v: sort the requests by issue time", i, r.Issue, i-1, prevIssue)
		}
		b = binary.AppendUvarint(b, uint64(r.Issue-prevIssue))
		lat := uint64(0)
		if r.Done {
			lat = uint64(r.Latency) + 1
		}
		b = binary.AppendUvarint(b, lat)
		b = binary.AppendVarint(b, int64(r.Sector)-int64(prevEnd))
		b = binary.AppendUvarint(b, r.Sectors)
		b = binary.AppendUvarint(b, uint64(r.Flags)<<3|uint64(r.Op))
		prevIssue, prevEnd = r.Issue, r.Sector+r.Sectors
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	n, err := w.Write(b)
	if err != nil {
		return int64(n), fmt.Errorf("writing trace: %w", err)
	}
	return int64(n), nil
}

// check validates the fields a reader would reject.
func (r Request) check() error {
	switch {
	case r.Op >= numOps:
		return fmt.Errorf("unknown operation %d", r.Op)
	case r.Flags&^allFlags != 0:
		return fmt.Errorf("unknown flags %#x", uint8(r.Flags))
	case r.Issue < 0 || r.Latency < 0:
		return fmt.Errorf("negative time (issue %v, latency %v)", r.Issue, r.Latency)
	case !r.Done && r.Latency != 0:
		return fmt.Errorf("latency %v without a completion", r.Latency)
	case r.Sectors >= 1<<32 || r.Sector >= maxSector-r.Sectors:
		return fmt.Errorf("sectors %d+%d out of range", r.Sector, r.Sectors)
	}
	return nil
}

// reader decodes varints while keeping every byte for the checksum.
type reader struct {
	r   *bufio.Reader
	sum bytes.Buffer
}

func (d *reader) ReadByte() (byte, error) {
	c, err := d.r.ReadByte()
	if err == nil {
		d.sum.WriteByte(c)
	}
	return c, err
}

func (d *reader) uvarint(what string) (uint64, error) {
	v, err := binary.ReadUvarint(d)
	if err != nil {
		return 0, fieldErr(what, err)
	}
	return v, nil
}

func (d *reader) varint(what string) (int64, error) {
	v, err := binary.ReadVarint(d)
	if err != nil {
		return 0, fieldErr(what, err)
	}
	return v, nil
}

func fieldErr(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated in the %s (the file was cut short: was the capture interrupted?)", ErrFormat, what)
	}
	return fmt.Errorf("%w: bad %s: %v", ErrFormat, what, err)
}

// Read decodes a trace written by WriteTo. It rejects other files, other format versions,
// truncated and corrupted traces with an error wrapping ErrFormat.
func Read(r io.Reader) (*Trace, error) {
	d := &reader{r: bufio.NewReader(r)}
	if err := d.header(); err != nil {
		return nil, err
	}
	t := &Trace{}
	if err := d.device(t); err != nil {
		return nil, err
	}
	count, err := d.counts(t)
	if err != nil {
		return nil, err
	}
	// Every request takes at least 5 bytes: do not let a corrupt count allocate gigabytes.
	t.Requests = make([]Request, 0, min(count, 1<<16))
	var issue, prevEnd uint64
	for i := uint64(0); i < count; i++ {
		rq, err := d.request(i, count, &issue, prevEnd)
		if err != nil {
			return nil, err
		}
		t.Requests = append(t.Requests, rq)
		prevEnd = rq.Sector + rq.Sectors
	}
	if err := d.trailer(); err != nil {
		return nil, err
	}
	return t, nil
}

// header checks the magic and the format version.
func (d *reader) header() error {
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(d.r, head); err != nil || string(head) != magic {
		return fmt.Errorf("%w: no %q header (is this a trace file written by fsbench?)", ErrFormat, magic)
	}
	d.sum.Write(head)
	v, err := d.uvarint("version")
	if err != nil {
		return err
	}
	if v != formatVersion {
		return fmt.Errorf("%w: format version %d, this fsbench reads version %d (use the fsbench that wrote it)", ErrFormat, v, formatVersion)
	}
	return nil
}

// device reads the traced device's name and numbers into t.
func (d *reader) device(t *Trace) error {
	n, err := d.uvarint("device name length")
	if err != nil {
		return err
	}
	if n > maxDeviceName {
		return fmt.Errorf("%w: device name of %d bytes", ErrFormat, n)
	}
	name := make([]byte, n)
	for i := range name {
		if name[i], err = d.ReadByte(); err != nil {
			return fieldErr("device name", err)
		}
	}
	t.Device = string(name)
	for _, f := range []struct {
		what string
		p    *uint32
	}{{"major", &t.Major}, {"minor", &t.Minor}} {
		x, err := d.uvarint(f.what)
		if err != nil {
			return err
		}
		if x >= 1<<32 {
			return fmt.Errorf("%w: %s %d out of range", ErrFormat, f.what, x)
		}
		*f.p = uint32(x)
	}
	return nil
}

// counts reads the start time and the lost and unmatched counts into t, and returns how
// many requests follow.
func (d *reader) counts(t *Trace) (uint64, error) {
	start, err := d.varint("start time")
	if err != nil {
		return 0, err
	}
	if start != 0 {
		t.Start = time.Unix(0, start).UTC()
	}
	if t.Lost, err = d.uvarint("lost count"); err != nil {
		return 0, err
	}
	if t.Unmatched, err = d.uvarint("unmatched count"); err != nil {
		return 0, err
	}
	return d.uvarint("request count")
}

// request reads request i of count: its issue time is a delta on *issue (which it advances),
// its sector a delta on prevEnd, the end of the request before it.
func (d *reader) request(i, count uint64, issue *uint64, prevEnd uint64) (Request, error) {
	var f [5]uint64
	var sectorDelta int64
	var err error
	for j, what := range []string{"issue time", "latency", "sector", "length", "operation"} {
		if j == 2 {
			sectorDelta, err = d.varint(what)
		} else {
			f[j], err = d.uvarint(what)
		}
		if err != nil {
			return Request{}, fmt.Errorf("request %d of %d: %w", i, count, err)
		}
	}
	if f[0] > 1<<62-*issue || f[1] > 1<<62 {
		return Request{}, fmt.Errorf("%w: request %d: time out of range", ErrFormat, i)
	}
	*issue += f[0]
	sector := int64(prevEnd) + sectorDelta
	if sectorDelta < -(1<<56) || sectorDelta > 1<<56 || sector < 0 {
		return Request{}, fmt.Errorf("%w: request %d: sector out of range", ErrFormat, i)
	}
	if f[4] >= 1<<(3+numFlags) {
		return Request{}, fmt.Errorf("%w: request %d: operation %#x out of range", ErrFormat, i, f[4])
	}
	rq := Request{
		Issue: time.Duration(*issue), Sector: uint64(sector), Sectors: f[3],
		Op: Op(f[4] & 7), Flags: Flags(f[4] >> 3),
	}
	if f[1] > 0 {
		rq.Done, rq.Latency = true, time.Duration(f[1]-1)
	}
	if err := rq.check(); err != nil {
		return Request{}, fmt.Errorf("%w: request %d: %v (a newer format?)", ErrFormat, i, err)
	}
	return rq, nil
}

// trailer checks the checksum over everything read so far, and that nothing follows it.
func (d *reader) trailer() error {
	want := crc32.ChecksumIEEE(d.sum.Bytes())
	var crc [4]byte
	if _, err := io.ReadFull(d.r, crc[:]); err != nil {
		return fmt.Errorf("%w: truncated before the checksum (the file was cut short)", ErrFormat)
	}
	if got := binary.LittleEndian.Uint32(crc[:]); got != want {
		return fmt.Errorf("%w: checksum %08x, want %08x: the file is corrupted", ErrFormat, got, want)
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		return fmt.Errorf("%w: data after the end of the trace", ErrFormat)
	}
	return nil
}
