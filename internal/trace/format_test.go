package trace

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// sample is a small trace with every operation, flags, an incomplete request, a backwards
// seek and a partition-like device name.
func sample() *Trace {
	return &Trace{
		Device: "mmcblk0p2", Major: 179, Minor: 2, Start: time.Unix(1700000000, 123456789).UTC(),
		Lost: 3, Unmatched: 2,
		Requests: []Request{
			{Issue: 10 * time.Microsecond, Latency: 500 * time.Microsecond, Done: true, Sector: 2048, Sectors: 2048, Op: OpWrite, Flags: FlagSync},
			{Issue: 20 * time.Microsecond, Latency: 400 * time.Microsecond, Done: true, Sector: 4096, Sectors: 2048, Op: OpWrite, Flags: FlagSync},
			{Issue: 20 * time.Microsecond, Latency: 100 * time.Microsecond, Done: true, Op: OpFlush, Flags: FlagPreflush},
			{Issue: 1 * time.Millisecond, Latency: 90 * time.Microsecond, Done: true, Sector: 8, Sectors: 8, Op: OpRead, Flags: FlagMeta | FlagReadahead},
			{Issue: 2 * time.Millisecond, Latency: 0, Done: true, Sector: 100, Sectors: 8, Op: OpWrite, Flags: FlagFUA | FlagMeta | FlagError},
			{Issue: 3 * time.Millisecond, Sector: 0, Sectors: 1 << 20, Op: OpDiscard},
			{Issue: 3 * time.Millisecond, Sector: 1 << 40, Sectors: 8, Op: OpSecureErase},
			{Issue: 4 * time.Millisecond, Sector: 16, Sectors: 16, Op: OpOther, Done: true, Latency: 1},
		},
	}
}

func encode(t testing.TB, tr *Trace) []byte {
	t.Helper()
	var b bytes.Buffer
	n, err := tr.WriteTo(&b)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(b.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, b.Len())
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	for _, tr := range []*Trace{sample(), {}, {Device: "loop0", Requests: []Request{{Op: OpFlush}}}} {
		got, err := Read(bytes.NewReader(encode(t, tr)))
		if err != nil {
			t.Fatal(err)
		}
		if tr.Requests == nil {
			tr.Requests = []Request{}
		}
		if d := cmp.Diff(tr, got); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
	}
}

// TestGolden pins the byte format: a change here breaks every stored trace, so it needs a
// new format version.
func TestGolden(t *testing.T) {
	b := encode(t, sample())
	golden := filepath.Join("testdata", "sample.trace")
	if *update {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("encoding changed:\n got %x\nwant %x", b, want)
	}
}

func TestSequentialIsCompact(t *testing.T) {
	tr := &Trace{}
	for i := uint64(0); i < 1000; i++ {
		tr.Requests = append(tr.Requests, Request{Issue: time.Duration(i) * time.Millisecond, Done: true, Latency: 500 * time.Microsecond, Sector: i * 2048, Sectors: 2048, Op: OpWrite})
	}
	if n := len(encode(t, tr)); n > 10*1000+64 {
		t.Errorf("1000 sequential writes take %d bytes, want at most 10 per request and a header", n)
	}
}

func TestReadRejects(t *testing.T) {
	good := encode(t, sample())
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-10] ^= 0x40
	v2 := append([]byte(magic), 2)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "header"},
		{"other file", []byte("\x7fELF\x02\x01\x01\x00rest"), "header"},
		{"newer version", v2, "format version 2"},
		{"trailing data", append(append([]byte(nil), good...), 0), "data after the end"},
		{"corrupted", corrupt, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.data))
			if !errors.Is(err, ErrFormat) || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Errorf("Read = %v, want ErrFormat containing %q", err, tt.want)
			}
		})
	}
	// Every truncation is an error that says so.
	for n := len(magic) + 1; n < len(good); n++ {
		_, err := Read(bytes.NewReader(good[:n]))
		if !errors.Is(err, ErrFormat) || !bytes.Contains([]byte(err.Error()), []byte("truncated")) {
			t.Fatalf("Read of the first %d of %d bytes = %v, want a truncation error", n, len(good), err)
		}
	}
}

func TestWriteToRejects(t *testing.T) {
	tests := []struct {
		name string
		tr   *Trace
	}{
		{"unsorted", &Trace{Requests: []Request{{Issue: 2}, {Issue: 1}}}},
		{"bad op", &Trace{Requests: []Request{{Op: numOps}}}},
		{"bad flags", &Trace{Requests: []Request{{Flags: 1 << 7}}}},
		{"latency without completion", &Trace{Requests: []Request{{Latency: 5}}}},
		{"sector overflow", &Trace{Requests: []Request{{Sector: 1 << 60}}}},
	}
	for _, tt := range tests {
		if _, err := tt.tr.WriteTo(&bytes.Buffer{}); err == nil {
			t.Errorf("%s: WriteTo accepted %+v", tt.name, tt.tr.Requests)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(encode(f, sample()))
	f.Add(encode(f, &Trace{}))
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error not wrapping ErrFormat: %v", err)
			}
			return
		}
		b := encode(t, tr)
		tr2, err := Read(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("re-encoded trace rejected: %v", err)
		}
		if d := cmp.Diff(tr, tr2); d != "" {
			t.Fatalf("round trip (-first +second):\n%s", d)
		}
		Summarize(tr, 16<<10, 4<<20) // must not panic either
	})
}
