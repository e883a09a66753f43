package suite

import (
	"context"
	"strings"
	"testing"
)

func TestWriteLargeCounts(t *testing.T) {
	c := newCountingFS("/m")
	p, err := writeLarge(context.Background(), c, "/m/testing", 16<<10, 1000)
	if err != nil {
		t.Fatal(err)
	}
	const want = 1000 * 16 << 10
	if p.ops != 1000 || c.writes != 1000 || c.written != want || p.bytes != want || len(c.files["/m/testing"]) != want {
		t.Errorf("%d ops, %d writes, %d bytes written (phase %d, file %d); want 1000 writes of 16 KiB", p.ops, c.writes, c.written, p.bytes, len(c.files["/m/testing"]))
	}
	if c.syncfs != 1 || c.fsyncs != 0 {
		t.Errorf("%d syncfs, %d fsyncs; want one syncfs (dd; sync)", c.syncfs, c.fsyncs)
	}
}

func TestWriteSmallCounts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dirsync  bool
		dirSyncs int
	}{
		{"fsync per file", false, 0},
		{"fsync of file and directory", true, 37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCountingFS("/m")
			p, err := writeSmall(context.Background(), c, "/m/small", 37, 160<<10, tc.dirsync)
			if err != nil {
				t.Fatal(err)
			}
			if p.ops != 37 || c.creates != 37 || c.fsyncs != 37 || c.dirSyncs != tc.dirSyncs || c.syncfs != 0 {
				t.Errorf("%d files, %d creates, %d fsyncs, %d dir fsyncs, %d syncfs", p.ops, c.creates, c.fsyncs, c.dirSyncs, c.syncfs)
			}
			if c.written != 37*160<<10 || p.bytes != c.written || p.lat.n != 37 {
				t.Errorf("%d bytes written, phase %d, %d latencies", c.written, p.bytes, p.lat.n)
			}
			for name, d := range c.files {
				if len(d) != 160<<10 {
					t.Errorf("%s has %d bytes", name, len(d))
				}
			}
		})
	}
}

func TestFitCount(t *testing.T) {
	tests := []struct {
		want        int
		each, avail uint64
		n           int
		noted       bool
	}{
		{1000, 160 << 10, 1 << 30, 1000, false},
		{1000, 160 << 10, 100 << 20, 256, true}, // 40 MiB / 160 KiB
		{10, 1 << 30, 1 << 20, 1, true},
	}
	for _, tc := range tests {
		n, note := fitCount(tc.want, tc.each, tc.avail, "files")
		if n != tc.n || (note != "") != tc.noted || (tc.noted && !strings.Contains(note, "to fit")) {
			t.Errorf("fitCount(%d, %d, %d) = %d, %q; want %d", tc.want, tc.each, tc.avail, n, note, tc.n)
		}
	}
}
