package smallfiles

import (
	"context"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/testkit/fakefs"
)

func TestWriteLargeCounts(t *testing.T) {
	c := fakefs.New("/m")
	p, err := writeLarge(context.Background(), c, "/m/testing", 16<<10, 1000)
	if err != nil {
		t.Fatal(err)
	}
	const want = 1000 * 16 << 10
	if p.Ops != 1000 || c.Writes != 1000 || c.Written != want || p.Bytes != want || len(c.Files["/m/testing"]) != want {
		t.Errorf("%d ops, %d writes, %d bytes written (phase %d, file %d); want 1000 writes of 16 KiB", p.Ops, c.Writes, c.Written, p.Bytes, len(c.Files["/m/testing"]))
	}
	if c.Syncfses != 1 || c.Fsyncs != 0 {
		t.Errorf("%d syncfs, %d fsyncs; want one syncfs (dd; sync)", c.Syncfses, c.Fsyncs)
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
			c := fakefs.New("/m")
			p, err := writeSmall(context.Background(), c, "/m/small", 37, 160<<10, tc.dirsync)
			if err != nil {
				t.Fatal(err)
			}
			if p.Ops != 37 || c.Creates != 37 || c.Fsyncs != 37 || c.DirSyncs != tc.dirSyncs || c.Syncfses != 0 {
				t.Errorf("%d files, %d creates, %d fsyncs, %d dir fsyncs, %d syncfs", p.Ops, c.Creates, c.Fsyncs, c.DirSyncs, c.Syncfses)
			}
			if c.Written != 37*160<<10 || p.Bytes != c.Written || p.Lat.N() != 37 {
				t.Errorf("%d bytes written, phase %d, %d latencies", c.Written, p.Bytes, p.Lat.N())
			}
			for name, d := range c.Files {
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
