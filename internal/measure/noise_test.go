package measure

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeMachine writes the /proc and /sys files the sentinel reads.
type fakeMachine struct {
	proc, sys string
}

type fakeState struct {
	total, steal uint64            // /proc/stat cpu line: total ticks split as user + idle + steal
	procs        map[int][3]uint64 // pid → ppid, ticks, flags
	psiCPU       uint64
	disks        map[string]uint64 // name → sectors read (written 0)
	idle         uint64            // ticks of total that were idle
	psiMem       uint64            // µs
	// cg, when set, is fsbench's cgroup: its CPU time (µs) and memory pressure (µs).
	cg *fakeCgroup
}

type fakeCgroup struct{ usage, psiMem uint64 }

func newFakeMachine(t *testing.T, disks ...string) *fakeMachine {
	t.Helper()
	root := t.TempDir()
	m := &fakeMachine{proc: filepath.Join(root, "proc"), sys: filepath.Join(root, "sys")}
	for _, d := range append([]string{"pressure"}, disks...) {
		if d == "pressure" {
			os.MkdirAll(filepath.Join(m.proc, d), 0o755)
			continue
		}
		os.MkdirAll(filepath.Join(m.sys, "block", d), 0o755)
	}
	return m
}

func (m *fakeMachine) set(t *testing.T, s fakeState) {
	t.Helper()
	user := s.total - s.steal - s.idle
	w := func(p, content string) {
		if err := os.WriteFile(filepath.Join(m.proc, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("stat", fmt.Sprintf("cpu  %d 0 0 %d 0 0 0 %d 0 0\ncpu0 1 2 3\ncpu1 1 2 3\n", user, s.idle, s.steal))
	entries, _ := os.ReadDir(m.proc)
	for _, e := range entries {
		if e.IsDir() && e.Name() != "pressure" {
			os.RemoveAll(filepath.Join(m.proc, e.Name()))
		}
	}
	for pid, p := range s.procs {
		os.MkdirAll(filepath.Join(m.proc, fmt.Sprint(pid)), 0o755)
		// Fields 3..: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
		w(fmt.Sprintf("%d/stat", pid), fmt.Sprintf("%d (some (name)) S %d 0 0 0 0 %d 0 0 0 0 %d 0 0 0\n", pid, p[0], p[2], p[1]))
	}
	w("pressure/cpu", fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", s.psiCPU))
	w("pressure/io", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	w("pressure/memory", fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", s.psiMem))
	if s.cg != nil {
		cg := filepath.Join(m.proc, "..", "cgroup")
		os.MkdirAll(cg, 0o755)
		w("../cgroup/cpu.stat", fmt.Sprintf("usage_usec %d\nuser_usec 0\nsystem_usec 0\n", s.cg.usage))
		w("../cgroup/cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
		w("../cgroup/io.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
		w("../cgroup/memory.pressure", fmt.Sprintf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%d\n", s.cg.psiMem))
	}
	var ds strings.Builder
	for name, sectors := range s.disks {
		fmt.Fprintf(&ds, "   7       0 %s 1 0 %d 0 0 0 0 0 0 0 0\n", name, sectors)
	}
	w("diskstats", ds.String())
}

func TestSentinel(t *testing.T) {
	const self = 1000
	quietProcs := map[int][3]uint64{
		1:    {0, 500, 0},        // init
		2:    {0, 0, pfKthread},  // kthreadd
		self: {1, 1000, 0},       // fsbench
		1001: {self, 10, 0},      // mkfs, fsbench's child
		1002: {1001, 10, 0},      // its child
		1003: {2, 10, pfKthread}, // a kworker
		1004: {1, 100, 0},        // a daemon
	}
	with := func(pid int, v [3]uint64) map[int][3]uint64 {
		m := map[int][3]uint64{}
		for k, x := range quietProcs {
			m[k] = x
		}
		m[pid] = v
		return m
	}
	const wall = 2 * time.Second // 200 ticks per CPU
	tests := []struct {
		name     string
		a, b     fakeState
		wantBusy bool
		why      string
	}{
		{"quiet", fakeState{total: 1000, procs: quietProcs}, fakeState{total: 1400, steal: 2, procs: with(1004, [3]uint64{1, 110, 0})}, false, ""},
		{"steal", fakeState{total: 1000, procs: quietProcs}, fakeState{total: 1400, steal: 60, procs: quietProcs}, true, "steal 15 %"},
		{"another process", fakeState{total: 1000, procs: quietProcs}, fakeState{total: 1400, procs: with(1004, [3]uint64{1, 280, 0})}, true, "other processes 90 % of a CPU"},
		{"a process started during the span", fakeState{total: 1000, procs: quietProcs}, fakeState{total: 1400, procs: with(2000, [3]uint64{1, 150, 0})}, true, "other processes 75 %"},
		{"fsbench's own children", fakeState{total: 1000, procs: quietProcs}, fakeState{total: 1400, procs: with(1002, [3]uint64{1001, 400, 0})}, false, ""},
		{"kernel threads do fsbench's I/O", fakeState{total: 1000, procs: quietProcs}, fakeState{total: 1400, procs: with(1003, [3]uint64{2, 300, pfKthread})}, false, ""},
		{"another disk", fakeState{total: 1000, procs: quietProcs, disks: map[string]uint64{"vdb": 0}},
			fakeState{total: 1400, procs: quietProcs, disks: map[string]uint64{"vdb": 40000}}, true, "other disks 10.2 MB/s"},
		{"a loop device's I/O is not a disk's", fakeState{total: 1000, procs: quietProcs, disks: map[string]uint64{"loop5": 0}},
			fakeState{total: 1400, procs: quietProcs, disks: map[string]uint64{"loop5": 400000}}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeMachine(t, "vdb")
			s := &Sentinel{Proc: m.proc, Sys: m.sys, Device: "loop3", self: self}
			m.set(t, tc.a)
			a := s.read()
			m.set(t, tc.b)
			b := s.read()
			n := s.compare(a, b, wall)
			if n.Busy != tc.wantBusy || !strings.Contains(n.Why, tc.why) {
				t.Errorf("busy %v (%q), want %v (%q); %+v", n.Busy, n.Why, tc.wantBusy, tc.why, n)
			}
		})
	}
}

// TestSentinelChildIO: what the programs fsbench waited for read and wrote beyond the device's
// own bytes (mkfs paging its binary in after a cache drop, an image built in the work
// directory) is the run's own on the other disks; what they wrote to the device is not counted
// twice.
func TestSentinelChildIO(t *testing.T) {
	const wall = 2 * time.Second
	const moved = 40000 * 512 // vdb's bytes in the span: 10.2 MB/s
	tests := []struct {
		name            string
		childIO, devIO  uint64
		procIO          uint64 // a running child's (the card server's) /proc/<pid>/io in the span
		wantBusy        bool
		wantOther       uint64
		wantWhyContains string
	}{
		{"nothing of the children's", 0, 0, 0, true, moved, "other disks 10.2 MB/s (vdb)"},
		{"the children's own binaries and images", moved, 0, 0, false, 0, ""},
		{"the children wrote only to the device", moved, moved, 0, true, moved, "other disks 10.2 MB/s"},
		{"half of it the children's", moved / 2, 0, 0, true, moved / 2, "other disks 5.1 MB/s"},
		{"the card server's readahead on its data file", 0, 0, moved, false, 0, ""},
		{"half waited for, half running", moved / 2, 0, moved / 2, false, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeMachine(t, "vdb")
			s := &Sentinel{Proc: m.proc, Sys: m.sys, Device: "loop3", self: 1000}
			procs := map[int][3]uint64{1: {0, 500, 0}, 1000: {1, 1000, 0}}
			m.set(t, fakeState{total: 1000, procs: procs, disks: map[string]uint64{"vdb": 0}})
			a := s.read()
			m.set(t, fakeState{total: 1400, procs: procs, disks: map[string]uint64{"vdb": 40000}})
			b := s.read()
			a.childIO, a.devIO, a.procIO = 0, 0, map[int]uint64{1001: 7}
			b.childIO, b.devIO, b.procIO = tc.childIO, tc.devIO, map[int]uint64{1001: 7 + tc.procIO}
			n := s.compare(a, b, wall)
			if n.Busy != tc.wantBusy || n.OtherIOBytes != tc.wantOther || !strings.Contains(n.Why, tc.wantWhyContains) {
				t.Errorf("busy %v (%q), other %d bytes; want %v (%q), %d", n.Busy, n.Why, n.OtherIOBytes, tc.wantBusy, tc.wantWhyContains, tc.wantOther)
			}
		})
	}
}

// The sentinel reads the storage I/O of fsbench's own processes from /proc/<pid>/io, and of
// no other process.
func TestSentinelProcIO(t *testing.T) {
	m := newFakeMachine(t)
	s := &Sentinel{Proc: m.proc, Sys: m.sys, self: 1000}
	// 1001 is fsbench's child (the card server), 1500 someone else's process.
	m.set(t, fakeState{total: 1000, procs: map[int][3]uint64{1: {0, 500, 0}, 1000: {1, 10, 0}, 1001: {1000, 10, 0}, 1500: {1, 10, 0}}})
	io := "rchar: 999\nwchar: 999\nsyscr: 1\nsyscw: 1\nread_bytes: %d\nwrite_bytes: %d\ncancelled_write_bytes: %d\n"
	for pid, v := range map[int][3]uint64{1000: {4096, 8192, 4096}, 1001: {1 << 20, 0, 0}, 1500: {1 << 30, 0, 0}} {
		if err := os.WriteFile(filepath.Join(m.proc, strconv.Itoa(pid), "io"), []byte(fmt.Sprintf(io, v[0], v[1], v[2])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, own := s.scanProcs()
	want := map[int]uint64{1000: 8192, 1001: 1 << 20}
	if !maps.Equal(own, want) {
		t.Errorf("own processes' I/O %v, want %v", own, want)
	}
}

// TestSentinelCgroup checks the sentinel with fsbench in a cgroup of its own: other CPU is the
// machine's less fsbench's and the kernel threads', so that a process too short-lived for any
// reading of /proc counts; and pressure that fsbench's own tasks felt is not other work.
func TestSentinelCgroup(t *testing.T) {
	const self = 1000
	procs := map[int][3]uint64{
		1:    {0, 500, 0},
		self: {1, 1000, 0},
		1003: {2, 10, pfKthread}, // a kworker
	}
	kworker := func(ticks uint64) map[int][3]uint64 {
		m := map[int][3]uint64{}
		for k, v := range procs {
			m[k] = v
		}
		m[1003] = [3]uint64{2, ticks, pfKthread}
		return m
	}
	const wall = 2 * time.Second // 400 ticks of 2 CPUs
	// a: 1000 ticks, all idle.
	a := fakeState{total: 1000, idle: 1000, procs: procs, cg: &fakeCgroup{}}
	tests := []struct {
		name     string
		b        fakeState
		cgroup   bool
		wantBusy bool
		why      string
	}{
		{"a short-lived process", fakeState{total: 1400, idle: 1250, procs: procs, cg: &fakeCgroup{}}, true, true, "other processes 75 % of a CPU"},
		{"a short-lived process, without a cgroup", fakeState{total: 1400, idle: 1250, procs: procs, cg: &fakeCgroup{}}, false, false, ""},
		{"fsbench's children that have exited", fakeState{total: 1400, idle: 1250, procs: procs, cg: &fakeCgroup{usage: 1_500_000}}, true, false, ""},
		{"kernel threads", fakeState{total: 1400, idle: 1250, procs: kworker(160), cg: &fakeCgroup{}}, true, false, ""},
		{"a tick of rounding", fakeState{total: 1400, idle: 1397, procs: procs, cg: &fakeCgroup{}}, true, false, ""},
		{"fsbench's own memory pressure", fakeState{total: 1400, idle: 1400, procs: procs, psiMem: 500_000, cg: &fakeCgroup{psiMem: 500_000}}, true, false, ""},
		{"memory pressure without a cgroup", fakeState{total: 1400, idle: 1400, procs: procs, psiMem: 500_000, cg: &fakeCgroup{psiMem: 500_000}}, false, true, "memory pressure 25 %"},
		{"others' memory pressure", fakeState{total: 1400, idle: 1400, procs: procs, psiMem: 500_000, cg: &fakeCgroup{psiMem: 100_000}}, true, true, "memory pressure 20 %"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeMachine(t)
			s := &Sentinel{Proc: m.proc, Sys: m.sys, self: self}
			if tc.cgroup {
				s.Cgroup = filepath.Join(m.proc, "..", "cgroup")
			}
			m.set(t, a)
			x := s.read()
			m.set(t, tc.b)
			y := s.read()
			n := s.compare(x, y, wall)
			if n.Busy != tc.wantBusy || !strings.Contains(n.Why, tc.why) {
				t.Errorf("busy %v (%q), want %v (%q); %+v", n.Busy, n.Why, tc.wantBusy, tc.why, n)
			}
		})
	}
}

func TestParseStatName(t *testing.T) {
	ppid, ticks, flags, ok := parseStat([]byte("42 (a (b) c) R 7 0 0 0 0 4194560 0 0 0 0 30 12 0 0\n"))
	if !ok || ppid != 7 || ticks != 42 || flags != 4194560 {
		t.Errorf("parseStat = %d %d %d %v", ppid, ticks, flags, ok)
	}
}

// On this machine, a span doing nothing in particular is read without error and, unless the
// machine is loaded, not busy; the figures are finite.
func TestSentinelHere(t *testing.T) {
	w := NewSentinel("").Start()
	time.Sleep(100 * time.Millisecond)
	n := w.Stop()
	if n.StealPct < 0 || n.StealPct > 100 || n.OtherCPUPct < 0 {
		t.Errorf("noise %+v", n)
	}
	t.Logf("noise of a 100 ms sleep here: %+v", n)
}
