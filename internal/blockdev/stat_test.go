package blockdev

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Stat
		wantErr bool
	}{
		{
			name: "11 fields (< 4.18), kernel padding",
			in:   "     120        0     4312       31       40        2      640        9        0       48       40\n",
			want: Stat{ReadIOs: 120, ReadSectors: 4312, ReadTicksMs: 31, WriteIOs: 40, WriteMerges: 2,
				WriteSectors: 640, WriteTicksMs: 9, IOTicksMs: 48, TimeInQueueMs: 40, Fields: 11},
		},
		{
			name: "15 fields (discard, 4.18+)",
			in:   "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n",
			want: Stat{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 0, 15},
		},
		{
			name: "17 fields (flush, 5.5+)",
			in:   "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n",
			want: Stat{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 17},
		},
		{
			name: "tabs, no trailing newline, max uint64",
			in:   "\t18446744073709551615 0 0 0\t0 0 0 0 0 0 0",
			want: Stat{ReadIOs: math.MaxUint64, Fields: 11},
		},
		{
			name: "future kernel with more fields",
			in:   "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\n",
			want: Stat{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19},
		},
		{name: "empty", in: "", wantErr: true},
		{name: "too few fields", in: "1 2 3 4 5 6 7 8 9 10\n", wantErr: true},
		{name: "between known counts", in: "1 2 3 4 5 6 7 8 9 10 11 12 13\n", wantErr: true},
		{name: "16 fields", in: "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", wantErr: true},
		{name: "garbage", in: "major minor name\n", wantErr: true},
		{name: "negative", in: "-1 2 3 4 5 6 7 8 9 10 11\n", wantErr: true},
		{name: "overflow", in: "18446744073709551616 2 3 4 5 6 7 8 9 10 11\n", wantErr: true},
		{name: "garbage in extra field", in: "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 x\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseStat(f *testing.F) {
	for _, s := range []string{
		"     120        0     4312       31       40        2      640        9        0       48       40\n",
		"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n",
		"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n",
		"18446744073709551615 0 0 0 0 0 0 0 0 0 0",
		"1 2 x", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStat(b)
		if err != nil {
			return
		}
		words := bytes.Fields(b)
		if s.Fields != len(words) {
			t.Fatalf("Fields = %d, input has %d", s.Fields, len(words))
		}
		// Every parsed counter is the number in the input.
		got := s.fields()
		for i := 0; i < len(got) && i < len(words); i++ {
			want, err := strconv.ParseUint(string(words[i]), 10, 64)
			if err != nil {
				t.Fatalf("field %d %q accepted but is not a number", i+1, words[i])
			}
			if *got[i] != want {
				t.Fatalf("field %d = %d, input says %d", i+1, *got[i], want)
			}
		}
		// Printing the counters the kernel's way and parsing again gives the same Stat.
		n := min(s.Fields, len(got))
		parts := make([]string, n)
		for i := range n {
			parts[i] = strconv.FormatUint(*got[i], 10)
		}
		s2, err := ParseStat([]byte(strings.Join(parts, " ") + "\n"))
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		s2.Fields = s.Fields
		if s2 != s {
			t.Fatalf("round trip: %+v != %+v", s2, s)
		}
	})
}

func TestStatSub(t *testing.T) {
	before := Stat{ReadIOs: 10, ReadSectors: 100, WriteIOs: 5, WriteSectors: 80, InFlight: 3,
		IOTicksMs: math.MaxUint32 - 5, DiscardSectors: 8, FlushIOs: 1 << 40, Fields: 17}
	after := Stat{ReadIOs: 15, ReadSectors: 164, WriteIOs: 5, WriteSectors: 1104, InFlight: 1,
		IOTicksMs: 4, DiscardSectors: 2056, FlushIOs: 7, Fields: 17}
	got := after.Sub(before)
	want := Stat{
		ReadIOs: 5, ReadSectors: 64, WriteSectors: 1024,
		InFlight:       1,  // a gauge: the later reading
		IOTicksMs:      10, // wrapped at 32 bits: MaxUint32-5 -> 4
		DiscardSectors: 2048,
		FlushIOs:       7, // went back from above 32 bits: device reset, count from zero
		Fields:         17,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Sub (-want +got):\n%s", diff)
	}
	if got.ReadBytes() != 64*512 || got.WriteBytes() != 1024*512 || got.DiscardBytes() != 2048*512 {
		t.Errorf("bytes = %d/%d/%d", got.ReadBytes(), got.WriteBytes(), got.DiscardBytes())
	}
	if f := after.Sub(Stat{Fields: 11}).Fields; f != 11 {
		t.Errorf("Fields of a delta against an 11-field reading = %d, want 11", f)
	}
}

func TestReadStatFake(t *testing.T) {
	tests := []struct {
		dev     string
		want    Stat
		wantErr bool
	}{
		{dev: "loop3", want: Stat{ReadIOs: 120, ReadSectors: 4312, ReadTicksMs: 31, WriteIOs: 40, WriteMerges: 2,
			WriteSectors: 640, WriteTicksMs: 9, IOTicksMs: 48, TimeInQueueMs: 40, Fields: 11}},
		{dev: "mmcblk0p2", want: Stat{9032, 1211, 866154, 8644, 31011, 11722, 1554416, 190312, 0, 99236, 201220, 12, 0, 32896, 40, 2014, 2224, 17}},
		{dev: "sda1", want: Stat{ReadIOs: 10, ReadSectors: 80, ReadTicksMs: 1, IOTicksMs: 1, TimeInQueueMs: 1, Fields: 15}},
		{dev: "loop7", wantErr: true}, // no stat file in the fake tree
		{dev: "nvme9n1", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ReadStat("testdata/sysfs", tt.dev)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, wantErr %v", tt.dev, err, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.dev, diff)
		}
	}
}
