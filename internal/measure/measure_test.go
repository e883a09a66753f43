package measure

import (
	"errors"
	"testing"
	"time"

	"github.com/fsbench/fsbench/internal/blockdev"
)

func TestSpanDeltas(t *testing.T) {
	clock := time.Unix(1000, 0)
	user, sys := time.Second, 2*time.Second
	dev := blockdev.Stat{ReadSectors: 10, WriteSectors: 20, WriteIOs: 2, Fields: 17}
	m := &Meter{
		now: func() time.Time { return clock },
		cpu: func() (time.Duration, time.Duration, error) { return user, sys, nil },
		device: func() (blockdev.Stat, error) {
			return dev, nil
		},
	}
	span, err := m.Start()
	if err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(1500 * time.Millisecond)
	user += 300 * time.Millisecond
	sys += 100 * time.Millisecond
	dev.ReadSectors += 8
	dev.WriteSectors += 2048
	dev.WriteIOs += 4
	s, err := span.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if s.Wall != 1500*time.Millisecond || s.User != 300*time.Millisecond || s.Sys != 100*time.Millisecond {
		t.Errorf("times = %v %v %v", s.Wall, s.User, s.Sys)
	}
	if s.Dev.ReadBytes() != 8*512 || s.Dev.WriteBytes() != 2048*512 || s.Dev.WriteIOs != 4 {
		t.Errorf("device delta = %+v", s.Dev)
	}
}

func TestSpanDeviceError(t *testing.T) {
	m := &Meter{
		now:    time.Now,
		cpu:    func() (time.Duration, time.Duration, error) { return 0, 0, nil },
		device: func() (blockdev.Stat, error) { return blockdev.Stat{}, errors.New("gone") },
	}
	if _, err := m.Start(); err == nil {
		t.Fatal("Start succeeded without device counters")
	}
}

func TestProcessCPUAdvances(t *testing.T) {
	u0, s0, err := processCPU()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(50 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	u1, s1, err := processCPU()
	if err != nil {
		t.Fatal(err)
	}
	if u1+s1 <= u0+s0 {
		t.Errorf("CPU time did not advance over 50 ms of spinning (%d loops): %v -> %v", x, u0+s0, u1+s1)
	}
}

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]uint64
		wantErr bool
	}{
		{"kB and bare", "MemTotal:       1000 kB\nHugePages_Total:       0\n", map[string]uint64{"MemTotal": 1024000, "HugePages_Total": 0}, false},
		{"no colon", "MemTotal 1000 kB\n", nil, true},
		{"bad number", "MemTotal: x kB\n", nil, true},
		{"bad unit", "MemTotal: 1 MB\n", nil, true},
		{"empty value", "MemTotal:\n", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMeminfo([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d", k, got[k], v)
				}
			}
		})
	}
}

func TestKernelMemory(t *testing.T) {
	m := Meminfo{"Slab": 100, "Buffers": 10, "KernelStack": 1, "PageTables": 2, "Percpu": 3, "VmallocUsed": 4, "Cached": 1 << 30}
	if got := m.KernelMemory(); got != 120 {
		t.Errorf("KernelMemory = %d, want 120 (page cache excluded)", got)
	}
}

func TestReadMeminfoHasFields(t *testing.T) {
	m, err := ReadMeminfo()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range kernelMemoryFields {
		if _, ok := m[f]; !ok {
			t.Errorf("this kernel's /proc/meminfo has no %s", f)
		}
	}
}
