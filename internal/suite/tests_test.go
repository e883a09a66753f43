package suite

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fsbench/fsbench/internal/catalog"
	"github.com/fsbench/fsbench/internal/fs"
	"github.com/fsbench/fsbench/internal/plan"
	"github.com/fsbench/fsbench/internal/results"
	"github.com/fsbench/fsbench/internal/suites"
)

func TestSelect(t *testing.T) {
	tests := []struct {
		name       string
		suite      string
		tests      []string
		wantRecord []string
		wantRun    []string
		wantErr    string
	}{
		{name: "all by default", suite: "bootlin", wantRecord: names(order(mustSuite(catalog.SuiteBootlin))), wantRun: names(order(mustSuite(catalog.SuiteBootlin)))},
		{name: "read needs write", suite: "bootlin", tests: []string{catalog.Read}, wantRecord: []string{catalog.Read}, wantRun: []string{catalog.Mkfs, catalog.ModuleLoad, catalog.Mount, catalog.Read, catalog.Write}},
		{name: "video_read needs video_write", suite: "bootlin", tests: []string{catalog.VideoRead, catalog.Mount}, wantRecord: []string{catalog.Mount, catalog.VideoRead}, wantRun: []string{catalog.Mkfs, catalog.ModuleLoad, catalog.Mount, catalog.VideoRead, catalog.VideoWrite}},
		{name: "both writes empty the filesystem between them", suite: "bootlin", tests: []string{catalog.Write, catalog.VideoWrite},
			wantRecord: []string{catalog.Write, catalog.VideoWrite}, wantRun: []string{catalog.Mkfs, catalog.ModuleLoad, catalog.Mount, catalog.Write, catalog.Remove, catalog.VideoWrite}},
		{name: "video_write alone starts empty", suite: "bootlin", tests: []string{catalog.VideoWrite},
			wantRecord: []string{catalog.VideoWrite}, wantRun: []string{catalog.Mkfs, catalog.ModuleLoad, catalog.Mount, catalog.VideoWrite}},
		{name: "unknown test", suite: "bootlin", tests: []string{"reed"}, wantErr: `suite bootlin has no test "reed"`},
		{name: "unknown suite", suite: "bonnie++", wantErr: `unknown suite "bonnie++"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Select(plan.ParseSuites(tc.suite), tc.tests)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := keys(sel.Record); !sameSet(got, tc.wantRecord) {
				t.Errorf("Record = %v, want %v", got, tc.wantRecord)
			}
			if got := keys(sel.Run); !sameSet(got, tc.wantRun) {
				t.Errorf("Run = %v, want %v", got, tc.wantRun)
			}
		})
	}
}

// TestNeedsComeEarlier guards the order of the suite: a test's prerequisites must run before it
// in the same repetition.
func TestNeedsComeEarlier(t *testing.T) {
	for _, s := range suites.All() {
		name, tests := s.Name, order(s)
		for i, test := range tests {
			for _, need := range test.Needs {
				j := slices.IndexFunc(tests, func(x Test) bool { return x.Name == need })
				if j < 0 || j >= i {
					t.Errorf("suite %s: %s needs %s, which does not run before it", name, test.Name, need)
				}
			}
		}
	}
}

func TestEveryTestIsRunBySomeStep(t *testing.T) {
	for _, s := range suites.All() {
		name, tests := s.Name, order(s)
		for _, test := range tests {
			// mount_mem is the only figure produced by another test's step (mount), and on
			// raw flash init_mem too (init_time's).
			step := test.Run != nil
			produced := test.Name == catalog.MountMem
			if name == plan.FlashSuite {
				produced = test.Name == catalog.MountMem || test.Name == catalog.InitMem
			}
			// Raw-flash tests run only on raw flash, and the others only on a block device.
			if test.Flash != (name == plan.FlashSuite) {
				t.Errorf("suite %s: test %s runs on raw flash: %v", name, test.Name, test.Flash)
			}
			if step == produced {
				t.Errorf("suite %s: test %s has a step: %v", name, test.Name, step)
			}
		}
	}
}

func TestSelectSeveralSuites(t *testing.T) {
	suites.Register(suites.Suite{Name: "test-extra", Rank: 1000, Tests: []Test{{Test: catalog.Test{Name: "extra", Unit: catalog.Seconds,
		Better: catalog.LowerIsBetter, Quantity: catalog.Time, Title: "extra", Doc: "a test of Select"}, Run: step((*rep).remove)}}})
	sel, err := Select(plan.ParseSuites("bootlin, test-extra"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range sel.Order {
		got = append(got, x.Name)
	}
	want := append(names(order(mustSuite(catalog.SuiteBootlin))), "extra") // the shared setup tests appear once
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func names(ts []Test) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestDescribe(t *testing.T) {
	f := results.Float
	tests := []struct {
		m    results.Measurement
		want string
	}{
		{results.Measurement{Variant: "ext4", Rep: 1, Test: catalog.Write, Status: results.OK, Value: f(1.5), Unit: "s", MBps: 12.34}, "ext4 rep 1 write: 1.500 s (12.3 MB/s)"},
		{results.Measurement{Variant: "ext4", Rep: 2, Test: catalog.MountMem, Status: results.OK, Value: f(-114700), Unit: "bytes"}, "ext4 rep 2 mount_mem: -112 KiB"},
		{results.Measurement{Variant: "ext4", Rep: 1, Test: catalog.UsedSpace, Status: results.OK, Value: f(1 << 20), Unit: "bytes"}, "ext4 rep 1 used_space: 1 MiB"},
		{results.Measurement{Variant: "xfs", Rep: 1, Test: "randio_rand_read", Status: results.OK, Value: f(4064.94), Unit: "IOPS"}, "xfs rep 1 randio_rand_read: 4065 IOPS"},
		{results.Measurement{Variant: "xfs", Rep: 1, Test: catalog.Read, Status: results.Failed, Error: "EIO"}, "xfs rep 1 read: failed: EIO"},
		{results.Measurement{Variant: "sq", Rep: 1, Test: catalog.Write, Status: results.NA, Note: "read-only filesystem"}, "sq rep 1 write: n/a (read-only filesystem)"},
	}
	for _, tc := range tests {
		if got := describe(tc.m); got != tc.want {
			t.Errorf("describe = %q, want %q", got, tc.want)
		}
	}
}

func TestFullHint(t *testing.T) {
	nilfs, _ := fs.Lookup("nilfs2")
	ext4, _ := fs.Lookup("ext4")
	full := fmt.Errorf("copying: %w", unix.ENOSPC)
	tests := []struct {
		name string
		k    fs.Kind
		err  error
		want bool
	}{
		{"nilfs2 out of space", nilfs, full, true},
		{"nilfs2 other error", nilfs, errors.New("EIO"), false},
		{"ext4 out of space", ext4, full, false},
	}
	for _, tc := range tests {
		got := fullHint(tc.k, tc.err)
		if (got != "") != tc.want || (tc.want && !strings.Contains(got, "nilfs_cleanerd")) {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}

func mustSuite(name string) suites.Suite {
	s, ok := suites.Lookup(name)
	if !ok {
		panic("no suite " + name)
	}
	return s
}
