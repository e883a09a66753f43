package vm

import (
	"testing"
	"time"
)

func TestParseCPU(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want time.Duration
		ok   bool
	}{
		// utime 1234, stime 56 (fields 14 and 15).
		{"4242 (qemu-system-x86) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 3 0 100 0 0", 12900 * time.Millisecond, true},
		// A command name with spaces and parentheses: fields are counted after the last ')'.
		{"7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0 0", 70 * time.Millisecond, true},
		{"7 (x) R 1 2", 0, false},
		{"no name here", 0, false},
		{"7 (x) R 1 7 7 0 -1 0 0 0 0 0 a b 0 0", 0, false},
	} {
		got, err := parseCPU([]byte(tc.stat))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseCPU(%q) = %v, %v; want %v, ok=%v", tc.stat, got, err, tc.want, tc.ok)
		}
	}
}

// TestIdleMeter: the idle stretch starts at the last busy sample, grows while the CPU time
// grows by less than the share and the I/O by less than its floor, and ends on either.
func TestIdleMeter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(n int) time.Time { return t0.Add(time.Duration(n) * 10 * time.Second) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	m := &idleMeter{share: 0.02, io: 1000}
	for i, tc := range []struct {
		at   time.Time
		cpu  time.Duration
		io   int64
		want time.Duration
	}{
		{s(0), ms(5000), 100, 0},                  // first sample: busy
		{s(1), ms(15000), 100, 0},                 // 100 % of a CPU
		{s(2), ms(15100), 100, 10 * time.Second},  // 1 %: idle since s(1)
		{s(3), ms(15200), 900, 20 * time.Second},  // 800 bytes: under the floor
		{s(4), ms(15200), 1900, 0},                // 1000 bytes: busy
		{s(5), ms(15200), 1900, 10 * time.Second}, //
		{s(6), ms(15500), 1900, 0},                // 3 %: busy
		{s(7), ms(15500), 1900, 10 * time.Second},
	} {
		if got := m.sample(tc.at, tc.cpu, tc.io); got != tc.want {
			t.Errorf("sample %d: idle %v, want %v", i, got, tc.want)
		}
	}
}

func TestParseIO(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"rchar: 1448128768\nwchar: 8930220405\nsyscr: 17315610\nsyscw: 139204737\nread_bytes: 1263632384\n", 1448128768 + 8930220405, true},
		{"rchar: 5\n", 0, false},
		{"rchar: x\nwchar: 1\n", 0, false},
		{"", 0, false},
	} {
		got, err := parseIO([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseIO(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
