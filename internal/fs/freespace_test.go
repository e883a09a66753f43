package fs

import (
	"context"
	"errors"
	"testing"
)

func TestMeasureFreeSpace(t *testing.T) {
	e2 := "Device: /dev/loop0\nBlocksize: 1024 bytes\n\nMin. free extent: 208 KB \nMax. free extent: 57085 KB\nAvg. free extent: 16741 KB\nNum. free extent: 7\n"
	xfs := "blocksize = 4096\n   from      to extents  blocks    pct\n      1       1      16      16   0.02\ntotal free extents 21\ntotal free blocks 65504\naverage free extent size 3119.24\n"
	tests := []struct {
		fs, out string
		err     error
		want    FreeSpace
		ok      bool
		wantErr bool
	}{
		{fs: "ext4", out: e2, want: FreeSpace{Extents: 7, AvgBytes: 16741 * 1024}, ok: true},
		{fs: "xfs", out: xfs, want: FreeSpace{Extents: 21, AvgBytes: 65504 * 4096 / 21.0}, ok: true},
		{fs: "btrfs", ok: false},
		{fs: "ext4", out: "garbage", wantErr: true},
		{fs: "ext4", err: errors.New("exec: not found"), wantErr: true},
	}
	for _, tc := range tests {
		k, _ := Lookup(tc.fs)
		run := func(context.Context, string, ...string) ([]byte, error) { return []byte(tc.out), tc.err }
		got, ok, err := MeasureFreeSpace(context.Background(), run, k, "/dev/loop0")
		if (err != nil) != tc.wantErr || ok != tc.ok || got != tc.want {
			t.Errorf("%s %q: %+v %v %v; want %+v %v error %v", tc.fs, tc.out, got, ok, err, tc.want, tc.ok, tc.wantErr)
		}
	}
}
